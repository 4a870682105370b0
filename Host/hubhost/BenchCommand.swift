import ArgumentParser
import Foundation
import HubHostKit

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure hubhost, each figure beside a baseline measured in the same run.",
        discussion: "Build with `swift build -c release` for figures worth reporting.",
        subcommands: [ABI.self, Isolation.self, Events.self, Campaigns.self])

    struct ABI: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "abi",
            abstract: "Cost of one call through the plugin ABI into a no-op plugin, beside a direct Swift call.")

        @Option(help: "Calls per round.")
        var iterations: Int = 10_000_000

        @Option(help: "Rounds; the best round of each loop is reported.")
        var rounds: Int = 5

        @Option(help: ArgumentHelp("The no-op plugin library (default: libhubhost-noop.so, found as plugins are).", valueName: "path"))
        var library: String?

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard iterations > 0, rounds > 0 else { throw ValidationError("--iterations and --rounds must be positive") }
        }

        func run() throws {
            let path = try BenchCommand.noopLibrary(library)
            let result = try ABIBenchmark(iterations: iterations, libraryPath: path).run(rounds: rounds) { step in
                if !output.json { Output.error("bench abi: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                print("library: \(result.library)")
                Output.table(["call", "ns/call", "calls/s"], [
                    ["through the ABI (noop trigger_operator.compare)", String(format: "%.2f", result.abiNsPerCall),
                     String(format: "%.0f", result.abiCallsPerSecond)],
                    ["direct Swift function (baseline)", String(format: "%.2f", result.swiftNsPerCall),
                     String(format: "%.0f", 1e9 / result.swiftNsPerCall)],
                ])
                print(String(format: "ratio: %.2fx the baseline", result.ratio))
            }
        }
    }

    /// The no-op plugin library the benchmarks call: `--library`, or libhubhost-noop.so found as plugins are.
    static func noopLibrary(_ given: String?) throws -> String {
        if let given { return given }
        switch LibraryLocator().locate(library: "libhubhost-noop.so", manifestFolder: nil) {
        case .success(let found): return found
        case .failure(let error):
            Output.error("\(error)")
            throw ExitCode(1)
        }
    }

    struct Isolation: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "isolation",
            abstract: "Round trip of one augmentation call in-process and through process isolation, same run.")

        @Option(help: "Calls per round.")
        var iterations: Int = 100_000

        @Option(help: "Rounds; the best round of each is reported.")
        var rounds: Int = 3

        @Option(help: ArgumentHelp("The no-op plugin library (default: libhubhost-noop.so, found as plugins are).", valueName: "path"))
        var library: String?

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard iterations > 0, rounds > 0 else { throw ValidationError("--iterations and --rounds must be positive") }
        }

        func run() throws {
            let result = try IsolationBenchmark(iterations: iterations, libraryPath: try BenchCommand.noopLibrary(library)).run(rounds: rounds) { step in
                if !output.json { Output.error("bench isolation: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                print("library: \(result.library)")
                Output.table(["augmentation call", "µs/call", "calls/s"], [
                    ["in-process (baseline)", String(format: "%.3f", result.inProcessNsPerCall / 1000), String(format: "%.0f", result.inProcessCallsPerSecond)],
                    ["isolation: process (worker, socketpair)", String(format: "%.3f", result.isolatedNsPerCall / 1000),
                     String(format: "%.0f", result.isolatedCallsPerSecond)],
                ])
                print(String(format: "ratio: %.1fx the in-process call", result.ratio))
            }
        }
    }

    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events",
            abstract: "Events per second and track latency through location and weather augmentation into the store, beside a plain SQLite insert.",
            discussion: "Run from the repository root (it loads Plugins/*/plugin.yaml); the weather endpoint is a local server on 127.0.0.1.")

        @Option(help: "Events through the pipeline (and rows in the baseline).")
        var count: Int = 100_000

        @Option(name: .customLong("batch-size"), help: "Events per commit.")
        var batchSize: Int = 1000

        @Option(help: ArgumentHelp("The folder of the bundled plugins' plugin.yaml files.", valueName: "path"))
        var plugins: String = "Plugins"

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard count > 0, batchSize > 0 else { throw ValidationError("--count and --batch-size must be positive") }
        }

        func run() throws {
            let folder = HostManifest.absolute(plugins, from: FileManager.default.currentDirectoryPath)
            let result = try EventBenchmark(count: count, batchSize: batchSize, pluginsFolder: folder).run { step in
                if !output.json { Output.error("bench events: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                Output.table(["", "events/s", "p50 ms", "p99 ms"], [
                    ["track -> location + weather (warm) -> store, batches of \(result.batchSize)", String(format: "%.0f", result.eventsPerSecond),
                     String(format: "%.2f", result.p50Ms), String(format: "%.2f", result.p99Ms)],
                    ["plain SQLite insert, same rows and settings (baseline)", String(format: "%.0f", result.baselineRowsPerSecond), "-", "-"],
                    ["track, one durable commit per event (\(result.singleTrackCount) events)", "-",
                     String(format: "%.2f", result.singleTrackP50Ms), String(format: "%.2f", result.singleTrackP99Ms)],
                ])
                print(String(format: "pipeline / baseline: %.2f", result.ratio))
            }
        }
    }

    struct Campaigns: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "campaigns",
            abstract: "Event evaluations per second through the campaign engine, beside a naive every-campaign check.")

        @Option(help: "Campaigns loaded (ten per event name).")
        var campaigns: Int = 10_000

        @Option(help: "Events evaluated.")
        var events: Int = 100_000

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard campaigns > 0, events > 0 else { throw ValidationError("--campaigns and --events must be positive") }
        }

        func run() throws {
            let library: String
            switch LibraryLocator().locate(library: "libhubhost-standard-operators.so", manifestFolder: nil) {
            case .success(let found): library = found
            case .failure(let error):
                Output.error("\(error)")
                throw ExitCode(1)
            }
            let result = try CampaignBenchmark(campaigns: campaigns, events: events, operatorsLibrary: library).run { step in
                if !output.json { Output.error("bench campaigns: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                Output.table(["evaluation", "events/s", "trigger matches"], [
                    ["campaign engine (indexed by event type and name)", String(format: "%.0f", result.engineEventsPerSecond), String(result.engineMatches)],
                    ["naive: every campaign's triggers per event", String(format: "%.0f", result.naiveEventsPerSecond), String(result.naiveMatches)],
                ])
                print(String(format: "ratio: %.0fx", result.ratio))
            }
        }
    }
}
