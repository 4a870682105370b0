import Foundation

/// Names a running process on this machine so that another process can tell whether it is still
/// alive: its pid with its start time (from /proc), since a pid alone is reused after a process
/// exits. Used to mark work a process holds in a shared data directory (events in HOLD), so that a
/// restart recovers a dead process's work at once and never takes a live one's.
package enum ProcessIdentity {
    /// This process, as `pid:starttime`.
    package static let current: String = identity(of: getpid()) ?? "\(getpid()):0"

    /// True when the process `identity` names is still running (same pid and start time). An
    /// identity that is not `pid:starttime` counts as not running.
    package static func isRunning(_ identity: String) -> Bool {
        let parts = identity.split(separator: ":")
        guard parts.count == 2, let pid = Int32(parts[0]), pid > 0 else { return false }
        return Self.identity(of: pid) == identity
    }

    /// `pid:starttime` of a running process, nil when there is none with that pid.
    static func identity(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        // Field 2, the command, is in parentheses and may hold spaces: count fields after its ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After ')' come fields 3, 4, ...: starttime is field 22, so index 19 here.
        guard fields.count > 19 else { return nil }
        return "\(pid):\(fields[19])"
    }
}
