import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The store's reads: what is deliverable, counts and lists, one event, and rows decoded into events.
extension EventStore {
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
