import Foundation
import HubHostKit
import Synchronization

/// Settings of one `hubhost plugins test` run.
public struct ValidationOptions: Sendable {
    /// Budget of one plugin call; an overrun fails the test.
    public var callBudgetMs: Int = 2000
    /// Deadline of one whole test in its child process; past it the child is killed (SIGKILL).
    public var testTimeoutMs: Int = 60_000
    /// Run every test in this process (for debugging) instead of one child process per test.
    public var inProcess = false
    /// Only tests whose name contains one of these.
    public var filters: [String] = []
    /// Run each child under valgrind's memcheck and fail on definite leaks in the plugin library.
    public var leaks = false
    /// Address-space limit of each child, so a plugin that allocates without bound fails its test
    /// instead of exhausting the machine.
    public var memoryLimitMB: Int = 2048

    public init() {}
}

/// Runs the conformance suite: by default each test in its own child process (a `hubhost plugin
/// test --run-one` of the same executable), so a segfault, abort or hang fails that test and the
/// run goes on; `inProcess` runs them here, for debugging.
/// Sendable: every field is a `let` of a Sendable type.
public final class ValidationRunner: Sendable {
    public let target: ValidationTarget
    public let options: ValidationOptions
    /// The command that runs one test in a child: the hubhost executable and `plugins test PATH`.
    public let childCommand: [String]

    public init(target: ValidationTarget, options: ValidationOptions, childCommand: [String]) {
        self.target = target
        self.options = options
        self.childCommand = childCommand
    }

    /// The plugins to test: probed in a child (or here when in-process), the manifest's when the
    /// binary does not load.
    public func exports() -> [(id: String, kind: PluginKind)] {
        let fromManifest = target.manifest?.exports.map { (id: $0.id, kind: $0.kind) } ?? []
        guard let path = target.libraryPath else { return fromManifest }
        if options.inProcess {
            return (try? PluginBinary.open(path: path))?.exports.map { (id: $0.id, kind: $0.kind) } ?? fromManifest
        }
        guard let result = try? ChildProcess.run(childCommand + ["--probe"], timeoutMs: options.testTimeoutMs, environment: Self.childEnvironment),
            case .exited(0) = result.termination,
            let line = result.stdout.split(separator: "\n").last(where: { $0.hasPrefix(Self.resultMarker) }),
            let probed = try? JSONDecoder().decode([ProbedExport].self, from: Data(line.dropFirst(Self.resultMarker.count).utf8))
        else { return fromManifest }
        return probed.map { (id: $0.id, kind: $0.kind) }
    }

    struct ProbedExport: Codable {
        var id: String
        var kind: PluginKind
    }

    /// The tests this run will execute, after --filter.
    public func tests() -> [ConformanceTest] {
        ConformanceSuite.tests(for: target, exports: exports()).filter { test in
            options.filters.isEmpty || options.filters.contains { test.name.contains($0) }
        }
    }

    /// Runs every selected test, reporting each result as it comes.
    public func run(_ tests: [ConformanceTest], progress: (ConformanceResult) -> Void = { _ in }) -> [ConformanceResult] {
        var results: [ConformanceResult] = []
        for test in tests {
            let result = options.inProcess ? Self.runInProcess(test, target: target, options: options) : runInChild(test)
            progress(result)
            results.append(result)
        }
        return results
    }

    // MARK: In this process

