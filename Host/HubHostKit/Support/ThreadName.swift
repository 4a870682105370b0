import Foundation

/// The calling thread's name as the OS shows it (`top -H`, `ps -L`, /proc/<pid>/task/*/comm), so
/// that an operator, and `bench hub`'s CPU split, can tell hubhost's own threads apart. Foundation's
/// `Thread.name` does not reach the OS on Linux: a thread it starts keeps its creator's name.
package enum ThreadName {
    /// Linux keeps at most this many bytes of a name.
    package static let maxLength = 15

    /// Names the calling thread `name`, cut to `maxLength` bytes. Written to the thread's own
    /// /proc/thread-self/comm (what prctl(PR_SET_NAME) sets; Swift cannot call that variadic
    /// function); where there is no such file, the name stays as it was.
    package static func set(_ name: String) {
        let bytes = Array(name.utf8.prefix(maxLength))
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
