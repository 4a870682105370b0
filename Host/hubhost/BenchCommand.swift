import ArgumentParser
import Foundation
import HubHostKit

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure hubhost, each figure beside a baseline measured in the same run.",
        discussion: "Build with `swift build -c release` for figures worth reporting.",
        subcommands: [ABI.self, Isolation.self])

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
}
