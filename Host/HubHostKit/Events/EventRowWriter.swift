import Foundation
import GRDB
import GRDBSQLite

/// Inserts event rows with SQLite's C binding API on one prepared statement. Each text is bound
/// straight from the Swift string's UTF-8 storage (SQLITE_STATIC, valid for the step), with no
/// DatabaseValue boxing per column: at tens of thousands of rows per batch this boxing, not SQLite,
/// was the larger part of the insert's cost. Used inside a GRDB write transaction.
package struct EventRowWriter {
    static let insertSQL = """
        INSERT INTO events (id, type, name, timestamp_ms, attributes, status, attempts, created_ms, updated_ms)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    package struct Row {
        var id: String
        var type: String
        var name: String
        package var timestampMs: Int64
        var attributes: String
        var status: String
        var attempts: Int
    }

    private let statement: Statement
    // Safe to share: one byte allocated once and never written; SQLite only reads it.
    nonisolated(unsafe) private static let empty: UnsafePointer<CChar> = UnsafePointer(strdup("")!)

    package init(_ db: Database) throws {
        statement = try db.cachedStatement(sql: Self.insertSQL)
    }

    /// Inserts one row; `nowMs` becomes created_ms and updated_ms. Throws the database's error.
    package func insert(_ row: Row, nowMs: Int64) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        var row = row
        let code: Int32 = bindText(handle, 1, &row.id) {
            bindText(handle, 2, &row.type) {
                bindText(handle, 3, &row.name) {
                    bindText(handle, 5, &row.attributes) {
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
    }

    /// Binds `text` as parameter `index` for the duration of `body` (the storage is borrowed, so the
    /// statement must be stepped inside `body`).
    private func bindText(_ handle: OpaquePointer, _ index: Int32, _ text: inout String, _ body: () -> Int32) -> Int32 {
        text.withUTF8 { utf8 in
            // An empty string has no storage; a NULL pointer would bind SQL NULL, so point at a static "".
            let base: UnsafePointer<CChar> = utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? Self.empty
            let bound = sqlite3_bind_text(handle, index, base, Int32(utf8.count), nil)  // nil: SQLITE_STATIC
            guard bound == SQLITE_OK else { return bound }
            return body()
        }
    }
}

extension EventRowWriter.Row {
    package init(_ event: Event, attributes: String) {
        self.init(
            id: event.id, type: event.type.rawValue, name: event.name, timestampMs: event.timestampMs, attributes: attributes,
            status: event.status.rawValue, attempts: event.attempts)
    }
}
