import Foundation
import GRDB
import GRDBSQLite
import HubHostKit

/// The store ceiling of `hubhost bench sinks`: how many events per second the event store's own
/// part of a delivery can reach on this machine, with no sink and none of hubhost's Swift around
/// it. Plain SQLite on a scratch file with the store's real schema and index (a real EventStore
/// opened on it: WAL, synchronous = FULL), driven by raw SQL on prepared statements through
/// SQLite's C API, as `bench events`' baseline inserts through EventRowWriter. Per batch, ONE
/// transaction as in the delivery pipeline (EventDelivery): the record of the batch the sink
/// answered (claimed two transactions before: one batch is always in flight) and the end of its
/// lease, then the claim of the next batch (the running leases read, the due rows read from the
/// ranges they leave, one lease row written). No sink can deliver faster than this through a
/// durable store.
///
/// `recording` says how the answered batch is recorded: by the delivered cursor, as delivery does
/// (EventStore.recordDelivered: the range passed read from the status index, one delivery_log
/// row), or by a status per event, as the store did before the cursor (one UPDATE rewriting every
/// delivered row), kept as the figure the cursor is measured against.
struct SinkStoreCeiling {
    var batchSize: Int
    var recording: Recording = .cursor

    /// How an answered batch is recorded.
    enum Recording: Sendable {
        /// The delivered cursor: the store's statements today.
        case cursor
        /// A status per event: markPosted's UPDATE by seq, as every batch was before the cursor.
        case statusPerEvent
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// The store's own delivery statements, so that the ceiling runs exactly what delivery runs.
    static let claimRowsSQL = EventStore.claimRowsSQL
    static let claimHolesSQL = EventStore.claimHolesSQL
    static let postedSQL = EventStore.markPostedSQL
    static let passedRowsSQL = EventStore.passedRowsSQL

    /// Inserts `events` (untimed) into a store at `path`, then times their delivery's store work;
    /// returns events per second. Throws when an event is left unposted.
    func run(events: [Event], path: String) throws -> Double {
        let store = try EventStore.open(path: path).store  // the real schema, index and settings
        let rows = events.map { EventRowWriter.Row($0, attributes: AttributeJSON.encodeUTF8($0.attributes)) }
        for start in stride(from: 0, to: rows.count, by: 1000) {
            try store.pool.write { db in
                var writer = try EventRowWriter(db)
                for row in rows[start..<min(start + 1000, rows.count)] { try writer.insert(row, nowMs: Clock.wallMs()) }
            }
        }

        let start = Clock.monotonicNs()
        var inFlight: (seqs: [Int64], lease: Int64?) = ([], nil)
        var answered: (seqs: [Int64], lease: Int64?) = ([], nil)
        var drained = false
        for _ in 0..<(events.count / max(1, batchSize) + 4) {  // bounded: one batch per round, two rounds to drain
            let now = Clock.wallMs()
            let leaseUntil = now + 190_000  // the delivery's lease (3 post timeouts + 10 s) at the bench's post_timeout of 60 s
            let claimed = try store.pool.write { db -> (seqs: [Int64], lease: Int64?) in
                if !answered.seqs.isEmpty {
                    switch recording {
                    case .cursor: try Self.recordDelivered(db, answered.seqs, nowMs: now)
                    case .statusPerEvent: try Self.markPosted(db, answered.seqs, nowMs: now)
                    }
                }
                if let lease = answered.lease { try db.cachedStatement(sql: EventStore.endLeaseSQL).execute(arguments: [lease]) }
                return try drained
                    ? ([], nil) : Self.claim(db, limit: batchSize, nowMs: now, leaseUntilMs: leaseUntil, cursor: recording == .cursor)
            }
            drained = drained || claimed.seqs.isEmpty
            answered = inFlight
            inFlight = claimed
            if answered.seqs.isEmpty && inFlight.seqs.isEmpty && drained { break }
        }
        let seconds = Double(Clock.monotonicNs() - start) / 1e9
        let posted = try store.count(status: .successfullyPosted)
        guard posted == events.count else { throw Failure(description: "store ceiling: \(posted) of \(events.count) events posted") }
        return Double(posted) / max(seconds, 1e-9)
    }

