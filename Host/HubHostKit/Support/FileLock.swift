import Foundation

/// An exclusive lock that processes sharing a data directory take one at a time: an flock on a file
/// (made when missing) or on a folder, waited for at most `waitSeconds`. Threads of one process
/// exclude each other too (each lock opens its own descriptor). A process that dies holding it
/// releases it with its descriptor, so a SIGKILL never leaves it taken.
///
/// Blocking: the wait polls every 5 ms; take it on a thread that may wait, never on a Swift
/// concurrency or event-loop thread.
/// Safe to share: not shared; one owner takes and releases it.
final class FileLock {
    /// Why the lock was not taken.
    struct Failure: Error, CustomStringConvertible {
        /// True when another holder kept it past the wait; false when the path could not be opened.
        var busy: Bool
        var description: String
    }

    private var descriptor: Int32

    /// Takes the lock on `path` (a file, created 0600 when missing, or a folder when `folder`),
    /// waiting at most `waitSeconds` (0 to 24 hours) for another holder.
    init(path: String, folder: Bool = false, waitSeconds: TimeInterval) throws {
        let wait = min(max(waitSeconds.isFinite ? waitSeconds : 0, 0), 86_400)
        if folder {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        } else {
            descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        }
        guard descriptor >= 0 else {
            throw Failure(busy: false, description: "cannot open \(path) to lock it: \(String(cString: strerror(errno)))")
        }
        let deadline = Date().addingTimeInterval(wait)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            guard error == EWOULDBLOCK || error == EINTR, Date() < deadline else {
                Glibc.close(descriptor)
                descriptor = -1
                throw Failure(
                    busy: error == EWOULDBLOCK,
                    description: error == EWOULDBLOCK
                        ? "another process held \(path) for \(Int(wait)) s" : "cannot lock \(path): \(String(cString: strerror(error)))")
            }
            usleep(5_000)
        }
    }

    /// Releases the lock (also when the lock is dropped).
    func release() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)  // closing the descriptor releases the flock
        descriptor = -1
    }

    deinit { release() }
}