    /// Runs one test here. A hang past the test deadline is reported and the test's thread abandoned.
    public static func runInProcess(
        _ test: ConformanceTest, target: ValidationTarget, options: ValidationOptions,
        onOverrun: @escaping @Sendable (String) -> Void = { _ in }
    ) -> ConformanceResult {
        let budget = CallBudget(budgetMs: options.callBudgetMs, onOverrun: onOverrun)
        defer { budget.stop() }
        let start = Clock.monotonicNs()
        /// The test thread's failure, written by it before it signals `finished` (on a timeout, never read).
        final class Box: Sendable {
            let failure = Mutex<String?>(nil)
        }
        let box = Box()
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                let context = try ConformanceContext(target: target, budget: budget)
                defer { context.cleanUp() }
                try test.body(context)
            } catch {
                box.failure.withLock { $0 = "\(error)" }
            }
            finished.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
        let elapsed = { Double(Clock.monotonicNs() - start) / 1e6 }
        guard finished.wait(timeout: .now() + .milliseconds(options.testTimeoutMs)) == .success else {
            return ConformanceResult(
                name: test.name, outcome: .failed, message: "timed out after \(options.testTimeoutMs) ms (a call hung)",
                durationMs: elapsed(), timedOut: true)
        }
        if let failure = box.failure.withLock({ $0 }) {
            return ConformanceResult(name: test.name, outcome: .failed, message: failure, durationMs: elapsed())
        }
        let overruns = budget.takeOverruns()
        if !overruns.isEmpty {
            return ConformanceResult(name: test.name, outcome: .failed, message: overruns.joined(separator: "; "), durationMs: elapsed())
        }
        return ConformanceResult(name: test.name, outcome: .passed, message: "", durationMs: elapsed())
    }

    // MARK: In a child process

    /// Marks the child's result line on stdout, apart from anything a plugin prints.
    public static let resultMarker = "@@hubhost-result "

    /// The children's environment: Swift's crash backtracer off (the crash is the plugin's, and the
    /// report is the test's result, not pages of backtrace), everything else inherited.
    static var childEnvironment: [String: String] {
        ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { _, new in new }
    }

    func runInChild(_ test: ConformanceTest) -> ConformanceResult {
        var command =
            childCommand + [
                "--run-one", test.name, "--call-budget", String(options.callBudgetMs),
                "--memory-limit", String(options.memoryLimitMB)
            ]
        var leakCheck: LeakCheck?
        if options.leaks {
            if target.libraryPath?.hasSuffix(".wasm") == true {
                // memcheck sees the host's heap; a guest's allocations live in its linear memory, dropped with its instance.
                return ConformanceResult(
                    name: test.name, outcome: .failed,
                    message: "--leaks checks a native library; a .wasm plugin's memory is its own linear memory, freed with its instance",
                    durationMs: 0)
            }
            do {
                let check = try LeakCheck(libraryPath: target.libraryPath)
                command = check.wrap(command)
                leakCheck = check
            } catch {
                return ConformanceResult(name: test.name, outcome: .failed, message: "--leaks: \(error)", durationMs: 0)
            }
        }
        defer { leakCheck?.cleanUp() }
        let start = Clock.monotonicNs()
        let elapsed = { Double(Clock.monotonicNs() - start) / 1e6 }
        let timeout = options.leaks ? options.testTimeoutMs * 20 : options.testTimeoutMs  // memcheck runs ~20x slower
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run(command, timeoutMs: timeout, environment: Self.childEnvironment)
        } catch {
            return ConformanceResult(name: test.name, outcome: .failed, message: "could not start the test process: \(error)", durationMs: elapsed())
        }
        var reported: ConformanceResult?
        if let line = result.stdout.split(separator: "\n").last(where: { $0.hasPrefix(Self.resultMarker) }) {
            reported = try? JSONDecoder().decode(ConformanceResult.self, from: Data(line.dropFirst(Self.resultMarker.count).utf8))
        }
        switch result.termination {
        case .timedOut:
            return ConformanceResult(
                name: test.name, outcome: .failed,
                message: "timed out after \(timeout) ms and was killed (a call hung)", durationMs: elapsed(), timedOut: true)
        case .signaled(let signal):
            return ConformanceResult(
                name: test.name, outcome: .failed,
                message: "crashed: \(SignalName.of(signal)) (signal \(signal))\(ChildProcess.lastLines(result.stderr))",
                durationMs: elapsed(), signal: signal)
        case .exited(let status):
            guard var reported else {
                return ConformanceResult(
                    name: test.name, outcome: .failed,
                    message:
                        "the test process exited with status \(status) without a result (did the plugin call exit()?)\(ChildProcess.lastLines(result.stderr))",
                    durationMs: elapsed())
            }
            reported.durationMs = elapsed()
            if let leakCheck, reported.outcome == .passed, let leaks = leakCheck.definiteLeaks() {
                reported.outcome = .failed
                reported.message = leaks
            }
            return reported
        }
    }
}
