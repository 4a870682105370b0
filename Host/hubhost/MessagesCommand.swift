import ArgumentParser
import Foundation
import HubHostKit
import Synchronization

struct MessagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages",
        abstract: "Ready in-app messages, one at a time: next, watch, impression, close, later; pause and resume them all.",
        subcommands: [Next.self, Watch.self, Impression.self, Close.self, Later.self, Pause.self, Resume.self])

    struct Next: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "next",
            abstract: "The next message that may show now (it stays current until shown or closed).",
            discussion:
                "Exits 1 when no message may show; when one is ready but held by a pause or a frequency cap, says which (--json: {\"held\": REASON})."
        )

        @Option(name: .customLong("context"), help: ArgumentHelp("A context allowed now (repeatable).", valueName: "name"))
        var contexts: [String] = []

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            let answer = engine.nextMessage(allowedContexts: contexts)
            guard let message = answer.message else {
                if let held = answer.held {
                    if output.json { Output.json(["held": held.rawValue]) } else { print("a message is ready but held: \(held.rawValue)") }
                } else if output.json {
                    print("null")
                } else {
                    print("no message is ready")
                }
                throw ExitCode.failed
            }
            if output.json {
                Output.json(message)
            } else {
                print("\(message.id)  \(message.title)")
                if let header = message.header { print("  \(header)") }
                if let body = message.body { print("  \(body)") }
            }
        }
    }

    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Print each message the moment it may show, and why one sent is withdrawn.",
            discussion: """
                The message stream of GET /v1/messages/stream, read in this process: first the answer of \
                `messages next` ("message ID TITLE", "held REASON" or "none"), then a line whenever it \
                changes, and "withdrawn ID REASON" when a message printed stops being the one (shown, \
                closed, later, opted_out, ended, synced_away, user_changed, disabled, paused or a \
                frequency_caps reason). Changes by other processes on the data directory (hubhost serve, \
                campaigns sync) show within a second. With --json, one JSON object per line \
                ({"name": "message"|"withdrawn", ...}). Stops after --count events or --timeout seconds; \
                with --count, running out of time first is an error (exit status 1).
                """)

        @Option(name: .customLong("context"), help: ArgumentHelp("A context allowed now (repeatable).", valueName: "name"))
        var contexts: [String] = []

        @Option(parsing: .unconditional, help: "Stop after this many events.")
        var count: Int?

        @Option(parsing: .unconditional, help: "Stop after this many seconds.")
        var timeout: Double?

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        /// The longest --timeout: 366 days.
        static let maxTimeout: Double = 366 * 86_400

        func validate() throws {
            if let count, count < 1 { throw ValidationError("--count must be at least 1") }
            if let timeout, !(timeout > 0 && timeout <= Self.maxTimeout) {
                throw ValidationError("--timeout must be more than 0 and at most \(Int(Self.maxTimeout)) seconds")
            }
        }

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            let stream = engine.messageStream(allowedContexts: contexts)
            let (json, limit) = (output.json, count)
            let printed = Mutex(0)
            let done = DispatchSemaphore(value: 0)
            let task = Task {
                for await event in stream {
                    FileHandle.standardOutput.write(Data((Self.line(event, json: json) + "\n").utf8))  // unbuffered: as it comes
                    let total = printed.withLock { count in
                        count += 1
                        return count
                    }
                    if let limit, total >= limit { break }
                }
                done.signal()
            }
            let finished = done.wait(timeout: timeout.map { .now() + $0 } ?? .distantFuture) == .success
            task.cancel()
            if !finished, let count {
                Output.error("messages watch: \(printed.withLock { $0 }) of \(count) events within \(timeout ?? 0) s")
                throw ExitCode.failed
            }
        }

        static func line(_ event: CampaignEngine.StreamEvent, json: Bool) -> String {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                return (try? encoder.encode(event)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
            }
            switch event.name {
            case .withdrawn: return "withdrawn  \(event.id ?? "")  \(event.reason?.rawValue ?? "")"
            case .message:
                if let message = event.message { return "message  \(message.id)  \(message.title)" }
                if let held = event.held { return "held  \(held.rawValue)" }
                return "none"
            }
        }
    }

    struct Impression: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "impression", abstract: "Report that a message was shown: it counts one impression.")

        @Argument(help: "The campaign id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption

        func run() throws { try CampaignsCommand.impression(id, manifestOption) }
    }

    struct Close: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "close", abstract: "Close the current message without counting an impression.")

        @Flag(name: .customLong("clear-queued-campaigns"), help: "Also remove every queued message.")
        var clearQueuedCampaigns = false

        @OptionGroup var manifestOption: ManifestOption

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            engine.close(clearQueue: clearQueuedCampaigns)
        }
    }

    struct Later: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "later",
            abstract: "Put a message back in the queue instead of showing it now.",
            discussion:
                "It is no longer the current message; when it next comes up, its end time, opt-out, impressions, the frequency caps and its triggers are checked again. Exits 1 for an unknown campaign or one neither current nor queued."
        )

        @Argument(help: "The campaign id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            do { try engine.later(id) } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
        }
    }

    struct Pause: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pause",
            abstract: "Hold every message (e.g. while a checkout runs), until --until / --for or `messages resume`.",
            discussion:
                "Every process on the data directory holds its messages: `messages next` and GET /v1/messages/next answer none, reason paused. Without --until or --for the pause lasts until `hubhost messages resume`; --status prints the pause without changing it."
        )

        @Option(help: ArgumentHelp("When the pause ends by itself, in ms since 1970.", valueName: "ms"))
        var until: Int64?

        @Option(name: .customLong("for"), help: ArgumentHelp("How long the pause lasts, e.g. 15m or 1h (at most 366 days).", valueName: "duration"))
        var duration: String?

        @Flag(help: "Print whether messages are paused, and until when, without pausing.")
        var status = false

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func validate() throws {
            if until != nil && duration != nil { throw ValidationError("give --until or --for, not both") }
            if status && (until != nil || duration != nil) { throw ValidationError("--status does not pause: drop --until and --for") }
            if let duration {
                switch EngageDuration.parse(duration) {
                case .success(let seconds) where seconds > 0 && seconds <= FrequencyCaps.maxSeconds: break
                case .success: throw ValidationError("--for must be more than 0 and at most 366 days")
                case .failure(let error): throw ValidationError("--for: \(error)")
                }
            }
        }

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            if !status {
                var end = until
                if let duration, case .success(let seconds) = EngageDuration.parse(duration) { end = Clock.wallMs() + Int64(seconds * 1000) }
                do { try engine.pause(untilMs: end) } catch {
                    Output.error("\(error)")
                    throw ExitCode.failed
                }
            }
            MessagesCommand.printPause(engine.pauseState, json: output.json)
        }
    }

    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "End a pause: messages show again.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            try engine.resume()
            MessagesCommand.printPause(engine.pauseState, json: output.json)
        }
    }

    static func printPause(_ pause: CampaignEngine.Pause, json: Bool) {
        if json {
            Output.json(pause)
        } else if !pause.paused {
            print("messages are not paused")
        } else if let until = pause.untilMs {
            print("messages are paused until \(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(until) / 1000)))")
        } else {
            print("messages are paused until `hubhost messages resume`")
        }
    }
}
