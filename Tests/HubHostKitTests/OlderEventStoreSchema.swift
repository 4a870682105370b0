/// The event store's schema as an earlier hubhost left it on disk, written by hand (the migrations
/// of today's EventStore would add the later steps): for tests that open such a file with the
/// current store.
enum OlderEventStoreSchema {
    /// The migrations recorded by hubhost up to `version` (5, 7 or 8), in order.
    private static let migrations = [
        "v1 events", "v2 events without AUTOINCREMENT", "v3 state", "v4 hold holder", "v5 status index in seq order",
        "v6 delivery leases", "v7 events waiting out a backoff", "v8 delivered cursor"
    ]

    /// The SQL that makes an empty store of schema `version`: 5 (the status index in seq order,
    /// leases on the rows), 7 (lease rows, the backoff index) or 8 (the delivered cursor; no traceparent column).
    static func sql(version: Int) -> String {
        precondition([5, 7, 8].contains(version), "only the v5, v7 and v8 schemas are written here")
        let recorded = migrations.prefix(version).map { "('\($0)')" }.joined(separator: ", ")
        var sql = """
            CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
            INSERT INTO grdb_migrations VALUES \(recorded);
            CREATE TABLE events (
                seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, name TEXT NOT NULL,
                timestamp_ms INTEGER NOT NULL, attributes TEXT NOT NULL, status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ms INTEGER NOT NULL DEFAULT 0,
                created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, last_error TEXT, holder TEXT);
            CREATE INDEX events_by_status_seq ON events(status, seq, next_attempt_ms);
            CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL);

            """
        if version >= 7 {
            sql += """
                CREATE TABLE delivery_leases (id INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, until_ms INTEGER NOT NULL);
                CREATE INDEX events_backoff ON events(status, next_attempt_ms) WHERE next_attempt_ms > 0;

                """
        }
        if version >= 8 {
            sql += """
                CREATE TABLE delivery_log (last_seq INTEGER PRIMARY KEY, posted_ms INTEGER NOT NULL);
                CREATE TABLE delivery_holes (seq INTEGER PRIMARY KEY);

                """
        }
        return sql
    }
}
