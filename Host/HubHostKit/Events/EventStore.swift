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
    public static func open(path: String, durability: EventDurability = .fsync) throws -> (store: EventStore, movedAside: String?) {
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
    public let durability: EventDurability

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
        try insert(events, encodedAttributes: events.map { AttributeJSON.encode($0.attributes) }, states: states)
    }

    /// Inserts events whose attributes column was already encoded (`encodedAttributes[i]` for
    /// `events[i]`), so a batch can encode them in parallel before the single writer commits.
    func insert(_ events: [Event], encodedAttributes: [String], states: [(key: String, json: String)]) throws {
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
    func insertStreaming(states: () -> [(key: String, json: String)], next: () throws -> (events: [Event], attributes: [String])?) throws {
        let now = Clock.wallMs()
        try pool.write { db in
            var writer = try EventRowWriter(db)
            while let chunk = try next() {
                for (event, attributes) in zip(chunk.events, chunk.attributes) {
                    try writer.insert(.init(event, attributes: attributes), nowMs: now)
                }
            }
            for state in states() { try KeyValueState.write(db, key: state.key, json: state.json) }
        }
    }

    /// Whether another connection (another process, or another EventStore on the same file)
    /// committed to the database since the previous call; true on the first call. `PRAGMA
    /// data_version` on the writer connection, which this store's own commits never change.
    func committedByAnotherConnection() throws -> Bool {
        let version = try pool.writeWithoutTransaction { db in try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) } ?? -1
        return seenDataVersion.withLock { seen in
            defer { seen = version }
            return seen != version
        }
    }
    private let seenDataVersion = Mutex<Int64?>(nil)

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

    // MARK: Reading

    /// Events ready to send now (NOT_POSTED or EXPIRED, due for an attempt, held by no lease), oldest first.
    public func deliverable(limit: Int, nowMs: Int64 = Clock.wallMs()) throws -> [Event] {
        try pool.read { db in
            var events: [Event] = []
            let cursor = try Self.cursor(db)
            for range in Self.unleasedRanges(try Self.activeLeases(db, nowMs: nowMs)) where events.count < limit {
                for part in Self.parts(of: range, cursor: cursor) where events.count < limit {
                    let asked = limit - events.count
                    events += try Self.events(
                        db, sql: "SELECT * FROM events WHERE seq IN (\(part.holes ? Self.dueHoleSeqsSQL : Self.dueSeqsSQL)) ORDER BY seq",
                        arguments: part.holes
                            ? Self.dueHoleArguments(nowMs: nowMs, limit: asked, in: part.range)
                            : Self.dueArguments(nowMs: nowMs, limit: asked, in: part.range))
                }
            }
            return events
        }
    }

    /// The seqs of the oldest `limit` events due for delivery (NOT_POSTED or EXPIRED, next attempt
    /// reached) inside one seq range, with `dueArguments`. One status at a time in the index's seq
    /// order, each read stopping after `limit` rows, then merged: `status IN (...) ORDER BY seq`
    /// read and sorted them all.
    static let dueSeqsSQL = """
        SELECT seq FROM (SELECT seq FROM events WHERE status = ? AND seq BETWEEN ? AND ? AND next_attempt_ms <= ? ORDER BY seq LIMIT ?)
        UNION ALL
        SELECT seq FROM (SELECT seq FROM events WHERE status = ? AND seq BETWEEN ? AND ? AND next_attempt_ms <= ? ORDER BY seq LIMIT ?)
        ORDER BY seq LIMIT ?
        """

    /// claim's read of one unleased seq range above the cursor, in seq order (the IN list is walked
    /// sorted: no sort step); arguments: `dueArguments`. `package` for `bench sinks`' store ceiling,
    /// as the other delivery statements.
    package static let claimRowsSQL = """
        SELECT seq, id, type, name, timestamp_ms, attributes, status, attempts, traceparent FROM events WHERE seq IN (\(dueSeqsSQL)) ORDER BY seq
        """

    /// The seqs of the oldest `limit` due holes inside one seq range at or below the cursor, with
    /// `dueHoleArguments`: there only a hole can be waiting (see cursor(_:)), so the holes are
    /// walked in seq order and each one's row looked up by its primary key.
    static let dueHoleSeqsSQL = """
        SELECT h.seq FROM delivery_holes h CROSS JOIN events e ON e.seq = h.seq
        WHERE h.seq BETWEEN ? AND ? AND e.status IN \(waitingStatuses) AND e.next_attempt_ms <= ? ORDER BY h.seq LIMIT ?
        """

    /// claim's read of one unleased seq range at or below the cursor, as claimRowsSQL above it;
    /// arguments: `dueHoleArguments`.
    package static let claimHolesSQL = """
        SELECT seq, id, type, name, timestamp_ms, attributes, status, attempts, traceparent FROM events WHERE seq IN (\(dueHoleSeqsSQL)) ORDER BY seq
        """

    package static func dueHoleArguments(nowMs: Int64, limit: Int, in range: ClosedRange<Int64>) -> StatementArguments {
        [range.lowerBound, range.upperBound, nowMs, limit]
    }

    /// A seq range cut at the cursor: the part at or below it, where only holes can be due (`holes`),
    /// then the part above it, read through the status index. No cursor: the whole range, above.
    package static func parts(of range: ClosedRange<Int64>, cursor: Int64?) -> [(range: ClosedRange<Int64>, holes: Bool)] {
        guard let cursor else { return [(range, false)] }
        var parts: [(range: ClosedRange<Int64>, holes: Bool)] = []
        if range.lowerBound <= cursor { parts.append((range.lowerBound...min(range.upperBound, cursor), true)) }
        if range.upperBound > cursor { parts.append((max(range.lowerBound, cursor + 1)...range.upperBound, false)) }
        return parts
    }

    /// The leases still running at a time (argument: now), by their first seq.
    package static let activeLeasesSQL = "SELECT first_seq, last_seq FROM delivery_leases WHERE until_ms > ? ORDER BY first_seq"
    /// A claimed batch's lease; arguments: its first and last seq, its end.
    package static let insertLeaseSQL = "INSERT INTO delivery_leases (first_seq, last_seq, until_ms) VALUES (?, ?, ?)"
    /// Ends one lease; argument: its id.
    package static let endLeaseSQL = "DELETE FROM delivery_leases WHERE id = ?"
    /// Deletes the leases ended by a time (argument); a claim runs it first, which also takes the
    /// write lock before the claim reads anything.
    package static let expireLeasesSQL = "DELETE FROM delivery_leases WHERE until_ms <= ?"

    package static func dueArguments(nowMs: Int64, limit: Int, in range: ClosedRange<Int64> = Int64.min...Int64.max) -> StatementArguments {
        [
            EventStatus.notPosted.rawValue, range.lowerBound, range.upperBound, nowMs, limit,
            EventStatus.expired.rawValue, range.lowerBound, range.upperBound, nowMs, limit, limit
        ]
    }

    /// The seq ranges no lease holds, in order, given the running leases' ranges (any order, maybe
    /// overlapping): what a claim may take from.
    package static func unleasedRanges(_ leases: [(first: Int64, last: Int64)]) -> [ClosedRange<Int64>] {
        var ranges: [ClosedRange<Int64>] = []
        var start: Int64? = Int64.min  // nil once a lease reaches Int64.max
        for lease in leases.sorted(by: { $0.first < $1.first }) where lease.first <= lease.last {
            guard let from = start else { break }
            if lease.first > from { ranges.append(from...(lease.first - 1)) }
            if lease.last == Int64.max { start = nil } else { start = max(from, lease.last + 1) }
        }
        if let from = start { ranges.append(from...Int64.max) }
        return ranges
    }

    static func activeLeases(_ db: Database, nowMs: Int64) throws -> [(first: Int64, last: Int64)] {
        try Row.fetchAll(db.cachedStatement(sql: activeLeasesSQL), arguments: [nowMs]).map { ($0[0], $0[1]) }
    }

    /// How many stored events have `status` (as cursor(_:) decides it). Throws on a database error.
    public func count(status: EventStatus) throws -> Int {
        try pool.read { db in
            let cursor = try Self.cursor(db)
            if let cursor, Self.isWaiting(status) { return try Self.waitingCount(db, status, cursor: cursor) }
            var count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE status = ?", arguments: [status.rawValue]) ?? 0
            if let cursor, status == .successfullyPosted {  // and the waiting rows the cursor passed
                for waiting in EventStatus.allCases where Self.isWaiting(waiting) {
                    count +=
                        (try Int.fetchOne(
                            db, sql: "SELECT COUNT(*) FROM events WHERE status = ? AND seq <= ?", arguments: [waiting.rawValue, cursor]) ?? 0)
                        - (try Self.holeCount(db, waiting))
                }
            }
            return count
        }
    }

    /// How many events with `status` (NOT_POSTED or EXPIRED) still wait: above the cursor, or holes.
    private static func waitingCount(_ db: Database, _ status: EventStatus, cursor: Int64) throws -> Int {
        (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE status = ? AND seq > ?", arguments: [status.rawValue, cursor]) ?? 0)
            + (try holeCount(db, status))
    }

    private static func holeCount(_ db: Database, _ status: EventStatus) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM delivery_holes h CROSS JOIN events e ON e.seq = h.seq WHERE e.status = ?",
            arguments: [status.rawValue]) ?? 0
    }

    /// Whether at least `count` events wait to be sent (NOT_POSTED or EXPIRED, above the cursor or
    /// holes): reads at most `count` index entries and holes, where a full COUNT(*) grows with the store.
    public func waitingAtLeast(_ count: Int) throws -> Bool {
        guard count > 0 else { return true }
        return try pool.read { db in
            // Cached: asked after every group commit, where compiling it was most of its cost.
            try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE status IN \(Self.waitingStatuses) AND seq > ? LIMIT ?))
                            + (SELECT COUNT(*) FROM (
                                SELECT 1 FROM delivery_holes h CROSS JOIN events e ON e.seq = h.seq
                                WHERE e.status IN \(Self.waitingStatuses) LIMIT ?))
                        """),
                arguments: [try Self.cursor(db) ?? Int64.min, count, count]) ?? 0
        } >= count
    }

    /// The newest stored events first, at most `limit`, only those with `status` (as cursor(_:)
    /// decides it) when given. Each status is read through the status index in seq order, as the
    /// claim reads it, so a store of many passed events reads no more than before.
    /// Throws on a database error or an unreadable attributes column.
    public func list(status: EventStatus? = nil, limit: Int = 100) throws -> [StoredEvent] {
        try pool.read { db in
            let newest: String
            switch status {
            case nil:
                newest = "SELECT seq FROM events ORDER BY seq DESC LIMIT :limit"
            case .notPosted?, .expired?:  // above the cursor, and the holes
                newest = """
                    SELECT seq FROM (SELECT seq FROM events WHERE status = :status AND seq > :cursor ORDER BY seq DESC LIMIT :limit)
                    UNION ALL
                    SELECT seq FROM (
                        SELECT h.seq FROM delivery_holes h CROSS JOIN events e ON e.seq = h.seq WHERE e.status = :status
                        ORDER BY h.seq DESC LIMIT :limit)
                    """
            case .successfullyPosted?:  // its own row, and the waiting rows the cursor passed
                let passed = EventStatus.allCases.filter(Self.isWaiting).map { waiting in
                    """
                    SELECT seq FROM (
                        SELECT seq FROM events WHERE status = '\(waiting.rawValue)' AND seq <= :cursor
                            AND NOT EXISTS (SELECT 1 FROM delivery_holes h WHERE h.seq = events.seq)
                        ORDER BY seq DESC LIMIT :limit)
                    """
                }
                newest = (["SELECT seq FROM (SELECT seq FROM events WHERE status = :status ORDER BY seq DESC LIMIT :limit)"] + passed)
                    .joined(separator: " UNION ALL ")
            case .hold?, .failedPost?:
                newest = "SELECT seq FROM events WHERE status = :status ORDER BY seq DESC LIMIT :limit"
            }
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(Self.storedColumnsSQL) FROM events WHERE seq IN (\(newest)) ORDER BY seq DESC LIMIT :limit",
                arguments: ["status": status?.rawValue, "cursor": try Self.cursor(db) ?? Int64.min, "limit": limit])
            return try rows.map(Self.stored)
        }
    }

    /// The stored event with `id`, or nil. Throws on a database error.
    public func event(id: String) throws -> StoredEvent? {
        try pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.storedColumnsSQL) FROM events WHERE id = :id",
                arguments: ["id": id, "cursor": try Self.cursor(db) ?? Int64.min]
            ).map(Self.stored)
        }
    }

    /// Count per status (as cursor(_:) decides it), every status present.
    public func stats() throws -> [EventStatus: Int] {
        try pool.read { db in
            var counts = Dictionary(uniqueKeysWithValues: EventStatus.allCases.map { ($0, 0) })
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS n FROM events GROUP BY status") {
                if let status = EventStatus(rawValue: row["status"]) { counts[status] = row["n"] }
            }
            if let cursor = try Self.cursor(db) {
                for status in EventStatus.allCases where Self.isWaiting(status) {
                    let waiting = try Self.waitingCount(db, status, cursor: cursor)
                    counts[.successfullyPosted, default: 0] += (counts[status] ?? 0) - waiting
                    counts[status] = waiting
                }
            }
            return counts
        }
    }

    // MARK: Delivery statements (inside a write transaction)
    //
    // Each is ONE statement over the whole batch: the seqs (or ids) go in as one JSON array read by
    // json_each, so SQLite loops over the rows in C where a statement per row cost a Swift
    // argument array, its binding and a step for each event.

    /// Which events a delivery statement updates: by seq (what a claim returned: the primary key,
    /// no lookup through the id index) or by id (the public API's callers).
    enum Selection {
        case seqs([Int64])
        case ids([String])

        var isEmpty: Bool {
            switch self {
            case .seqs(let seqs): return seqs.isEmpty
            case .ids(let ids): return ids.isEmpty
            }
        }
        /// The WHERE clause, its one argument the JSON array `json`.
        var clause: String {
            switch self {
            case .seqs: return "seq IN (SELECT value FROM json_each(?))"
            case .ids: return "id IN (SELECT value FROM json_each(?))"
            }
        }
        var json: String {
            switch self {
            case .seqs(let seqs): return "[" + seqs.map(String.init).joined(separator: ",") + "]"
            case .ids(let ids): return jsonArray(ids)
            }
        }
    }

    /// markPosted's statement by seq; arguments: status, now, the seqs as one JSON array. `package`
    /// so that `bench sinks`' store ceiling runs the very statement delivery runs.
    package static let markPostedSQL = markPostedSQL(Selection.seqs([]).clause)

    static func markPostedSQL(_ clause: String) -> String {
        "UPDATE events SET status = ?, attempts = attempts + 1, updated_ms = ?, last_error = NULL WHERE \(clause)"
    }

    static func markPosted(_ db: Database, _ selection: Selection, nowMs: Int64) throws {
        try db.cachedStatement(sql: markPostedSQL(selection.clause))
            .execute(arguments: [EventStatus.successfullyPosted.rawValue, nowMs, selection.json])
    }

    static func markAttemptFailed(_ db: Database, _ selection: Selection, error: String, retryAtMs: Int64, maxAttempts: Int, nowMs: Int64) throws {
        try db.cachedStatement(
            sql: """
                UPDATE events SET attempts = attempts + 1, last_error = ?, updated_ms = ?, next_attempt_ms = ?,
                    status = CASE WHEN attempts + 1 >= ? THEN ? ELSE status END
                WHERE \(selection.clause)
                """
        ).execute(arguments: [error, nowMs, retryAtMs, maxAttempts, EventStatus.failedPost.rawValue, selection.json])
    }

    /// The oldest `limit` deliverable events that no running lease holds, and ONE lease row over
    /// their seq range until `leaseUntilMs`: the claim writes one row, not one per event. The
    /// lease holds the whole range [first, last]: an event inside it that was not due at the claim
    /// (a retry waiting for its backoff, a HOLD) waits for the lease's end too, a short delay and
    /// never a loss. Leases ended more than a moment ago are deleted on the way.
    static func claim(_ db: Database, limit: Int, nowMs: Int64, leaseUntilMs: Int64) throws -> ClaimedBatch {
        try db.cachedStatement(sql: expireLeasesSQL).execute(arguments: [min(nowMs, Clock.wallMs())])
        var batch = ClaimedBatch()
        batch.reserve(limit)
        let cursor = try self.cursor(db)
        // One user's events go out in tracked order: an event whose user has an earlier event
        // waiting out its backoff is not taken before it (other users' events are).
        let waiting = try waitingUsers(db, nowMs: nowMs, cursor: cursor)
        var scanned = 0
        let rows = try db.cachedStatement(sql: claimRowsSQL)
        let holes = try db.cachedStatement(sql: claimHolesSQL)
        // Oldest first: in each unleased range the holes (all at or below the cursor), then above it.
        for range in unleasedRanges(try activeLeases(db, nowMs: nowMs)) where batch.events.count < limit {
            for part in parts(of: range, cursor: cursor) where batch.events.count < limit {
                let statement = part.holes ? holes : rows
                var from = part.range.lowerBound
                // Bounded: each read moves `from` past what it read, and at most maxClaimScan rows are read.
                while batch.events.count < limit, scanned < limit * maxClaimScanFactor {
                    let asked = limit - batch.events.count
                    let read = from...part.range.upperBound
                    // Stepped through SQLite's C API, each column read by position straight into the Event:
                    // GRDB's Row copied every value first (and looked names up, lowercasing them, per row).
                    try statement.setArguments(  // resets, binds
                        part.holes
                            ? dueHoleArguments(nowMs: nowMs, limit: asked, in: read) : dueArguments(nowMs: nowMs, limit: asked, in: read))
                    let stepped = try step(statement, into: &batch, skipping: waiting)
                    scanned += stepped.read
                    // Read on only when rows were passed over and the range may hold more.
                    guard stepped.skipped > 0, stepped.read == asked, stepped.lastSeq < part.range.upperBound else { break }
                    from = stepped.lastSeq + 1
                }
            }
        }
        guard let first = batch.seqs.first, let last = batch.seqs.last else { return batch }
        try db.cachedStatement(sql: insertLeaseSQL).execute(arguments: [first, last, leaseUntilMs])
        batch.lease = db.lastInsertedRowID
        return batch
    }

    /// Steps one of claim's reads (bound), adding its rows to `batch` but those of a user in
    /// `waiting` with an earlier event (counted as skipped). Returns the rows read, the skipped
    /// ones and the last seq read.
    private static func step(
        _ statement: Statement, into batch: inout ClaimedBatch, skipping waiting: [String: Int64]
    ) throws -> (read: Int, skipped: Int, lastSeq: Int64) {
        let handle = statement.sqliteStatement
        let columns = SQLiteColumns(handle: handle)
        let (types, statuses) = (Self.storedTypes, Self.storedStatuses)
        var read = 0
        var skipped = 0
        var lastSeq = Int64.min
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW {
            read += 1
            let seq = sqlite3_column_int64(handle, 0)
            lastSeq = seq
            // Decoded only while some user waits out a backoff; attributes that cannot be read have
            // no user, so no order to keep (the delivery rejects that event).
            if !waiting.isEmpty, let first = waiting[orderKey(attributesJSON: columns.bytes(5))], first < seq {
                skipped += 1
            } else {
                batch.append(
                    seq: seq, id: columns.bytes(1), type: types.value(columns.bytes(2)) ?? .namedEvent, name: columns.bytes(3),
                    timestampMs: sqlite3_column_int64(handle, 4), attributesJSON: columns.bytes(5),
                    status: statuses.value(columns.bytes(6)) ?? .notPosted, attempts: Int(sqlite3_column_int64(handle, 7)),
                    traceparent: columns.optionalText(8))
            }
            code = sqlite3_step(handle)
        }
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
        sqlite3_reset(handle)
        return (read, skipped, lastSeq)
    }

    /// The type and status columns' texts, matched without a String per row.
    static let storedTypes = RawTextTable(EventType.allCases)
    static let storedStatuses = RawTextTable(EventStatus.allCases)

    /// A claim reads at most this many times its limit in rows passed over for order: the rest
    /// waits for the next claim.
    static let maxClaimScanFactor = 20

    /// The key one user's events are kept in order by, as the sinks partition them: the `Mobile
    /// User Id` attribute, else `Device Id`; empty (no order kept) when the event has neither.
    static func orderKey(_ event: Event) -> String { orderKey(event.attributes) }

    /// The order key of stored attributes; "" when they cannot be read.
    static func orderKey(attributesJSON: UnsafeBufferPointer<UInt8>) -> String {
        (try? AttributeJSONReader.decodeOrThrow(String(decoding: attributesJSON, as: UTF8.self))).map(orderKey) ?? ""
    }

    static func orderKey(_ attributes: [Event.Attribute]) -> String {
        for name in ["Mobile User Id", "Device Id"] {
            if let value = attributes.first(where: { $0.name == name })?.value {
                let text = CollectorJSON.text(value)
                if !text.isEmpty { return text }
            }
        }
        return ""
    }

    /// The order key of every event waiting out a backoff (due later), with its user's first
    /// such seq. Read through the partial index `events_backoff`: nothing is read when no event
    /// waits, the usual case.
    static let waitingUsersSQL = """
        SELECT key, MIN(seq) FROM (
            SELECT seq, COALESCE(
                (SELECT NULLIF(CAST(json_extract(a.value, '$.value.value') AS TEXT), '') FROM json_each(events.attributes) a
                    WHERE json_extract(a.value, '$.name') = 'Mobile User Id'),
                (SELECT NULLIF(CAST(json_extract(a.value, '$.value.value') AS TEXT), '') FROM json_each(events.attributes) a
                    WHERE json_extract(a.value, '$.name') = 'Device Id')) AS key
            FROM events INDEXED BY events_backoff WHERE status IN (?, ?) AND next_attempt_ms > 0 AND next_attempt_ms > ?
                AND (seq > ? OR EXISTS (SELECT 1 FROM delivery_holes h WHERE h.seq = events.seq)))
        WHERE key IS NOT NULL GROUP BY key
        """

    /// (An event the cursor passed is delivered whatever its next_attempt_ms says: not waiting.)
    static func waitingUsers(_ db: Database, nowMs: Int64, cursor: Int64?) throws -> [String: Int64] {
        var users: [String: Int64] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: waitingUsersSQL),
            arguments: [EventStatus.notPosted.rawValue, EventStatus.expired.rawValue, nowMs, cursor ?? Int64.min])
        while let row = try rows.next() {
            if let key = row[0] as String? { users[key] = row[1] }
        }
        return users
    }

    static func endLease(_ db: Database, _ lease: Int64) throws {
        try db.cachedStatement(sql: endLeaseSQL).execute(arguments: [lease])
    }

    /// Ends every lease holding one of `ids` (the public API's callers know ids, not leases).
    static func endLeases(_ db: Database, holding ids: [String]) throws {
        try db.cachedStatement(
            sql: """
                DELETE FROM delivery_leases WHERE id IN (
                    SELECT delivery_leases.id FROM delivery_leases JOIN events
                    ON events.seq BETWEEN delivery_leases.first_seq AND delivery_leases.last_seq
                    WHERE events.id IN (SELECT value FROM json_each(?)))
                """
        ).execute(arguments: [jsonArray(ids)])
    }

    /// Ends the claims of `ids` without an attempt: their leases end, and a v5 store's lease on
    /// the row itself (next_attempt_ms in the future) too, as release always did.
    static func release(_ db: Database, _ ids: [String]) throws {
        try endLeases(db, holding: ids)
        try writingOwnRows(db, .ids(ids)) {
            try db.cachedStatement(sql: "UPDATE events SET next_attempt_ms = 0 WHERE id IN (SELECT value FROM json_each(?))")
                .execute(arguments: [jsonArray(ids)])
        }
    }

    /// `["id1","id2",...]`, each id a JSON string (ids given by callers may hold any character).
    static func jsonArray(_ ids: [String]) -> String { SQLiteJSONList.strings(ids) }

    // MARK: The delivered cursor

    /// The delivered cursor: the largest delivery_log.last_seq, nil before any delivery step passed
    /// an event. Every event's status follows from ONE rule:
    ///
    /// An event whose row says NOT_POSTED or EXPIRED, with seq <= cursor and no delivery_holes row,
    /// IS SUCCESSFULLY_POSTED: its attempts are its row's + 1, it has no last error, and its
    /// updated_ms is the posted_ms of the first delivery_log row with last_seq >= its seq. Every
    /// other event's row is its truth.
    ///
    /// So a delivered batch costs one delivery_log row (recordDelivered moves the cursor to its
    /// last seq) instead of a row rewrite per event. What keeps the rule true:
    /// - moving the cursor, every row it passes that is waiting or in HOLD and was not delivered
    ///   (a retry in backoff, another process's claim, a HOLD) gets a hole, so its row stays its truth;
    /// - any per-event write to a row at or below the cursor goes through writingOwnRows, which
    ///   first writes a passed event's status into its row and makes it a hole;
    /// - a new row never takes a seq at or below the cursor (EventRowWriter);
    /// - purge deletes a log row only with the passed events it dates, and never the cursor's.
    static func cursor(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: cursorSQL))
    }

    /// The cursor: MAX over the primary key, one b-tree descent.
    package static let cursorSQL = "SELECT MAX(last_seq) FROM delivery_log"

    /// The statuses waiting to be sent, and the final ones, as SQL lists (constants: the enum's raw values).
    static let waitingStatuses = "('\(EventStatus.notPosted.rawValue)', '\(EventStatus.expired.rawValue)')"
    static let finalStatuses = "('\(EventStatus.successfullyPosted.rawValue)', '\(EventStatus.failedPost.rawValue)')"

    static func isWaiting(_ status: EventStatus) -> Bool { status == .notPosted || status == .expired }

    /// The columns list, read, event(id:) select (named argument :cursor, Int64.min for none):
    /// every column, and delivered_ms, the time the cursor passed the event when the rule makes it
    /// SUCCESSFULLY_POSTED, else NULL (see stored).
    static let storedColumnsSQL = """
        events.*, CASE WHEN events.status IN \(waitingStatuses) AND events.seq <= :cursor
            AND NOT EXISTS (SELECT 1 FROM delivery_holes h WHERE h.seq = events.seq)
            THEN COALESCE((SELECT posted_ms FROM delivery_log WHERE last_seq >= events.seq ORDER BY last_seq LIMIT 1), events.updated_ms)
            END AS delivered_ms
        """

    /// Runs `write`, a per-event write on the rows of `selection`, so that the rule of cursor(_:)
    /// gives each of them what its row then says: before it, a row the cursor passed and holds
    /// delivered gets that status written into its own columns (so a write that keeps the status,
    /// such as release, keeps SUCCESSFULLY_POSTED), and every row at or below the cursor becomes a
    /// hole; after it, the holes of rows now final are dropped (nothing is due there again, and a
    /// claim reads every hole of its range). Rows above the cursor cost nothing more.
    static func writingOwnRows(_ db: Database, _ selection: Selection, _ write: () throws -> Void) throws {
        guard let cursor = try cursor(db) else { return try write() }
        let seqs: [Int64]
        switch selection {
        case .seqs(let given): seqs = given.filter { $0 <= cursor }
        case .ids(let ids):
            seqs = try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT seq FROM events WHERE id IN (SELECT value FROM json_each(?))"), arguments: [jsonArray(ids)]
            ).filter { $0 <= cursor }
        }
        guard !seqs.isEmpty else { return try write() }
        let json = Selection.seqs(seqs).json
        // `+status`: the rows are found by their seqs alone; the status index would read every waiting row.
        try db.cachedStatement(
            sql: """
                UPDATE events SET status = '\(EventStatus.successfullyPosted.rawValue)', attempts = attempts + 1, last_error = NULL,
                    updated_ms = COALESCE(
                        (SELECT posted_ms FROM delivery_log WHERE last_seq >= events.seq ORDER BY last_seq LIMIT 1), updated_ms)
                WHERE seq IN (SELECT value FROM json_each(?)) AND +status IN \(waitingStatuses)
                    AND NOT EXISTS (SELECT 1 FROM delivery_holes h WHERE h.seq = events.seq)
                """
        ).execute(arguments: [json])
        try db.cachedStatement(sql: insertHolesSQL).execute(arguments: [json])
        try write()
        try db.cachedStatement(
            sql: """
                DELETE FROM delivery_holes WHERE seq IN (
                    SELECT seq FROM events WHERE seq IN (SELECT value FROM json_each(?)) AND +status IN \(finalStatuses))
                """
        ).execute(arguments: [json])
    }

    /// The rows a cursor move passes (arguments: the old cursor, Int64.min for none, and the new
    /// one) that can matter: waiting (0), HOLD (1) or FAILED_POST (2). Only the status index is
    /// read (it holds status and seq): no event row is touched. `package`, as the statements below,
    /// for `bench sinks`' store ceiling.
    package static let passedRowsSQL = """
        SELECT seq, CASE status WHEN '\(EventStatus.hold.rawValue)' THEN 1 WHEN '\(EventStatus.failedPost.rawValue)' THEN 2 ELSE 0 END
        FROM events INDEXED BY events_by_status_seq
        WHERE status IN ('\(EventStatus.notPosted.rawValue)', '\(EventStatus.expired.rawValue)', '\(EventStatus.hold.rawValue)',
            '\(EventStatus.failedPost.rawValue)') AND seq > ? AND seq <= ?
        """
    /// Holes for the seqs of one JSON array (argument).
    package static let insertHolesSQL = "INSERT OR IGNORE INTO delivery_holes (seq) SELECT value FROM json_each(?)"
    /// A delivery step's row; arguments: the new cursor, the time.
    package static let insertDeliveryLogSQL = "INSERT INTO delivery_log (last_seq, posted_ms) VALUES (?, ?)"

    /// Records that the events `seqs` were delivered, inside a delivery step's transaction (after
    /// its failures, so that a retry the cursor passes is found waiting and made a hole). Those at
    /// or below the cursor (holes, or another process's claim the cursor passed) one by one, as
    /// markPosted; those above it by moving the cursor to the largest: the rows passed read from
    /// the status index alone, a hole for each one still waiting or in HOLD that is not among
    /// `seqs`, one delivery_log row. A delivered row in HOLD or FAILED_POST (written meanwhile by a
    /// per-event call) is written SUCCESSFULLY_POSTED, as markPosted would have.
    static func recordDelivered(_ db: Database, _ seqs: [Int64], nowMs: Int64) throws {
        let cursor = try self.cursor(db)
        let old = cursor ?? Int64.min
        let below = seqs.filter { $0 <= old }
        if !below.isEmpty { try writingOwnRows(db, .seqs(below)) { try markPosted(db, .seqs(below), nowMs: nowMs) } }
        let above = seqs.filter { $0 > old }.sorted()
        guard let new = above.last else { return }
        let handle = try db.cachedStatement(sql: passedRowsSQL).sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_int64(handle, 1, old)
        sqlite3_bind_int64(handle, 2, new)
        var holes: [Int64] = []
        var ownStatus: [Int64] = []
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW {
            let seq = sqlite3_column_int64(handle, 0)
            let kind = sqlite3_column_int(handle, 1)
            if contains(sorted: above, seq) {
                if kind != 0 { ownStatus.append(seq) }
            } else if kind != 2 {
                holes.append(seq)
            }
            code = sqlite3_step(handle)
        }
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: passedRowsSQL)
        }
        sqlite3_reset(handle)
        if !holes.isEmpty { try db.cachedStatement(sql: insertHolesSQL).execute(arguments: [Selection.seqs(holes).json]) }
        if !ownStatus.isEmpty { try markPosted(db, .seqs(ownStatus), nowMs: nowMs) }
        try db.cachedStatement(sql: insertDeliveryLogSQL).execute(arguments: [new, nowMs])
    }

    /// Whether the ascending `array` holds `value` (a binary search).
    private static func contains(sorted array: [Int64], _ value: Int64) -> Bool {
        var low = 0
        var high = array.count
        while low < high {
            let middle = (low + high) / 2
            if array[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < array.count && array[low] == value
    }

    // MARK: Encoding

    static func events(_ db: Database, sql: String, arguments: StatementArguments) throws -> [Event] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).map { try stored($0).event }
    }

    /// A row as stored: with `storedColumnsSQL`'s delivered_ms, an event the cursor passed is
    /// SUCCESSFULLY_POSTED as cursor(_:) says; without it, the row's own columns.
    static func stored(_ row: Row) throws -> StoredEvent {
        let attributes = try AttributeJSONReader.decodeOrThrow(row["attributes"])
        let event = Event(
            id: row["id"], type: EventType(rawValue: row["type"]) ?? .namedEvent, name: row["name"],
            timestampMs: row["timestamp_ms"], attributes: attributes,
            status: EventStatus(rawValue: row["status"]) ?? .notPosted, attempts: row["attempts"], traceparent: row["traceparent"])
        var stored = StoredEvent(event: event, createdMs: row["created_ms"], updatedMs: row["updated_ms"], lastError: row["last_error"])
        if let postedMs = row["delivered_ms"] as Int64? {
            stored.event.status = .successfullyPosted
            stored.event.attempts += 1
            stored.updatedMs = postedMs
            stored.lastError = nil
        }
        return stored
    }
}

/// An event as stored, with its bookkeeping.
public struct StoredEvent: Codable, Equatable, Sendable {
    /// The event with its current status and attempts.
    public var event: Event
    /// When it was stored, in ms since 1970.
    public var createdMs: Int64
    /// When its row last changed (status, attempts), in ms since 1970.
    public var updatedMs: Int64
    /// The last delivery error, if any.
    public var lastError: String?
}
