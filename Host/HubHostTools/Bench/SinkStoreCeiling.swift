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
/// sink answered (claimed two transactions before: one batch is always in flight) and the claim
/// of the next batch with its lease. No sink can deliver faster than this through a durable store.
struct SinkStoreCeiling {
    var batchSize: Int

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// The store's own delivery statements, so that the ceiling runs exactly what delivery runs.
    static let claimSQL = EventStore.claimSQL
    static let postedSQL = EventStore.markPostedSQL

    /// Inserts `events` (untimed) into a store at `path`, then times their delivery's store work;
    /// returns events per second. Throws when an event is left unposted.
    func run(events: [Event], path: String) throws -> Double {
        let store = try EventStore.open(path: path).store  // the real schema, index and settings
        let rows = events.map { EventRowWriter.Row($0, attributes: AttributeJSON.encode($0.attributes)) }
        for start in stride(from: 0, to: rows.count, by: 1000) {
            try store.pool.write { db in
                let writer = try EventRowWriter(db)
                for row in rows[start..<min(start + 1000, rows.count)] { try writer.insert(row, nowMs: Clock.wallMs()) }
            }
        }

        let start = Clock.monotonicNs()
        var inFlight: [String] = [], answered: [String] = []
        var drained = false
        for _ in 0..<(events.count / max(1, batchSize) + 4) {  // bounded: one batch per round, two rounds to drain
            let now = Clock.wallMs()
            let leaseUntil = now + 190_000  // the delivery's lease (3 post timeouts + 10 s) at the bench's post_timeout of 60 s
            let claimed = try store.pool.write { db -> [String] in
                if !answered.isEmpty { try Self.markPosted(db, answered, nowMs: now) }
                return try drained ? [] : Self.claim(db, limit: batchSize, nowMs: now, leaseUntilMs: leaseUntil)
            }
            drained = drained || claimed.isEmpty
            answered = inFlight
            inFlight = claimed
            if answered.isEmpty && inFlight.isEmpty && drained { break }
        }
        let seconds = Double(Clock.monotonicNs() - start) / 1e9
        let posted = try store.count(status: .successfullyPosted)
        guard posted == events.count else { throw Failure(description: "store ceiling: \(posted) of \(events.count) events posted") }
        return Double(posted) / max(seconds, 1e-9)
    }

    /// Steps the claim, reading each row's id (the status update needs it) and the attributes' text
    /// (what the sink is given); the other columns stay in SQLite.
    static func claim(_ db: Database, limit: Int, nowMs: Int64, leaseUntilMs: Int64) throws -> [String] {
        let handle = try db.cachedStatement(sql: claimSQL).sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_int64(handle, 1, leaseUntilMs)
        for (offset, status) in [EventStatus.notPosted, .expired].enumerated() {
            let first = Int32(2 + 3 * offset)
            sqlite3_bind_text(handle, first, status.rawValue, -1, transient)
            sqlite3_bind_int64(handle, first + 1, nowMs)
            sqlite3_bind_int64(handle, first + 2, Int64(limit))
        }
        sqlite3_bind_int64(handle, 8, Int64(limit))
        var ids: [String] = []
        ids.reserveCapacity(limit)
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW {
            ids.append(String(cString: sqlite3_column_text(handle, 1)))
            _ = sqlite3_column_bytes(handle, 5)
            code = sqlite3_step(handle)
        }
        try check(code, handle, claimSQL)
        return ids
    }

    static func markPosted(_ db: Database, _ ids: [String], nowMs: Int64) throws {
        let handle = try db.cachedStatement(sql: postedSQL).sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_text(handle, 1, EventStatus.successfullyPosted.rawValue, -1, transient)
        sqlite3_bind_int64(handle, 2, nowMs)
        // Event ids are UUIDs: no character needs escaping inside a JSON string.
        sqlite3_bind_text(handle, 3, "[\"" + ids.joined(separator: "\",\"") + "\"]", -1, transient)
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
