import ArgumentParser
import Foundation
import HubHostKit

struct MessagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages",
        abstract: "Ready in-app messages, one at a time: next, impression, close, later; pause and resume them all.",
        subcommands: [Next.self, Impression.self, Close.self, Later.self, Pause.self, Resume.self])

    struct Next: ParsableCommand {
        static let configuration = CommandConfiguration(
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

    struct Impression: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Report that a message was shown: it counts one impression.")

        @Argument(help: "The campaign id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption

        func run() throws { try CampaignsCommand.impression(id, manifestOption) }
    }

    struct Close: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Close the current message without counting an impression.")

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
        static let configuration = CommandConfiguration(abstract: "End a pause: messages show again.")

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
