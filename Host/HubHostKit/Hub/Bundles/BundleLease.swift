import Foundation

/// A process's claim on a stored bundle file while it has the bundle open: a shared `flock` on the
/// file, released when the lease is (the ContentBundle that holds it goes away) or when the process
/// dies, so a crashed reader never leaves a stale claim behind. BundleStore deletes an old bundle
/// only when it can take an exclusive lock on it, i.e. when no process holds a lease: a bundle that
/// `hubhost serve` still shows (an open hub session) is never deleted under it by a CLI sync.
///
/// The descriptor is close-on-exec, so plugin worker processes started meanwhile do not inherit
/// (and so prolong) the claim.
/// Sendable: its only field is a `let` file descriptor, closed once in deinit.
package final class BundleLease: Sendable {
    private let descriptor: Int32

    /// Takes a shared lock on `path`; nil when the file is gone (deleted before the lock was taken:
    /// the caller reads the active pointer again).
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard FileLocks.lock(fd, LOCK_SH) else {
            close(fd)
            return nil
        }
        // The pruner deletes a file while it holds the exclusive lock: if it did so between our open
        // and our lock, the name no longer leads to the file we locked.
        guard FileStamp.sameFile(descriptor: fd, path: path) else {
            close(fd)
            return nil
        }
        descriptor = fd
    }

    deinit { close(descriptor) }
}

/// What identifies one version of a file for "did another process change it?" checks: device,
/// inode, size and modification time. Files hubhost shares (`active.json`, `delivery.json`) are
/// replaced by rename, so each version is a new inode; a missing file has a stamp of its own.
package struct FileStamp: Equatable, Sendable {
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = -1
    var seconds: Int = 0
    var nanoseconds: Int = 0

    /// The stamp of `path` now (`missing` when it does not exist).
    package init(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
    }

    /// True when `path` still names the file open as `descriptor`.
    static func sameFile(descriptor: Int32, path: String) -> Bool {
        var open = stat()
        var named = stat()
        guard fstat(descriptor, &open) == 0, stat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }
}

/// flock(2) helpers: locks that other processes on the machine honor and the kernel releases when
/// the process dies.
enum FileLocks {
    /// Blocks until `operation` (LOCK_SH or LOCK_EX) is granted; false on an error other than EINTR.
    static func lock(_ fd: Int32, _ operation: Int32) -> Bool {
        while flock(fd, operation) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }

    /// Runs `body` holding an exclusive lock on `path` (a lock file, created 0600 when missing).
    static func exclusively<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }  // releases the lock
        guard lock(fd, LOCK_EX) else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return try body()
    }

    /// Deletes `paths[0]` (a bundle file) and the rest (its metadata) unless a process holds a lease
    /// on it. Returns false, deleting nothing, when the bundle is in use.
    static func removeUnlessLeased(_ paths: [String]) -> Bool {
        guard let bundle = paths.first else { return true }
        let fd = open(bundle, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
            unlink(bundle)  // while holding the lock: a reader locking after this sees the name gone
        }
        for path in paths.dropFirst() { unlink(path) }
        return true
    }
}
