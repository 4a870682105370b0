import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The statements a delivery runs inside its write transaction (claims, marks, leases), and the
/// delivered cursor that makes a delivered batch SUCCESSFULLY_POSTED without a write per event.
extension EventStore {
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
}
