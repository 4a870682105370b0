import Foundation
import HubHostTools
import XCTest

@testable import HubHostKit

/// A test case with a temporary folder of its own for each test, made before it runs (`folder`).
class FolderTestCase: XCTestCase {
    var folder = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = try TestSupport.temporaryFolder(self)
    }
}

/// Paths and helpers shared by the tests: the repository, the build folder with the bundled
/// plugins and the hubhost executable, temporary folders, the C compiler for fixture plugins.
enum TestSupport {
    /// The repository root (this file is Tests/HubHostKitTests/TestSupport.swift).
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The folder `swift build` wrote the test bundle, the hubhost executable and the plugin libraries to.
    static let buildFolder: String = LibraryLocator.runningExecutableFolder()!

    static var hubhostExecutable: String { buildFolder + "/hubhost" }

    static func plugin(_ folder: String) -> String { "\(repository)/Plugins/\(folder)/plugin.yaml" }

    /// A new empty folder, removed when the test ends.
    static func temporaryFolder(_ test: XCTestCase) throws -> String {
        let path = NSTemporaryDirectory() + "hubhost-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        test.addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    static func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Runs a program to completion (bounded by `timeout` seconds) and returns its exit status and output.
    @discardableResult
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        currentDirectory: String? = nil, timeout: TimeInterval = 120, input: String? = nil
    ) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new } }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = input.map { _ in Pipe() }
        if let stdin { process.standardInput = stdin }
        try process.run()
        if let stdin, let input {
            // Written, then closed; the child reads it while the pipes below are drained. A child
            // that wants more reads end of file. Kept small by the tests (under the pipe's buffer).
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        // Read both pipes while the child runs so a full pipe cannot block it.
        let collected = ConcurrentResults<Data>()  // 0: stdout, 1: stderr
        let group = DispatchGroup()
        for (index, pipe) in [out, err].enumerated() {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.lock.withLock { collected.values[index] = .success(data) }
                group.leave()
            }
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw NSError(
                domain: "TestSupport", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(executable) \(arguments) timed out after \(timeout)s"])
        }
        process.waitUntilExit()
        return CommandResult(
            status: process.terminationStatus, stdout: String(decoding: try collected.value(0), as: UTF8.self),
            stderr: String(decoding: try collected.value(1), as: UTF8.self), reason: process.terminationReason)
    }

    /// Runs `body(0)` ... `body(count - 1)` on threads of their own, all at once (a crowd of clients
    /// or processes), and returns the results in index order; throws the first error after every
    /// body returned. Each body bounds its own time (e.g. `run`'s timeout).
    static func concurrently<T>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) throws -> [T] {
        let results = ConcurrentResults<T>()
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                let result = Result { try body(index) }
                results.lock.withLock { results.values[index] = result }
                group.leave()
            }.start()
        }
        group.wait()
        return try (0..<count).map { index in try results.lock.withLock { results.values[index]! }.get() }
    }

    /// Runs `body` on a thread of its own and returns its result; fails the test (naming `what`) and
    /// returns nil when it has not returned within `seconds` (a read of /dev/zero or a FIFO, a
    /// parser that hangs, would never return).
    static func within<T>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: T?
        Thread {
            result = body()
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + seconds) == .success else {
            XCTFail("\(what) did not return within \(seconds) s")
            return nil
        }
        return result
    }

    /// Runs `work` on a thread of its own and returns its result (or rethrows its error): blocking
    /// calls (a child process, a synchronous HTTP client, a sleep) made by an async test while an
    /// in-process server must answer, kept off Swift concurrency's cooperative threads (one per
    /// core), which that server runs on. The thread blocks no signal: a child it starts inherits
    /// its mask, and one started with Dispatch's (most signals blocked) ignores `terminate()`.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                var none = sigset_t()
                sigemptyset(&none)
                pthread_sigmask(SIG_SETMASK, &none, nil)
                continuation.resume(with: Result { try work() })
            }.start()
        }
    }

    /// Runs the built hubhost executable with `arguments` (then `--manifest MANIFEST` when `manifest`
    /// is given) in `folder` (the repository when not given), as `run` does.
    @discardableResult
    static func hubhost(
        _ arguments: [String], manifest: String? = nil, in folder: String? = nil, environment: [String: String]? = nil,
        timeout: TimeInterval = 120, input: String? = nil
    ) throws -> CommandResult {
        try run(
            hubhostExecutable, arguments + (manifest.map { ["--manifest", $0] } ?? []), environment: environment,
            currentDirectory: folder ?? repository, timeout: timeout, input: input)
    }

    /// A host in `folder` whose campaigns come from `folder/campaigns.json`, with the standard trigger
    /// operators (and the extra ones when `extraOperators`) and `sections`, more top-level YAML lines
    /// of plugins.yaml. The caller shuts it down.
    static func campaignsHost(in folder: String, sections: String = "", extraOperators: Bool = false) throws -> HubHost {
        let extra = extraOperators ? "\n  - id: extra\n    use: \(plugin("ExtraOperators"))" : ""
        try write(
            "data_dir: data\ncampaigns: {file: campaigns.json}\n\(sections)\nplugins:\n  - id: operators\n    use: \(plugin("StandardOperators"))\(extra)\n",
            to: folder + "/plugins.yaml")
        return try HubHost(manifestPath: folder + "/plugins.yaml")
    }

    /// Starts `process` with its standard output on a pipe (its standard error discarded) and returns
    /// the first line it prints, read for `seconds` at most: what it printed by then when no line
    /// came, or nothing when it ended first.
    static func startReadingFirstLine(_ process: Process, seconds: Double = 30) throws -> String {
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var banner = ""
        let start = Date()
        while !banner.contains("\n"), Date().timeIntervalSince(start) < seconds {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        return banner
    }

    /// `text` parsed as JSON; a top-level string, number or null too. Throws when it is not JSON.
    static func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    }

    /// `text` parsed as JSON of type `T` (e.g. `[String: Any]`); throws, failing the test with the
    /// text, when it is not JSON or not a `T`.
    static func json<T>(_ text: String, as type: T.Type, file: StaticString = #filePath, line: UInt = #line) throws -> T {
        try XCTUnwrap(try json(text) as? T, "not JSON of type \(T.self): \(text)", file: file, line: line)
    }

    /// Polls `condition` every 50 ms until it holds or `timeout` seconds pass; returns whether it held.
    static func waitUntil(timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if try condition() { return true }
            usleep(50_000)
        } while Date() < deadline
        return try condition()
    }

    /// Compiles the C plugin at `source` into the shared library `output` with the strict flags the
    /// ABI promises to pass (and `-D` each of `defines`); returns how cc ended.
    static func compilePlugin(_ source: String, to output: String, defines: [String] = []) throws -> CommandResult {
        try run(
            "/usr/bin/env",
            ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared", "-fPIC", "-I", "\(repository)/Protocols/include"]
                + defines.map { "-D" + $0 } + ["-o", output, source])
    }

    /// Compiles Tests/Fixtures/<source> into a shared library with the strict flags the ABI promises
    /// to pass, with extra `-D` defines. Returns the library path.
    static func compileFixture(
        _ source: String = "fault_plugin.c", defines: [String] = [], into folder: String,
        name: String
    ) throws -> String {
        let output = "\(folder)/\(name)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let result = try compilePlugin("\(repository)/Tests/Fixtures/\(source)", to: output, defines: defines)
        guard result.status == 0 else {
            throw NSError(domain: "TestSupport", code: 2, userInfo: [NSLocalizedDescriptionKey: "cc failed: \(result.stderr)"])
        }
        return output
    }

    /// Installs the built hubhost with scripts/install into `prefix` (outside the checkout, as a
    /// user who never cloned hubhost has it) and returns `prefix`.
    @discardableResult
    static func install(into prefix: String) throws -> String {
        try run(
            "/bin/bash", [repository + "/scripts/install", "--prefix", prefix, "--no-build", "--from", buildFolder], timeout: 300
        ).expect(0)
        return prefix
    }

    /// Builds the helper program Tests/Fixtures/<source>, linked with `libraries`, as `binary`, and
    /// returns its path; a binary already there is reused (tests share one per folder).
    static func compileProgram(_ source: String, to binary: String, libraries: [String]) throws -> String {
        if FileManager.default.isExecutableFile(atPath: binary) { return binary }
        try FileManager.default.createDirectory(atPath: (binary as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let result = try run(
            "/usr/bin/env",
            ["cc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror", "-o", binary, "\(repository)/Tests/Fixtures/\(source)"]
                + libraries.map { "-l" + $0 })
        guard result.status == 0 else {
            throw NSError(domain: "TestSupport", code: 2, userInfo: [NSLocalizedDescriptionKey: "cc \(source) failed: \(result.stderr)"])
        }
        return binary
    }

    /// Builds Tests/Fixtures/faulty_plugins.c with `fault` (e.g. "SEGFAULT"; nil: well-behaved) into
    /// `folder`/<fault>/ with its plugin.yaml, and returns the plugin.yaml's path.
    static func faultyFixture(_ fault: String?, in folder: String) throws -> String {
        let dir = folder + "/" + (fault ?? "GOOD")
        _ = try compileFixture("faulty_plugins.c", defines: fault.map { ["FAULT_\($0)"] } ?? [], into: dir, name: "libfaulty.so")
        return try writeFaultyManifest(library: "libfaulty.so", in: dir)
    }

    /// The plugin.yaml of faulty_plugins.c built as `library` (a .so or .wasm) in `folder`; returns its path.
    static func writeFaultyManifest(library: String, in folder: String) throws -> String {
        let exports = [("faulty-augmentation", "augmentation"), ("faulty-operator", "trigger_operator")]
        try write(pluginManifest(id: "faulty", name: "Faulty", library: library, exports: exports), to: folder + "/plugin.yaml")
        return folder + "/plugin.yaml"
    }

    /// Builds Tests/Fixtures/editing_augmentation.c (an augmentation that copies the event's name
    /// into "Seen Name") into `folder` with its plugin.yaml, and returns the plugin.yaml's path.
    static func editingFixture(in folder: String) throws -> String {
        _ = try compileFixture("editing_augmentation.c", into: folder, name: "libediting.so")
        let yaml = pluginManifest(id: "editing", name: "Editing", library: "libediting.so", exports: [("editing-augmentation", "augmentation")])
        try write(yaml, to: folder + "/plugin.yaml")
        return folder + "/plugin.yaml"
    }

    /// Builds Tests/Fixtures/slow_kinds_plugins.c (a location and a content provider that sleep
    /// `delay_ms` per call and `create_delay_ms` in create; negative: forever) into `folder` with its
    /// plugin.yaml, and returns the plugin.yaml's path.
    static func slowKindsFixture(in folder: String) throws -> String {
        _ = try compileFixture("slow_kinds_plugins.c", into: folder, name: "libslow.so")
        let yaml = pluginManifest(
            id: "slow", name: "Slow", library: "libslow.so", exports: [("slow-location", "location"), ("slow-content", "content_provider")],
            extra: "config:\n  - {key: delay_ms, type: int, default: 0}\n  - {key: create_delay_ms, type: int, default: 0}")
        try write(yaml, to: folder + "/plugin.yaml")
        return folder + "/plugin.yaml"
    }

    /// Builds Tests/Fixtures/prefetch_kinds_plugins.c (one device_conditions and one
    /// download_request plugin whose `mode` config picks a misbehaviour) into `folder` with its
    /// plugin.yaml, and returns the plugin.yaml's path. `abiMinor` makes the library claim ABI
    /// 1.<abiMinor>; `testMode` becomes the manifest's test_config for `hubhost plugins test`.
    static func prefetchKindsFixture(in folder: String, abiMinor: Int? = nil, testMode: String? = nil) throws -> String {
        _ = try compileFixture(
            "prefetch_kinds_plugins.c", defines: abiMinor.map { ["FIXTURE_ABI_MINOR=\($0)"] } ?? [],
            into: folder, name: "libprefetch-kinds-fixture.so")
        let yaml = pluginManifest(
            id: "prefetch-kinds-fixture", name: "Prefetch kinds fixture", library: "libprefetch-kinds-fixture.so", abi: "1.1",
            exports: [("fixture-conditions", "device_conditions"), ("fixture-request", "download_request")],
            extra: "config:\n  - {key: mode, type: string, default: good}\n" + (testMode.map { "test_config: {mode: \($0)}" } ?? ""))
        try write(yaml, to: folder + "/plugin.yaml")
        return folder + "/plugin.yaml"
    }

    /// A plugin.yaml: its id, name and library, each export as (id, kind), then the `extra` lines
    /// (config, test_config) as given.
    static func pluginManifest(
        id: String, name: String, library: String, abi: String = "1.0", version: String = "1.0.0", exports: [(String, String)],
        extra: String = ""
    ) -> String {
        """
        abi: "\(abi)"
        id: \(id)
        name: \(name)
        version: \(version)
        library: \(library)
        exports:
        \(exports.map { "  - {id: \($0.0), kind: \($0.1)}" }.joined(separator: "\n"))
        \(extra)
        """
    }

    /// A plugin.yaml for the fault fixture, naming `library`.
    static func fixtureManifest(library: String, id: String = "fault-fixture", abi: String = "1.0") -> String {
        """
        abi: "\(abi)"
        id: \(id)
        name: Fault fixture
        version: 1.0.0
        description: test-only
        library: \(library)
        exports:
          - id: \(id)
            kind: trigger_operator
        config: []
        """
    }
}

/// How a program run by `TestSupport.run` ended and what it wrote.
/// The results `TestSupport.concurrently` collects from its threads.
/// Safe to share: every access holds `lock`.
final class ConcurrentResults<T>: @unchecked Sendable {
    let lock = NSLock()
    var values: [Int: Result<T, Error>] = [:]

    /// The result at `index` (an empty default when none was stored), or its error.
    func value(_ index: Int) throws -> T where T == Data { try lock.withLock { values[index] ?? .success(Data()) }.get() }
}

struct CommandResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    /// `.uncaughtSignal` when the program was ended by a signal (a trap), `.exit` otherwise.
    var reason: Process.TerminationReason = .exit

    /// stdout parsed as JSON (`TestSupport.json`); throws when it is not JSON.
    var json: Any { get throws { try TestSupport.json(stdout) } }

    /// stdout parsed as JSON of type `T`; throws, failing the test with this result, when it is not.
    func json<T>(as type: T.Type, file: StaticString = #filePath, line: UInt = #line) throws -> T {
        try XCTUnwrap(try json as? T, "stdout is not JSON of type \(T.self): \(self)", file: file, line: line)
    }

    /// This result when the program exited with `status`; otherwise fails the test at the caller
    /// (with this result) and throws.
    @discardableResult
    func expect(_ status: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
        try XCTUnwrap(self.status == status ? self : nil, "expected exit status \(status), got \(self)", file: file, line: line)
    }

    /// For assertion messages: the exit status and both outputs.
    var description: String {
        "exit \(status)\(reason == .uncaughtSignal ? " (signal)" : "")\nstdout: \(stdout)\nstderr: \(stderr)"
    }
}