    /// The store's claim (EventStore.claim): leases ended a while ago deleted, the running ones
    /// read, the due rows stepped from the ranges they leave (reading each row's seq, id and the
    /// attributes' text, what the sink is given; the other columns stay in SQLite), one lease row
    /// written. With `cursor`, the cursor is read and each range cut at it, the part at or below it
    /// read from the holes (EventStore.parts); without, as the store claimed before the cursor.
    /// Returns the seqs and the lease.
    static func claim(_ db: Database, limit: Int, nowMs: Int64, leaseUntilMs: Int64, cursor: Bool) throws -> (seqs: [Int64], lease: Int64?) {
        try db.cachedStatement(sql: EventStore.expireLeasesSQL).execute(arguments: [nowMs])
        let leases = try Row.fetchAll(db.cachedStatement(sql: EventStore.activeLeasesSQL), arguments: [nowMs]).map {
            (first: $0[0] as Int64, last: $0[1] as Int64)
        }
        let position = cursor ? try Self.cursor(db) : nil
        let rows = try db.cachedStatement(sql: claimRowsSQL).sqliteStatement
        let holes = try db.cachedStatement(sql: claimHolesSQL).sqliteStatement
        var seqs: [Int64] = []
        seqs.reserveCapacity(limit)
        for range in EventStore.unleasedRanges(leases) where seqs.count < limit {
            for part in EventStore.parts(of: range, cursor: position) where seqs.count < limit {
                let handle = part.holes ? holes : rows
                sqlite3_reset(handle)
                let asked = Int64(limit - seqs.count)
                if part.holes {
                    for (index, value) in [part.range.lowerBound, part.range.upperBound, nowMs, asked].enumerated() {
                        sqlite3_bind_int64(handle, Int32(index + 1), value)
                    }
                } else {
                    for (offset, status) in [EventStatus.notPosted, .expired].enumerated() {
                        let first = Int32(1 + 5 * offset)
                        sqlite3_bind_text(handle, first, status.rawValue, -1, transient)
                        sqlite3_bind_int64(handle, first + 1, part.range.lowerBound)
                        sqlite3_bind_int64(handle, first + 2, part.range.upperBound)
                        sqlite3_bind_int64(handle, first + 3, nowMs)
                        sqlite3_bind_int64(handle, first + 4, asked)
                    }
                    sqlite3_bind_int64(handle, 11, asked)
                }
                var code = sqlite3_step(handle)
                while code == SQLITE_ROW {
                    seqs.append(sqlite3_column_int64(handle, 0))
                    _ = String(cString: sqlite3_column_text(handle, 1))
                    _ = sqlite3_column_bytes(handle, 5)
                    code = sqlite3_step(handle)
                }
                try check(code, handle, part.holes ? claimHolesSQL : claimRowsSQL)
            }
        }
        guard let first = seqs.first, let last = seqs.last else { return ([], nil) }
        try db.cachedStatement(sql: EventStore.insertLeaseSQL).execute(arguments: [first, last, leaseUntilMs])
        return (seqs, db.lastInsertedRowID)
    }

    /// The store's cursor (EventStore.cursorSQL), nil before the first delivered batch.
    static func cursor(_ db: Database) throws -> Int64? {
        let handle = try db.cachedStatement(sql: EventStore.cursorSQL).sqliteStatement
        sqlite3_reset(handle)
        guard sqlite3_step(handle) == SQLITE_ROW else { throw Failure(description: "store ceiling: the cursor could not be read") }
        let cursor = sqlite3_column_type(handle, 0) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, 0)
        sqlite3_reset(handle)
        return cursor
    }

    /// The delivered cursor's record of a batch (EventStore.recordDelivered): the rows between
    /// the cursor and the batch's last seq read from the status index, a hole for each one passed
    /// over (none in this run: one process delivers every batch in order), one delivery_log row.
    static func recordDelivered(_ db: Database, _ seqs: [Int64], nowMs: Int64) throws {
        let old = try cursor(db) ?? Int64.min
        guard let new = seqs.last, seqs.first.map({ $0 > old }) ?? false else {
            throw Failure(description: "store ceiling: a batch at or below the cursor")
        }
        let handle = try db.cachedStatement(sql: passedRowsSQL).sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_int64(handle, 1, old)
        sqlite3_bind_int64(handle, 2, new)
        var holes: [Int64] = []
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW {
            let seq = sqlite3_column_int64(handle, 0)
            // The store's test: a binary search of the sorted batch.
            var low = 0
            var high = seqs.count
            while low < high {
                let middle = (low + high) / 2
                if seqs[middle] < seq { low = middle + 1 } else { high = middle }
            }
            let delivered = low < seqs.count && seqs[low] == seq
            if !delivered, sqlite3_column_int(handle, 1) != 2 { holes.append(seq) }
            code = sqlite3_step(handle)
        }
        try check(code, handle, passedRowsSQL)
        if !holes.isEmpty {
            try db.cachedStatement(sql: EventStore.insertHolesSQL).execute(arguments: ["[" + holes.map(String.init).joined(separator: ",") + "]"])
        }
        try db.cachedStatement(sql: EventStore.insertDeliveryLogSQL).execute(arguments: [new, nowMs])
    }

    static func markPosted(_ db: Database, _ seqs: [Int64], nowMs: Int64) throws {
        let handle = try db.cachedStatement(sql: postedSQL).sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_text(handle, 1, EventStatus.successfullyPosted.rawValue, -1, transient)
        sqlite3_bind_int64(handle, 2, nowMs)
        sqlite3_bind_text(handle, 3, "[" + seqs.map(String.init).joined(separator: ",") + "]", -1, transient)
        try check(sqlite3_step(handle), handle, postedSQL)
    }

    /// SQLite copies the bound text (SQLITE_TRANSIENT): the Swift strings are temporaries.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    private static func check(_ code: Int32, _ handle: OpaquePointer, _ sql: String) throws {
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
    }
}
