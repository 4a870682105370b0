import Foundation
import GRDB

/// How hubhost opens the SQLite files of its data directory, which several processes may use at
/// once (`serve` and CLI commands beside it): WAL, `synchronous = FULL` (a commit is on disk
/// before it returns, even in WAL mode; the event store may ask for NORMAL, `events.durability`),
/// and a busy timeout, so that a writer waits for another process's transaction instead of
/// failing with "database is locked".
enum SharedSQLite {
    /// The `synchronous` setting of every store but an event store with `events.durability:
    /// process`: a commit is on disk before it returns.
    static let durableSynchronous = "FULL"

    /// How long a write waits for another process's transaction before it fails.
    static let busyTimeoutSeconds: TimeInterval = 30

    /// `mmapBytes` > 0: each connection reads up to that much of the file through a memory map
    /// (`PRAGMA mmap_size`) instead of copying every page it reads with a system call.
    /// `synchronous`: FULL or NORMAL (EventDurability.synchronous).
    static func configuration(label: String, mmapBytes: Int = 0, synchronous: String = durableSynchronous) -> Configuration {
        var configuration = Configuration()
        configuration.label = label
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            if mmapBytes > 0 { try db.execute(sql: "PRAGMA mmap_size = \(mmapBytes)") }
        }
        return configuration
    }

    /// Opens (creating) the pool at `path` and makes its files owner-only (0600): they hold user data.
    static func open(path: String, label: String, mmapBytes: Int = 0, synchronous: String = durableSynchronous) throws -> DatabasePool {
        precondition(["FULL", "NORMAL"].contains(synchronous), "synchronous is FULL or NORMAL")
        let pool = try DatabasePool(path: path, configuration: configuration(label: label, mmapBytes: mmapBytes, synchronous: synchronous))
        // GRDB's pool turns WAL on with `synchronous = NORMAL` on its writer AFTER prepareDatabase
        // ran, so the one connection that commits synced nothing at commit: a committed event
        // survived kill -9 (the page cache) but not a power loss. FULL again, on the writer.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        DataDirectory.restrict(DataDirectory.sqliteFiles(path))
        return pool
    }

    /// A write transaction on `pool`'s writer committed without waiting for the disk: the
    /// connection is `synchronous = NORMAL` for it (in WAL mode the commit reaches the OS's page
    /// cache, not the disk: it survives kill -9 or a crash of hubhost; a power loss may lose it,
    /// never corrupting the file), then `restoring` (the pool's own setting) again. For records
    /// that nobody waits on (page-view metrics and the profile learning written after a page was
    /// answered): the next commit that does wait for the disk syncs the log, these frames with it.
    static func writeWithoutWaitingForDisk<T>(_ pool: DatabasePool, restoring synchronous: String, _ body: (Database) throws -> T) throws -> T {
        precondition(["FULL", "NORMAL"].contains(synchronous), "synchronous is FULL or NORMAL")
        return try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            let outcome = Result { () throws -> T in
                var value: T?
                try db.inTransaction {
                    value = try body(db)
                    return .commit
                }
                return value!
            }
            // Restored whatever the transaction did: a connection left at NORMAL would skip the
            // fsync of every commit after it, the acknowledged ones too.
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            return try outcome.get()
        }
    }

    /// Held while a store's file is opened and migrated, so that processes opening a fresh data
    /// directory at the same moment do so one after another: each then finds the schema the first
    /// made, instead of two creating the same table ("table events already exists", "UNIQUE
    /// constraint failed: grdb_migrations.identifier"). It is an flock on the folder holding the
    /// file (no file of its own), waited for at most `busyTimeoutSeconds`.
    static func openingLock(for path: String) throws -> FileLock {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            return try FileLock(path: folder.isEmpty ? "." : folder, folder: true, waitSeconds: busyTimeoutSeconds)
        } catch let failure as FileLock.Failure {
            throw DatabaseError(
                resultCode: failure.busy ? .SQLITE_BUSY : .SQLITE_CANTOPEN, message: "cannot lock the folder of \(path) to open it: \(failure)")
        }
    }
}