/// plugins.yaml text from Swift values: the top-level sections in order, each a key and its YAML
/// value (a scalar, or a flow mapping made with `flow`), then `plugins:` with the instances.
struct ManifestText: CustomStringConvertible {
    /// One plugin instance: its id, the plugin.yaml it uses, then more keys in order, each with
    /// its YAML value (e.g. `("config", ManifestText.flow(("network", "wifi")))`).
    struct Plugin {
        var id: String
        var use: String
        var keys: [(key: String, value: String)]

        init(id: String, use: String, _ keys: (key: String, value: String)...) {
            self.id = id
            self.use = use
            self.keys = keys
        }
    }

    var sections: [(key: String, value: String)]
    var plugins: [Plugin]

    var description: String {
        var lines = sections.map { "\($0.key): \($0.value)" }
        lines.append(plugins.isEmpty ? "plugins: []" : "plugins:")
        for plugin in plugins {
            lines += ["  - id: \(plugin.id)", "    use: \(plugin.use)"] + plugin.keys.map { "    \($0.key): \($0.value)" }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A flow mapping, `{key: value, ...}`, of the pairs in order.
    static func flow(_ pairs: (key: String, value: String)...) -> String {
        "{" + pairs.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
    }

    /// `text` as a double-quoted YAML string.
    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

typealias CapturedLog = LogCapture

/// What `hubhost plugins test PATH --json` prints: how many conformance tests passed and failed, and each result.
struct PluginsTestReport: Decodable {
    var passed: Int
    var failed: Int
    var results: [ConformanceResult]

    func result(_ name: String) -> ConformanceResult? { results.first { $0.name == name } }

    /// Runs `hubhost plugins test PATH --json` with `extra` arguments; its exit status, report and stderr.
    static func run(_ path: String, _ extra: [String] = []) throws -> (status: Int32, report: PluginsTestReport, stderr: String) {
        let run = try TestSupport.hubhost(["plugins", "test", path, "--json"] + extra, timeout: 300)
        return (run.status, try JSONDecoder().decode(PluginsTestReport.self, from: Data(run.stdout.utf8)), run.stderr)
    }
}
