import Foundation
import Synchronization

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

    /// Runs `command`; past `timeoutMs` it is killed. Output is read as it arrives, so a child
    /// killed at its deadline, or one whose grandchild keeps the pipes open past `readerGraceMs`
    /// after it ended, still returns what it wrote until then, and at once.
    static func run(
        _ command: [String], timeoutMs: Int, environment: [String: String]? = nil, readerGraceMs: Int = 5000
    ) throws -> Result {
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
        let collected = Collected()
        let readers = DispatchGroup()
        for (pipe, isOut) in [(out, true), (err, false)] {
            let handle = pipe.fileHandleForReading
            readers.enter()
            // Threads of their own, never Dispatch's pool: a reader may block for as long as a
            // grandchild holds the pipe, and two blocked pool threads starve the waiter below on a
            // small machine.
            Thread.detachNewThread {
                // Chunk by chunk: a reader the bounded wait below gives up on has handed over
                // everything it read so far, and keeps appending under the lock (never racing the read).
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                    if count > 0 {
                        collected.append(Data(buffer[0..<count]), toOut: isOut)
                    } else if count < 0 && errno == EINTR {
                        continue
                    } else {
                        break  // the end, or an error: nothing more will come
                    }
                }
                readers.leave()
            }
        }
        // The child's end, seen by waitid without reaping it (Foundation's Process still reaps it):
        // Process.waitUntilExit on Linux returns only when every process holding the child's
        // inherited descriptors has ended, so a grandchild would hold the validator up to its end.
        let ended = Ended()
        let pid = process.processIdentifier
        let exited = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var info = siginfo_t()
            var answer: Int32
            repeat { answer = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) } while answer != 0 && errno == EINTR
            if answer == 0 {
                let status = info._sifields._sigchld.si_status
                ended.termination.withLock { $0 = Int(info.si_code) == Int(CLD_EXITED) ? .exited(status) : .signaled(status) }
            } else {
                process.waitUntilExit()  // reaped already (by Process): its own answer
                let termination: Termination =
                    process.terminationReason == .uncaughtSignal ? .signaled(process.terminationStatus) : .exited(process.terminationStatus)
                ended.termination.withLock { $0 = termination }
            }
            exited.signal()
        }
        var timedOut = false
        if exited.wait(timeout: .now() + .milliseconds(timeoutMs)) == .timedOut {
            timedOut = true
            kill(pid, SIGKILL)
            exited.wait()
        }
        // A grandchild holding the pipes open must not hang the validator: bound the reads too.
        _ = readers.wait(timeout: .now() + .milliseconds(readerGraceMs))
        let output = collected.snapshot
        let stdout = String(decoding: output.out, as: UTF8.self)
        let stderr = String(decoding: output.err, as: UTF8.self)
        let termination: Termination = timedOut ? .timedOut : ended.termination.withLock { $0 } ?? .exited(-1)
        return Result(termination: termination, stdout: stdout, stderr: stderr)
    }

    /// How the child ended, set once by the thread that waits for it.
    private final class Ended: Sendable {
        let termination = Mutex<Termination?>(nil)
    }

    /// The output read so far, appended and read under one lock: the readers may still be running
    /// when `run` reads it (a grandchild holds the pipes).
    private final class Collected: Sendable {
        private let data = Mutex((out: Data(), err: Data()))
        func append(_ chunk: Data, toOut: Bool) {
            data.withLock { if toOut { $0.out.append(chunk) } else { $0.err.append(chunk) } }
        }
        var snapshot: (out: Data, err: Data) { data.withLock { $0 } }
    }

    /// The last lines the child wrote to stderr, as context for a crash.
    static func lastLines(_ stderr: String, count: Int = 3) -> String {
        let lines = stderr.split(separator: "\n").suffix(count)
        return lines.isEmpty ? "" : "; stderr: " + lines.joined(separator: " | ")
    }
}
