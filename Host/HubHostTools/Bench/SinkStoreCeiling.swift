import Foundation
import GRDB
import GRDBSQLite
import HubHostKit

/// The store ceiling of `hubhost bench sinks`: how many events per second the event store's own
/// part of a delivery can reach on this machine, with no sink and none of hubhost's Swift around
/// it. Plain SQLite on a scratch file with the store's real schema and index (a real EventStore
/// opened on it: WAL, synchronous = FULL), driven by raw SQL on prepared statements through
/// SQLite's C API, as `bench events`' baseline inserts through EventRowWriter. Per batch, ONE
/// transaction as in the delivery pipeline (EventDelivery): the status update of the batch the
/// sink answered (claimed two transactions before: one batch is always in flight) and the end of
/// its lease, then the claim of the next batch (the running leases read, the due rows read from
/// the ranges they leave, one lease row written). No sink can deliver faster than this through a
/// durable store.
struct SinkStoreCeiling {
    var batchSize: Int

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// The store's own delivery statements, so that the ceiling runs exactly what delivery runs.
    static let claimRowsSQL = EventStore.claimRowsSQL
    static let postedSQL = EventStore.markPostedSQL

    /// Inserts `events` (untimed) into a store at `path`, then times their delivery's store work;
    /// returns events per second. Throws when an event is left unposted.
    func run(events: [Event], path: String) throws -> Double {
        let store = try EventStore.open(path: path).store  // the real schema, index and settings
        let rows = events.map { EventRowWriter.Row($0, attributes: AttributeJSON.encode($0.attributes)) }
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
                if !answered.seqs.isEmpty { try Self.markPosted(db, answered.seqs, nowMs: now) }
                if let lease = answered.lease { try db.cachedStatement(sql: EventStore.endLeaseSQL).execute(arguments: [lease]) }
                return try drained ? ([], nil) : Self.claim(db, limit: batchSize, nowMs: now, leaseUntilMs: leaseUntil)
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
    /// written. Returns the seqs and the lease.
    static func claim(_ db: Database, limit: Int, nowMs: Int64, leaseUntilMs: Int64) throws -> (seqs: [Int64], lease: Int64?) {
        try db.cachedStatement(sql: EventStore.expireLeasesSQL).execute(arguments: [nowMs])
        let leases = try Row.fetchAll(db.cachedStatement(sql: EventStore.activeLeasesSQL), arguments: [nowMs]).map {
            (first: $0[0] as Int64, last: $0[1] as Int64)
        }
        let handle = try db.cachedStatement(sql: claimRowsSQL).sqliteStatement
        var seqs: [Int64] = []
        seqs.reserveCapacity(limit)
        for range in EventStore.unleasedRanges(leases) where seqs.count < limit {
            sqlite3_reset(handle)
            for (offset, status) in [EventStatus.notPosted, .expired].enumerated() {
                let first = Int32(1 + 5 * offset)
                sqlite3_bind_text(handle, first, status.rawValue, -1, transient)
                sqlite3_bind_int64(handle, first + 1, range.lowerBound)
                sqlite3_bind_int64(handle, first + 2, range.upperBound)
                sqlite3_bind_int64(handle, first + 3, nowMs)
                sqlite3_bind_int64(handle, first + 4, Int64(limit - seqs.count))
            }
            sqlite3_bind_int64(handle, 11, Int64(limit - seqs.count))
            var code = sqlite3_step(handle)
            while code == SQLITE_ROW {
                seqs.append(sqlite3_column_int64(handle, 0))
                _ = String(cString: sqlite3_column_text(handle, 1))
                _ = sqlite3_column_bytes(handle, 5)
                code = sqlite3_step(handle)
            }
            try check(code, handle, claimRowsSQL)
        }
        guard let first = seqs.first, let last = seqs.last else { return ([], nil) }
        try db.cachedStatement(sql: EventStore.insertLeaseSQL).execute(arguments: [first, last, leaseUntilMs])
        return (seqs, db.lastInsertedRowID)
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
