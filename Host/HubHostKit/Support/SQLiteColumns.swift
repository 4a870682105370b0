import GRDB
import GRDBSQLite

/// The current row of a statement stepped through SQLite's C API, read by column position: GRDB's
/// Row copies every value first and casts each one in its typed subscript, which on a page of a
/// thousand rows costs more than the query. For hot reads whose column list is fixed by the caller.
struct SQLiteColumns {
    let handle: OpaquePointer

    /// The column as UTF-8 text (invalid bytes repaired); "" for NULL.
    func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column))), as: UTF8.self)
    }

    /// The column's UTF-8 bytes as SQLite holds them (empty for NULL), valid only until the
    /// statement steps or resets: for copying out without a String per value.
    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let bytes = sqlite3_column_text(handle, column) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func optionalText(_ column: Int32) -> String? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : text(column)
    }

    /// The column as an integer; 0 for NULL.
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func optionalInt64(_ column: Int32) -> Int64? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : int64(column)
    }

    /// A boolean stored as an integer (as GRDB stores Bool): anything but 0 is true.
    func bool(_ column: Int32) -> Bool { int64(column) != 0 }

    /// Binds `arguments` to `statement`, calls `body` with each row in turn, and resets the
    /// statement, also when `body` throws. A failed step throws the database's error.
    static func forEachRow(_ statement: Statement, arguments: StatementArguments, _ body: (SQLiteColumns) throws -> Void) throws {
        try statement.setArguments(arguments)  // resets, binds
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        let columns = SQLiteColumns(handle: handle)
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW {
            try body(columns)
            code = sqlite3_step(handle)
        }
        guard code == SQLITE_DONE else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))), sql: statement.sql)
        }
    }
}
