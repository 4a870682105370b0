import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

/// `hubhost plugin test`: the old name of `hubhost plugins test`, hidden, kept so that scripts
/// written for it still work.
struct PluginCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugin",
        abstract: "The old name of `hubhost plugins` (for `plugin test`).",
        shouldDisplay: false,
        subcommands: [Test.self])

    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Run the conformance suite on a plugin (plugin.yaml or .so), each test in its own process.",
            discussion: """
                Every plugin the library exports is tested by its kind: the lifecycle (create/destroy, \
                repeated, with missing and wrong-typed config), the kind's calls with hard inputs, and the \
                thread rules the headers promise, from several threads at once. A crash, abort or hang fails \
                only its own test. Each plugin call has a time budget. The valid config comes from the \
                plugin.yaml's test_config: (or the schema's defaults).
                Exits 1 when any test fails.
                """)

        @Argument(help: ArgumentHelp("A plugin.yaml or a plugin library (.so).", valueName: "path"))
        var path: String

        @Flag(help: "List the tests and exit.")
        var list = false

        @Option(name: .long, parsing: .singleValue, help: ArgumentHelp("Run only tests whose name contains this (repeatable).", valueName: "name"))
        var filter: [String] = []

        @Flag(name: .customLong("in-process"), help: "Run every test in this process (for debugging: a crash ends the run).")
        var inProcess = false

        @Option(
            name: .customLong("call-budget"), parsing: .unconditional, help: ArgumentHelp("Time budget of one plugin call, in ms.", valueName: "ms"))
        var callBudget: Int = 2000

        @Option(
            name: .customLong("test-timeout"), parsing: .unconditional,
            help: ArgumentHelp("Deadline of one test's process, in ms; past it the process is killed.", valueName: "ms"))
        var testTimeout: Int = 60_000

        @Option(
            name: .customLong("memory-limit"), parsing: .unconditional,
            help: ArgumentHelp("Address-space limit of each test process, in MiB.", valueName: "mib"))
        var memoryLimit: Int = 2048

        @Flag(help: "Run each test under valgrind's memcheck and fail on definite leaks in the plugin library.")
        var leaks = false

        @Option(help: ArgumentHelp("Also write the results as JUnit XML to this file.", valueName: "file"))
        var junit: String?

        @OptionGroup var output: JSONFlag

        // Internal: how the validator runs one test in a child process.
        @Option(name: .customLong("run-one"), help: .hidden)
        var runOne: String?

        @Flag(help: .hidden)
        var probe = false

        @Option(help: .hidden)
        var library: String?

        func validate() throws {
            guard callBudget > 0, testTimeout > 0, memoryLimit > 0 else {
                throw ValidationError("--call-budget, --test-timeout and --memory-limit must be positive")
            }
        }

        var options: ValidationOptions {
            var options = ValidationOptions()
            options.callBudgetMs = callBudget
            options.testTimeoutMs = testTimeout
            options.inProcess = inProcess
            options.filters = filter
            options.leaks = leaks
            options.memoryLimitMB = memoryLimit
            return options
        }

        var target: ValidationTarget {
            var target = ValidationTarget(path: path)
            if let library {
                // The leak check's private, stripped copy: mapped itself so valgrind names its symbols.
                target.libraryPath = library
                target.libraryProblem = nil
                target.mapsLibraryFile = true
            }
            return target
        }

        struct Report: Encodable {
            var path: String
            var passed: Int
            var failed: Int
            var results: [ConformanceResult]
        }

        func run() throws {
            if probe { return try runProbe() }
            if let runOne { return try runChild(runOne) }
            let runner = ValidationRunner(
                target: target, options: options,
                childCommand: [LibraryLocator.runningExecutablePath(), "plugins", "test", path])
            let tests = runner.tests()
            if list {
                if output.json {
                    Output.json(tests.map { ["name": $0.name, "summary": $0.summary] })
                } else {
                    Output.table(["TEST", "CHECKS"], tests.map { [$0.name, $0.summary] })
                }
                return
            }
            if tests.isEmpty {
                Output.error("no tests match\(filter.isEmpty ? "" : " --filter \(filter.joined(separator: ", "))")")
                throw ExitCode.failed
            }
            var index = 0
            let results = runner.run(tests) { result in
                index += 1
                if !output.json {
                    Output.error("[\(index)/\(tests.count)] \(result.outcome == .passed ? "pass" : "FAIL") \(result.name)")
                }
            }
            let failed = results.filter { $0.outcome == .failed }.count
            if let junit {
                try JUnitReport.xml(suite: target.path, results: results).write(toFile: junit, atomically: true, encoding: .utf8)
            }
            if output.json {
                Output.json(Report(path: target.path, passed: results.count - failed, failed: failed, results: results))
            } else {
                Output.table(
                    ["RESULT", "TEST", "MS", "DETAIL"],
                    results.map {
                        [$0.outcome == .passed ? "pass" : "FAIL", $0.name, String(format: "%.0f", $0.durationMs), $0.message]
                    })
                print("\(results.count - failed) passed, \(failed) failed")
            }
            if failed > 0 { throw ExitCode.failed }
        }

        /// Child: print what the library exports.
        func runProbe() throws {
            guard let path = target.libraryPath else { throw ExitCode.failed }
            let exports = try PluginBinary.open(path: path).exports.map { ["id": $0.id, "kind": $0.kind.rawValue] }
            let data = try JSONEncoder().encode(exports)
            print(ValidationRunner.resultMarker + String(decoding: data, as: UTF8.self))
        }

        /// Child: run one test here and print its result on one marked line.
        func runChild(_ name: String) throws {
            var limit = rlimit(rlim_cur: rlim_t(memoryLimit) << 20, rlim_max: rlim_t(memoryLimit) << 20)
            setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
            let target = self.target
            let exports =
                (try? target.libraryPath.map { try PluginBinary.open(path: $0) })??.exports.map { (id: $0.id, kind: $0.kind) }
                ?? target.manifest?.exports.map { (id: $0.id, kind: $0.kind) } ?? []
            guard let test = ConformanceSuite.tests(for: target, exports: exports).first(where: { $0.name == name }) else {
                Output.error("no test named \(name)")
                throw ExitCode.unusableInput
            }
            let result = ValidationRunner.runInProcess(test, target: target, options: options) { overrun in
                // The call cannot be stopped: report and end this process.
                Self.emit(ConformanceResult(name: name, outcome: .failed, message: overrun, durationMs: Double(callBudget), timedOut: true))
                _exit(1)
            }
            Self.emit(result)
        }

        static func emit(_ result: ConformanceResult) {
            let data = (try? JSONEncoder().encode(result)) ?? Data()
            let line = ValidationRunner.resultMarker + String(decoding: data, as: UTF8.self) + "\n"
            FileHandle.standardOutput.write(Data(line.utf8))
        }
    }
}
