import Foundation
import GRDB

/// How hubhost opens the SQLite files of its data directory, which several processes may use at
/// once (`serve` and CLI commands beside it): WAL, `synchronous = FULL` (a commit is on disk
/// before it returns, even in WAL mode), and a busy timeout, so that a writer waits for another
/// process's transaction instead of failing with "database is locked".
enum SharedSQLite {
    /// How long a write waits for another process's transaction before it fails.
    static let busyTimeoutSeconds: TimeInterval = 30

    static func configuration(label: String) -> Configuration {
        var configuration = Configuration()
        configuration.label = label
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        return configuration
    }

    /// Opens (creating) the pool at `path` and makes its files owner-only (0600): they hold user data.
    static func open(path: String, label: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration(label: label))
        DataDirectory.restrict(DataDirectory.sqliteFiles(path))
        return pool
    }

    /// Held while a store's file is opened and migrated, so that processes opening a fresh data
    /// directory at the same moment do so one after another: each then finds the schema the first
    /// made, instead of two creating the same table ("table events already exists", "UNIQUE
    /// constraint failed: grdb_migrations.identifier"). It is an flock on the folder holding the
    /// file (no file of its own), waited for at most `busyTimeoutSeconds`; a process that dies
    /// holding it releases it with its descriptor.
    final class OpeningLock {
        private var descriptor: Int32

        init(for path: String) throws {
            let folder = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: folder.isEmpty ? "." : folder, withIntermediateDirectories: true)
            descriptor = Glibc.open(folder.isEmpty ? "." : folder, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw DatabaseError(
                    resultCode: .SQLITE_CANTOPEN, message: "cannot open the folder of \(path) to lock it: \(String(cString: strerror(errno)))")
            }
            let deadline = Date().addingTimeInterval(SharedSQLite.busyTimeoutSeconds)
            while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
                    let reason =
                        errno == EWOULDBLOCK
                        ? "another process held it for \(Int(SharedSQLite.busyTimeoutSeconds)) s" : String(cString: strerror(errno))
                    Glibc.close(descriptor)
                    descriptor = -1
                    throw DatabaseError(resultCode: .SQLITE_BUSY, message: "cannot lock the folder of \(path) to open it: \(reason)")
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
}
