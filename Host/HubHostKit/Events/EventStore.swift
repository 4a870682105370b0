import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The local event store (Engage "Local Event Storage"): one SQLite file in the data directory,
/// WAL mode, `synchronous = FULL`, so an event whose insert returned is on disk and survives kill -9
/// and power loss (or `NORMAL` with `events.durability: process`: it survives kill -9, not a power
/// loss). Events keep one of the five statuses of EventStatus: most in their own row, but
/// the events a delivery step passed by the delivered cursor are SUCCESSFULLY_POSTED without a write
/// to their rows (see `cursor(_:)` for the one rule that decides an event's status).
/// Sendable: `path` and `pool` are `let`s and GRDB's DatabasePool is thread-safe (it serialises writes and hands
/// each read its own connection); `seenDataVersion` lives in a Mutex.
public final class EventStore: Sendable {
    /// The SQLite file's path.
    public let path: String
    package let pool: DatabasePool

    /// The store could not be opened, or a corrupt file could not be moved aside.
    public struct OpenError: Error, CustomStringConvertible {
        /// What failed, naming the file.
        public var description: String
    }

    /// Opens (creating) the store at `path`. A file that is not a database, or is corrupt, is moved
    /// aside (`<path>.corrupt-<time>`), never overwritten, and a new store is started; the returned
    /// `movedAside` says where the old file went. An unreadable file is an error naming it.
    package static func open(path: String, durability: EventDurability = .fsync) throws -> (store: EventStore, movedAside: String?) {
        do {
            return (try EventStore(path: path, durability: durability), nil)
        } catch let error as DatabaseError where [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode.primaryResultCode) {
            let aside = "\(path).corrupt-\(Clock.wallMs())"
            do {
                try FileManager.default.moveItem(atPath: path, toPath: aside)
                for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                    try? FileManager.default.moveItem(atPath: path + suffix, toPath: aside + suffix)
                }
            } catch {
                throw OpenError(description: "\(path) is not a valid event database (\(error.localizedDescription)), and it could not be moved aside")
            }
            return (try EventStore(path: path, durability: durability), aside)
        } catch let error as DatabaseError {
            throw OpenError(description: "cannot open the event database \(path): \(error.message ?? "\(error.resultCode)")")
        }
    }

    /// What a commit survives (`events.durability`).
    package let durability: EventDurability

    private init(path: String, durability: EventDurability) throws {
        self.path = path
        self.durability = durability
        let opening = try SharedSQLite.openingLock(for: path)  // until migrated: see openingLock
        defer { opening.release() }
        pool = try SharedSQLite.open(path: path, label: "events", synchronous: durability.synchronous)
        try migrate()
    }

    /// Brings the store's schema to the current version. Long: every migration, in order, each a
    /// few statements; a store of any earlier version runs the ones after it.
    private func migrate() throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 events") { db in
            try db.execute(
                sql: """
                    CREATE TABLE events (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        id TEXT NOT NULL UNIQUE,
                        type TEXT NOT NULL,
                        name TEXT NOT NULL,
                        timestamp_ms INTEGER NOT NULL,
                        attributes TEXT NOT NULL,
                        status TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_ms INTEGER NOT NULL DEFAULT 0,
                        created_ms INTEGER NOT NULL,
                        updated_ms INTEGER NOT NULL,
                        last_error TEXT
                    );
                    CREATE INDEX events_by_status ON events(status, next_attempt_ms, seq);
                    """)
        }
        // AUTOINCREMENT updated sqlite_sequence on every insert. `seq` only orders the events that
        // exist (deliverable: oldest first), and a plain rowid is always above every row that
        // exists, so the table is rebuilt without it; existing events keep their seq.
        migrator.registerMigration("v2 events without AUTOINCREMENT") { db in
            try db.execute(
                sql: """
                    CREATE TABLE events_v2 (
                        seq INTEGER PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        type TEXT NOT NULL,
                        name TEXT NOT NULL,
                        timestamp_ms INTEGER NOT NULL,
                        attributes TEXT NOT NULL,
                        status TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_ms INTEGER NOT NULL DEFAULT 0,
                        created_ms INTEGER NOT NULL,
                        updated_ms INTEGER NOT NULL,
                        last_error TEXT
                    );
                    INSERT INTO events_v2 (seq, id, type, name, timestamp_ms, attributes, status, attempts, next_attempt_ms, created_ms, updated_ms, last_error)
                        SELECT seq, id, type, name, timestamp_ms, attributes, status, attempts, next_attempt_ms, created_ms, updated_ms, last_error FROM events;
                    DROP TABLE events;
                    ALTER TABLE events_v2 RENAME TO events;
                    CREATE INDEX events_by_status ON events(status, next_attempt_ms, seq);
                    """)
        }
        // Small persistent state (sessions, the current campaign, campaign users...). Stores made
        // before this migration existed created the table on open: IF NOT EXISTS keeps theirs.
        migrator.registerMigration("v3 state") { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        }
        // The process augmenting an event in HOLD (ProcessIdentity), so that another process on
        // the same data directory recovers a dead one's holds and leaves a live one's alone.
        migrator.registerMigration("v4 hold holder") { db in
            try db.execute(sql: "ALTER TABLE events ADD COLUMN holder TEXT")
        }
        // Delivery takes the oldest due events. Ordered by (status, next_attempt_ms, seq), the index
        // made every claim read ALL the waiting events and sort them by seq (a backlog of N events
        // cost O(N) per batch); ordered by (status, seq, next_attempt_ms), each status is read in seq
        // order and the read stops after the batch (see dueSeqsSQL). An index only: no event changes.
        migrator.registerMigration("v5 status index in seq order") { db in
            try db.execute(
                sql: """
                    DROP INDEX IF EXISTS events_by_status;
                    CREATE INDEX events_by_status_seq ON events(status, seq, next_attempt_ms);
                    """)
        }
        // A claim wrote every claimed row (its next_attempt_ms moved to the lease's end): one page
        // write per few events, and the status index rewritten for each, on top of the statuses'
        // own writes. A lease is now one row per claimed batch (its seq range and end, see claim);
        // the statuses stay per event. A v5 store's leased rows keep their next_attempt_ms in the
        // future, so they stay held until that lease ends, as before.
        migrator.registerMigration("v6 delivery leases") { db in
            try db.execute(
                sql: """
                    CREATE TABLE delivery_leases (
                        id INTEGER PRIMARY KEY,
                        first_seq INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL,
                        until_ms INTEGER NOT NULL
                    )
                    """)
        }
        // One user's events go out in tracked order: a claim looks for events waiting out a
        // backoff (next_attempt_ms in the future). A partial index holds only rows that ever
        // waited (next_attempt_ms > 0): a fresh event is not in it, so tracking writes nothing more.
        migrator.registerMigration("v7 events waiting out a backoff") { db in
            try db.execute(sql: "CREATE INDEX events_backoff ON events(status, next_attempt_ms) WHERE next_attempt_ms > 0")
        }
        // A delivered batch wrote a status per event: a row rewrite and a status index change for
        // each, what capped every sink. Delivery now moves a cursor instead: one delivery_log row per
        // step, and a delivery_holes row for each event the cursor passed without delivering it (see
        // cursor(_:)). An existing store has no cursor: its rows keep their own statuses, and those
        // still waiting become holes when a cursor first passes them.
        migrator.registerMigration("v8 delivered cursor") { db in
            try db.execute(
                sql: """
                    CREATE TABLE delivery_log (last_seq INTEGER PRIMARY KEY, posted_ms INTEGER NOT NULL);
                    CREATE TABLE delivery_holes (seq INTEGER PRIMARY KEY);
                    """)
        }
        // Traces: the W3C traceparent an event was tracked under, sent on by its sink. Old rows
        // have none (NULL), as have events tracked without one.
        migrator.registerMigration("v9 event traceparent") { db in
            try db.execute(sql: "ALTER TABLE events ADD COLUMN traceparent TEXT")
        }
        try migrator.migrate(pool)
    }

    // MARK: Writing

    /// Inserts events in one transaction (with `state`, the session state their tracking changed);
    /// returns when they are on disk.
    public func insert(_ events: [Event]) throws { try insert(events, states: []) }

    func insert(_ events: [Event], states: [(key: String, json: String)]) throws {
        try insert(events, encodedAttributes: events.map { AttributeJSON.encodeUTF8($0.attributes) }, states: states)
    }

    /// Inserts events whose attributes column was already encoded (`encodedAttributes[i]` for
    /// `events[i]`), so a batch can encode them in parallel before the single writer commits.
    func insert(_ events: [Event], encodedAttributes: [[UInt8]], states: [(key: String, json: String)]) throws {
        let now = Clock.wallMs()
        try pool.write { db in
            for state in states { try KeyValueState.write(db, key: state.key, json: state.json) }
            var writer = try EventRowWriter(db)
            for (event, attributes) in zip(events, encodedAttributes) {
                try writer.insert(.init(event, attributes: attributes), nowMs: now)
                if event.status == .hold {  // this process augments it: say so (see expireStaleHolds)
                    try db.execute(sql: "UPDATE events SET holder = ? WHERE id = ?", arguments: [ProcessIdentity.current, event.id])
                }
            }
        }
    }

    /// Inserts rows in one transaction while they are still being produced: `next()` hands over the
    /// next chunk (events with their encoded attributes), blocking until it is ready, or nil after
    /// the last. The single writer inserts chunk k while other threads augment and encode chunk
    /// k+1, so the two costs overlap instead of adding up. Returns when everything is on disk.
    /// `states()` is asked after the last chunk (producing the chunks may change it) and written in
    /// the same transaction.
    /// `waitForDisk` false: committed without waiting for the disk (`SharedSQLite.writeWithoutWaitingForDisk`).
    func insertStreaming(
        states: () -> [(key: String, json: String)], waitForDisk: Bool = true,
        next: () throws -> (events: [Event], attributes: [ArraySlice<UInt8>])?
    ) throws {
        let now = Clock.wallMs()
        let insert = { (db: Database) throws in
            var writer = try EventRowWriter(db)
            while let chunk = try next() {
                for (event, attributes) in zip(chunk.events, chunk.attributes) {
                    try writer.insert(.init(event, attributes: attributes), nowMs: now)
                }
            }
            for state in states() { try KeyValueState.write(db, key: state.key, json: state.json) }
        }
        if waitForDisk || durability == .process {  // with `process`, no commit waits for the disk already
            try pool.write(insert)
        } else {
            try SharedSQLite.writeWithoutWaitingForDisk(pool, restoring: durability.synchronous, insert)
        }
    }

    /// Whether another connection (another process, or another EventStore on the same file)
    /// committed to the database since the previous call; true on the first call. `PRAGMA
    /// data_version` on the writer connection, which this store's own commits never change.
    func committedByAnotherConnection() throws -> Bool {
        let version = try dataVersion()
        return seenDataVersion.withLock { seen in
            defer { seen = version }
            return seen != version
        }
    }
    private let seenDataVersion = Mutex<Int64?>(nil)

    /// `PRAGMA data_version` on the writer connection: it changes when another connection (another
    /// process, or another EventStore on the same file) commits, and never for this store's own
    /// commits. For a caller that keeps the value it last saw (`committedByAnotherConnection` keeps
    /// the event engine's).
    func dataVersion() throws -> Int64 {
        try pool.writeWithoutTransaction { db in try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) } ?? -1
    }

    /// Replaces an event's attributes and status (after augmentation).
    public func update(_ event: Event) throws {
        try pool.write { db in
            try Self.writingOwnRows(db, .ids([event.id])) {
                try db.execute(
                    sql: "UPDATE events SET attributes = ?, status = ?, updated_ms = ?, holder = NULL WHERE id = ?",
                    arguments: [AttributeJSON.encode(event.attributes), event.status.rawValue, Clock.wallMs(), event.id])
            }
        }
    }

    /// Marks events posted (and ends the leases that held them).
    public func markPosted(_ ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try pool.write { db in
            try Self.endLeases(db, holding: ids)
            try Self.writingOwnRows(db, .ids(ids)) { try Self.markPosted(db, .ids(ids), nowMs: Clock.wallMs()) }
        }
    }

    /// Records a failed attempt: retried at `retryAtMs`, or FAILED_POST once `maxAttempts` is
    /// reached (and ends the leases that held them).
    public func markAttemptFailed(_ ids: [String], error: String, retryAtMs: Int64, maxAttempts: Int) throws {
        guard !ids.isEmpty else { return }
        try pool.write { db in
            try Self.endLeases(db, holding: ids)
            try Self.writingOwnRows(db, .ids(ids)) {
                try Self.markAttemptFailed(
                    db, .ids(ids), error: error, retryAtMs: retryAtMs, maxAttempts: maxAttempts, nowMs: Clock.wallMs())
            }
        }
    }

    /// Events left in HOLD by a process that died mid-augmentation become EXPIRED: sent as they were.
    /// Only holds whose holder is no longer running (or that have none, from an older version, or
    /// that are older than `olderThanMs` whatever the holder): another live process on the same
    /// data directory may be augmenting its holds right now, and such an event must not be posted
    /// unaugmented beside it.
    @discardableResult
    public func expireStaleHolds(olderThanMs: Int64) throws -> Int {
        try pool.write { db in
            let holds = try Row.fetchAll(
                db, sql: "SELECT id, holder, updated_ms FROM events WHERE status = ?",
                arguments: [EventStatus.hold.rawValue])
            let now = Clock.wallMs()
            let stale = holds.filter { row in
                let holder: String? = row["holder"]
                let updated: Int64 = row["updated_ms"]
                return updated < olderThanMs || !(holder.map(ProcessIdentity.isRunning) ?? false)
            }.map { $0["id"] as String }
            guard !stale.isEmpty else { return 0 }
            try Self.writingOwnRows(db, .ids(stale)) {
                for id in stale {
                    try db.execute(
                        sql: "UPDATE events SET status = ?, updated_ms = ?, holder = NULL WHERE id = ?",
                        arguments: [EventStatus.expired.rawValue, now, id])
                }
            }
            return stale.count
        }
    }

    /// Claims up to `limit` deliverable events for one delivery attempt: in one write transaction
    /// they are read and a lease until `leaseUntilMs` is taken on them (see claim), so no other
    /// process (or flush) on the same store claims them meanwhile. The attempt ends with
    /// markPosted, markAttemptFailed or release; a process that dies mid-post leaves them to be
    /// claimed again once the lease ends (the idempotency key lets the collector drop the repeat).
    public func claimDeliverable(limit: Int, nowMs: Int64, leaseUntilMs: Int64) throws -> [Event] {
        try pool.write { db in
            let batch = try Self.claim(db, limit: limit, nowMs: nowMs, leaseUntilMs: leaseUntilMs)
            return try batch.events.indices.map { try batch.event(at: $0) }
        }
    }

    /// Ends a claim without an attempt (nothing was sent): the events are deliverable at once.
    public func release(_ ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try pool.write { db in try Self.release(db, ids) }
    }

    /// Deletes SUCCESSFULLY_POSTED events posted before `olderThanMs`: those whose own row says so
    /// by its updated_ms, and those the cursor passed in delivery steps before that time (by
    /// delivery_log's posted_ms). The log rows those steps no longer date are deleted, never the
    /// cursor's; so are the holes whose event is gone or final (nothing can be due there again).
    @discardableResult
    public func purgePosted(olderThanMs: Int64) throws -> Int {
        try pool.write { db in
            try db.execute(
                sql: "DELETE FROM events WHERE status = ? AND updated_ms < ?",
                arguments: [EventStatus.successfullyPosted.rawValue, olderThanMs])
            var purged = db.changesCount
            if let bound = try Int64.fetchOne(db, sql: Self.purgeBoundSQL, arguments: [olderThanMs, olderThanMs]) {
                try db.execute(
                    sql: """
                        DELETE FROM events WHERE status IN \(Self.waitingStatuses) AND seq <= ?
                            AND NOT EXISTS (SELECT 1 FROM delivery_holes h WHERE h.seq = events.seq)
                        """, arguments: [bound])
                purged += db.changesCount
                try db.execute(sql: "DELETE FROM delivery_log WHERE last_seq < ?", arguments: [bound])
            }
            try db.execute(
                sql: """
                    DELETE FROM delivery_holes WHERE NOT EXISTS (
                        SELECT 1 FROM events e WHERE e.seq = delivery_holes.seq AND e.status NOT IN \(Self.finalStatuses))
                    """)
            return purged
        }
    }

    /// The last delivery step purge may forget (arguments: the cut-off, twice): the newest
    /// delivery_log row posted before the cut-off with no row at or after the cut-off before it, so
    /// a clock that stepped back never gets an event purged before its time.
    static let purgeBoundSQL = """
        SELECT MAX(last_seq) FROM delivery_log WHERE posted_ms < ?
            AND last_seq < COALESCE((SELECT MIN(last_seq) FROM delivery_log WHERE posted_ms >= ?), 9223372036854775807)
        """
}
