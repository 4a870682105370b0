import Foundation
import GRDB
import GRDBSQLite

/// Inserts event rows with SQLite's C binding API on one prepared statement. Each text is bound
/// straight from the Swift string's UTF-8 storage (SQLITE_STATIC, valid for the step), with no
/// DatabaseValue boxing per column: at tens of thousands of rows per batch this boxing, not SQLite,
/// was the larger part of the insert's cost. Used inside a GRDB write transaction.
package struct EventRowWriter {
    /// The last argument, seq, is NULL (SQLite gives the largest seq + 1) but for the first row
    /// when that would not be above the delivered cursor (see init).
    static let insertSQL = """
        INSERT INTO events (id, type, name, timestamp_ms, attributes, status, attempts, created_ms, updated_ms, seq, traceparent)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    package struct Row {
        var id: String
        var type: String
        var name: String
        package var timestampMs: Int64
        /// The attributes column's JSON (`AttributeJSON.encodeUTF8`), bound as text: a slice, as
        /// a batch's events are encoded into one array per run (`AttributeJSON.appendUTF8`).
        var attributes: ArraySlice<UInt8>
        var status: String
        var attempts: Int
        /// NULL when the event has none (the usual case).
        var traceparent: String? = nil
    }

    private let statement: Statement
    // Safe to share: one byte allocated once and never written; SQLite only reads it.
    nonisolated(unsafe) private static let empty: UnsafePointer<CChar> = UnsafePointer(strdup("")!)

    /// The seq of the next row, when SQLite's own (the largest + 1) would not be above the cursor.
    private var nextSeq: Int64?

    package init(_ db: Database) throws {
        statement = try db.cachedStatement(sql: Self.insertSQL)
        // An event at or below the delivered cursor with no hole is taken as delivered (see
        // EventStore.cursor). Purge may delete the newest events, the cursor's among them, and
        // SQLite would then give a new row a seq the cursor already passed: the first row takes the
        // seq after the cursor instead, and the rows after it follow it.
        // Both maxima in one statement read through the C API: at a group commit's few rows, two
        // GRDB fetches were a sizeable part of the batch's own instructions.
        let (cursor, largestSeq) = try Self.cursorAndLargestSeq(db)
        if let cursor, cursor >= largestSeq ?? Int64.min {
            nextSeq = cursor + 1
        }
    }

    /// The delivered cursor (EventStore.cursorSQL) and the largest seq stored, in one statement.
    static let cursorsSQL = "SELECT (\(EventStore.cursorSQL)), (SELECT MAX(seq) FROM events)"

    /// The two values of `cursorsSQL`, each nil when its table has no row.
    private static func cursorAndLargestSeq(_ db: Database) throws -> (cursor: Int64?, largestSeq: Int64?) {
        let handle = try db.cachedStatement(sql: cursorsSQL).sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        let code = sqlite3_step(handle)
        guard code == SQLITE_ROW else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))), sql: cursorsSQL)
        }
        func value(_ column: Int32) -> Int64? { sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column) }
        return (value(0), value(1))
    }

    /// Inserts one row; `nowMs` becomes created_ms and updated_ms. Throws the database's error.
    package mutating func insert(_ row: Row, nowMs: Int64) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        if let nextSeq { sqlite3_bind_int64(handle, 10, nextSeq) } else { sqlite3_bind_null(handle, 10) }
        var row = row
        // Bound as a copy (SQLITE_TRANSIENT): rare, and it keeps the nesting below as it was.
        if let traceparent = row.traceparent {
            sqlite3_bind_text(handle, 11, traceparent, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        } else {
            sqlite3_bind_null(handle, 11)
        }
        let code: Int32 = bindText(handle, 1, &row.id) {
            bindText(handle, 2, &row.type) {
                bindText(handle, 3, &row.name) {
                    bindText(handle, 5, row.attributes) {
                        bindText(handle, 6, &row.status) {
                            sqlite3_bind_int64(handle, 4, row.timestampMs)
                            sqlite3_bind_int64(handle, 7, Int64(row.attempts))
                            sqlite3_bind_int64(handle, 8, nowMs)
                            sqlite3_bind_int64(handle, 9, nowMs)
                            return sqlite3_step(handle)
                        }
                    }
                }
            }
        }
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: Self.insertSQL)
        }
        nextSeq = nil
    }

    /// Binds `text` as parameter `index` for the duration of `body` (the storage is borrowed, so the
    /// statement must be stepped inside `body`).
    private func bindText(_ handle: OpaquePointer, _ index: Int32, _ text: inout String, _ body: () -> Int32) -> Int32 {
        text.withUTF8 { bindText(handle, index, $0, body) }
    }

    /// Binds UTF-8 `bytes` as text parameter `index` for the duration of `body`, as above.
    private func bindText(_ handle: OpaquePointer, _ index: Int32, _ bytes: ArraySlice<UInt8>, _ body: () -> Int32) -> Int32 {
        bytes.withUnsafeBufferPointer { bindText(handle, index, $0, body) }
    }

    private func bindText(_ handle: OpaquePointer, _ index: Int32, _ utf8: UnsafeBufferPointer<UInt8>, _ body: () -> Int32) -> Int32 {
        // An empty text has no storage; a NULL pointer would bind SQL NULL, so point at a static "".
        let base: UnsafePointer<CChar> = utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? Self.empty
        let bound = sqlite3_bind_text(handle, index, base, Int32(utf8.count), nil)  // nil: SQLITE_STATIC
        guard bound == SQLITE_OK else { return bound }
        return body()
    }
}

extension EventRowWriter.Row {
    package init(_ event: Event, attributes: [UInt8]) { self.init(event, attributes: attributes[...]) }

    package init(_ event: Event, attributes: ArraySlice<UInt8>) {
        self.init(
            id: event.id, type: event.type.rawValue, name: event.name, timestampMs: event.timestampMs, attributes: attributes,
            status: event.status.rawValue, attempts: event.attempts, traceparent: event.traceparent)
    }
}
