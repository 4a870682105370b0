import ArgumentParser
import Foundation
import HubHostKit

struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "The local event store: list, count, flush, purge.",
        subcommands: [List.self, Stats.self, Flush.self, Purge.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List stored events, newest first.")

        @Option(help: ArgumentHelp("Only this status: \(EventStatus.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "status"))
        var status: String?

        @Option(parsing: .unconditional, help: "At most this many.")
        var limit: Int = 50

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func validate() throws {
            if limit < 1 { throw ValidationError("--limit must be at least 1 (got \(limit))") }
        }

        func run() throws {
            var filter: EventStatus?
            if let status {
                guard let parsed = EventStatus(rawValue: status.uppercased()) else {
                    throw ValidationError(
                        "unknown status '\(status)'; expected one of: \(EventStatus.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                filter = parsed
            }
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let events = try host.events().store.list(status: filter, limit: limit).map { EventView($0.event, lastError: $0.lastError) }
            if output.json { Output.json(events) } else if events.isEmpty { print("no events") } else { events.forEach { $0.printText() } }
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stats", abstract: "Count stored events by status.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let engine = try host.events()
            let counts = try engine.store.stats()
            let byName = Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) })
            if output.json {
                Output.json(["path": JSONValue.string(engine.store.path), "counts": .object(byName.mapValues { .number(Double($0)) })])
            } else {
                print("store: \(engine.store.path)")
                Output.table(["STATUS", "EVENTS"], EventStatus.allCases.map { [$0.rawValue, String(counts[$0] ?? 0)] })
            }
        }
    }

    struct Flush: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "flush",
            abstract: "Post every event that is due to the collector now.",
            discussion: "Exits 1 when a batch failed.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let report = try host.events().flush()
            if output.json {
                Output.json(report)
            } else if report.noCollector {
                // No sink to post through: either none is configured (a choice) or the chosen one is not loaded (lastError says why).
                if let reason = report.lastError {
                    print("nothing posted: \(reason); events stay NOT_POSTED on disk")
                } else {
                    print("no collector_url in events: nothing posted; events stay NOT_POSTED on disk")
                }
            } else {
                print(
                    "posted \(report.posted) in \(report.batches) batch\(report.batches == 1 ? "" : "es"); \(report.retrying) to retry, \(report.failed) now FAILED_POST\(report.lastError.map { "; last error: \($0)" } ?? "")"
                )
            }
            if report.lastError != nil { throw ExitCode.failed }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "purge", abstract: "Delete SUCCESSFULLY_POSTED events older than expire_local_events_after.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let purged = try host.events().purge()
            if output.json { Output.json(["purged": purged]) } else { print("purged \(purged) posted event\(purged == 1 ? "" : "s")") }
        }
    }
}
