import Foundation

/// Runs a child process to completion with a deadline, collecting its output. Used by the
/// validator for one test per process; a child past its deadline is killed with SIGKILL.
enum ChildProcess {
    enum Termination: Equatable {
        case exited(Int32)
        case signaled(Int32)
        case timedOut
    }

    struct Result {
        var termination: Termination
        var stdout: String
        var stderr: String
    }

    static func run(_ command: [String], timeoutMs: Int, environment: [String: String]? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Safe to share: both fields are read and written under `lock` (a reader may still be
        // writing after the bounded wait below gave up on it).
        final class Collected: @unchecked Sendable {
            private let lock = NSLock()
            private var data = (out: Data(), err: Data())
            func set(out: Data) { lock.withLock { data.out = out } }
            func set(err: Data) { lock.withLock { data.err = err } }
            var both: (out: Data, err: Data) { lock.withLock { data } }
        }
        let collected = Collected()
        let readers = DispatchGroup()
        readers.enter()
        DispatchQueue.global().async {
            collected.set(out: out.fileHandleForReading.readDataToEndOfFile())
            readers.leave()
        }
        readers.enter()
        DispatchQueue.global().async {
            collected.set(err: err.fileHandleForReading.readDataToEndOfFile())
            readers.leave()
        }
        let exited = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            process.waitUntilExit()
            exited.signal()
        }
        var timedOut = false
        if exited.wait(timeout: .now() + .milliseconds(timeoutMs)) == .timedOut {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        // A grandchild holding the pipes open must not hang the validator: bound the reads too.
        _ = readers.wait(timeout: .now() + .seconds(5))
        let read = collected.both
        let stdout = String(decoding: read.out, as: UTF8.self)
        let stderr = String(decoding: read.err, as: UTF8.self)
        if timedOut { return Result(termination: .timedOut, stdout: stdout, stderr: stderr) }
        switch process.terminationReason {
        case .uncaughtSignal: return Result(termination: .signaled(process.terminationStatus), stdout: stdout, stderr: stderr)
        default: return Result(termination: .exited(process.terminationStatus), stdout: stdout, stderr: stderr)
        }
    }

    /// The last lines the child wrote to stderr, as context for a crash.
    static func lastLines(_ stderr: String, count: Int = 3) -> String {
        let lines = stderr.split(separator: "\n").suffix(count)
        return lines.isEmpty ? "" : "; stderr: " + lines.joined(separator: " | ")
    }
}
