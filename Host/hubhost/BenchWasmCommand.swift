import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

extension BenchCommand {
    struct Wasm: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wasm",
            abstract: "Cost of a call into a WebAssembly plugin beside the same C source as a .so, in process and isolated.",
            discussion: """
                Builds Plugins/Noop and Plugins/StandardOperators with scripts/build-wasm-plugin (run it from the \
                repository, or give --repository), unless the modules are given.
                """)

        @Option(parsing: .unconditional, help: "Augmentation calls per round (the regex runs a thousandth of them).")
        var iterations: Int = 100_000

        @Option(parsing: .unconditional, help: "Rounds; the best round of each loop is reported.")
        var rounds: Int = 3

        @Option(help: ArgumentHelp("The hubhost repository (for the sources and the build script).", valueName: "path"))
        var repository: String = FileManager.default.currentDirectoryPath

        @Option(help: ArgumentHelp("Plugins/Noop built as .wasm (default: built now).", valueName: "path"))
        var noopModule: String?

        @Option(help: ArgumentHelp("Plugins/StandardOperators built as .wasm (default: built now).", valueName: "path"))
        var operatorsModule: String?

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard iterations > 0, rounds > 0 else { throw ValidationError("--iterations and --rounds must be positive") }
        }

        struct BuildFailure: Error, CustomStringConvertible {
            var name: String
            var description: String { "scripts/build-wasm-plugin failed for \(name) (it needs clang, lld and wasi-libc: scripts/bootstrap)" }
        }

        /// Builds `sources` (relative to `repository`) into a temporary .wasm with the documented script.
        static func build(_ name: String, _ sources: [String], repository: String) throws -> String {
            let output = NSTemporaryDirectory() + "hubhost-bench-\(getpid())-\(name).wasm"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: repository + "/scripts/build-wasm-plugin")
            process.arguments = [output] + sources.map { repository + "/" + $0 }
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw BuildFailure(name: name) }
            return output
        }

        /// The benchmark over the modules given, or the two bundled plugins built now from `repository`.
        static func benchmark(iterations: Int, repository: String, noopModule: String? = nil, operatorsModule: String? = nil) throws
            -> WasmBenchmark
        {
            let noop = try noopModule ?? build("noop", ["Plugins/Noop/noop.c"], repository: repository)
            let operators =
                try operatorsModule
                ?? build(
                    "standard-operators", ["Plugins/StandardOperators/standard_operators.c", "Plugins/StandardOperators/bounded_regex.c"],
                    repository: repository)
            return WasmBenchmark(
                iterations: iterations, noopLibrary: try BenchCommand.noopLibrary(nil), noopModule: noop,
                operatorsLibrary: try BenchCommand.bundledLibrary("libhubhost-standard-operators.so"), operatorsModule: operators,
                wasmtimeYardstick: repository + "/scripts/wasm-regex-yardstick.py")
        }

        func run() throws {
            let result = try Self.benchmark(
                iterations: iterations, repository: repository, noopModule: noopModule, operatorsModule: operatorsModule
            ).run(rounds: rounds) { step in
                if !output.json { Output.error("bench wasm: \(step)") }
            }
            if output.json {
                Output.json(result)
                return
            }
            Output.table(
                ["no-op augmentation call", "µs/call"],
                [
                    ["in-process .so (baseline)", String(format: "%.3f", result.augmentInProcessNs / 1000)],
                    ["isolation: process (worker)", String(format: "%.3f", result.augmentIsolatedNs / 1000)],
                    [".wasm (WasmKit, fuel metered)", String(format: "%.3f", result.augmentWasmNs / 1000)]
                ])
            print("")
            Output.table(
                ["MATCHES_REGEX on \(result.regexInputBytes) bytes", "µs/call"],
                [
                    ["native .so", String(format: "%.1f", result.regexNativeNs / 1000)],
                    [".wasm (WasmKit)", String(format: "%.1f", result.regexWasmNs / 1000)],
                    [
                        ".wasm in wasmtime (yardstick)",
                        result.regexWasmtimeNs.map { String(format: "%.1f", $0 / 1000) } ?? "- (pip install wasmtime)"
                    ]
                ])
            print(String(format: "wasm / native: %.1fx", result.regexRatio))
        }
    }
}
