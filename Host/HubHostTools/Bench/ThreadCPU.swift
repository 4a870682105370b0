import Foundation
import HubHostKit

/// The CPU time a process's threads have used, by thread, read from Linux's
/// /proc/<pid>/task/<tid>/stat (user plus system time, in clock ticks). Two snapshots around a
/// load give the CPU a request cost, split by the kind of thread that spent it (`Role`): what a
/// benchmark's rate alone cannot tell apart (the framework's event loops, the handlers' tasks,
/// background work a request leaves behind).
public struct ThreadCPU: Sendable {
    /// One thread: its name (comm, at most 15 bytes) and the CPU time it has used so far.
    public struct ThreadTime: Sendable, Equatable {
        public var name: String
        public var ticks: UInt64
    }

    /// The threads by id, as read; empty when the process is gone or /proc is not there.
    public var threads: [Int32: ThreadTime]

    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
    public static let ticksPerSecond = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))

    /// A snapshot of the threads of `pid` now.
    public static func of(pid: Int32) -> ThreadCPU {
        let folder = "/proc/\(pid)/task"
        var threads: [Int32: ThreadTime] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            guard let tid = Int32(entry), let text = try? String(contentsOfFile: "\(folder)/\(entry)/stat", encoding: .utf8),
                let thread = parse(stat: text)
            else { continue }  // a thread that ended since the listing
            threads[tid] = thread
        }
        return ThreadCPU(threads: threads)
    }

    /// One stat line: "tid (comm) state ppid ... utime stime ...". The name may hold spaces and
    /// parentheses, so the fields are counted from the last ')'. Nil when the line is not one.
    static func parse(stat text: String) -> ThreadTime? {
        guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")"), open < close else { return nil }
        let name = String(text[text.index(after: open)..<close])
        // After the name: state (field 3) ... utime (field 14) and stime (field 15).
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        return ThreadTime(name: name, ticks: user &+ system)
    }

    /// The kinds of thread a server of hubhost's runs, told apart by name.
    public enum Role: String, CaseIterable, Sendable {
        /// SwiftNIO's event loops: the HTTP framework, the middlewares, pages answered from memory.
        case eventLoops = "event loops"
        /// The Swift concurrency pool (libdispatch's global queues on Linux): route handlers'
        /// async work.
        case tasks = "Swift tasks"
        /// The hub's page-view recorder: each view's metrics events and reading history, stored
        /// after the page was answered (`HubViewRecorder`).
        case viewRecorder = "page views recorder"
        /// The event pipeline's writer of acknowledged events (`POST /v1/events`).
        case eventWriter = "event writer"
        /// Plugin calls, augmentation's among them.
        case pluginCalls = "plugin calls"
        /// The blocking pool, and anything else.
        case other = "other threads"

        /// The role of a thread of this name.
        public init(threadName name: String) {
            if name.hasPrefix("NIO-ELT") || name.hasPrefix("NIO-SGLTN") {
                self = .eventLoops
            } else if name.contains("default-qos") {
                self = .tasks
            } else if name == HubViewRecorder.threadName {
                self = .viewRecorder
            } else if name == GroupCommit.threadName {
                self = .eventWriter
            } else if name == PluginCallThreads.threadName {
                self = .pluginCalls
            } else {
                self = .other
            }
        }
    }

    /// Runs `body` and returns what it returned with the CPU seconds the threads of `pid` spent
    /// meanwhile, by role; nil seconds without a `pid`.
    public static func spent<T>(by pid: Int32?, during body: () throws -> T) rethrows -> (T, [Role: Double]?) {
        let before = pid.map(ThreadCPU.of(pid:))
        let result = try body()
        guard let pid, let before else { return (result, nil) }
        return (result, ThreadCPU.of(pid: pid).seconds(since: before))
    }

    /// The CPU seconds each role's threads spent between `before` and this snapshot (a thread
    /// started since counts from zero; one that ended since is not counted).
    public func seconds(since before: ThreadCPU) -> [Role: Double] {
        var spent: [Role: Double] = [:]
        for (tid, thread) in threads {
            let earlier = before.threads[tid]?.ticks ?? 0
            guard thread.ticks > earlier else { continue }
            spent[Role(threadName: thread.name), default: 0] += Double(thread.ticks - earlier) / Self.ticksPerSecond
        }
        return spent
    }
}
