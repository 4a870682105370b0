import Foundation
import GRDB

/// The prefetch catalog on disk: `prefetch.sqlite` in the data directory (WAL, synchronous FULL,
/// through SharedSQLite, so `serve` and CLI commands share it). Items with their files (a JSON
/// column: they change together), the item-category links, categories, sources, and a small
/// key-value table for the registration, the catalog cursor and the settings changed at run time.
/// Every state change is a compare-and-set in one transaction: it is on disk before the engine
/// announces it, and two processes can never both move one item out of the same state.
/// Sendable: its only field is a `let` GRDB DatabasePool, which is thread-safe (it serialises writes
/// and hands each read its own connection).
final class PrefetchStore: Sendable {
    let pool: DatabasePool

    init(path: String) throws {
        let opening = try SharedSQLite.openingLock(for: path)  // until migrated: see openingLock
        defer { opening.release() }
        // Catalog queries read pages spread over the whole item table (a category's items, each
        // item's links): mapped, they are read in place, not copied page by page with pread.
        pool = try SharedSQLite.open(path: path, label: "prefetch", mmapBytes: Self.mmapBytes)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE item (
                        unique_id TEXT PRIMARY KEY, content_id TEXT NOT NULL, source_name TEXT NOT NULL,
                        title TEXT NOT NULL, summary TEXT NOT NULL, share_url TEXT, type TEXT,
                        state TEXT NOT NULL, download_error TEXT, wait_reason TEXT, retry_at_ms INTEGER,
                        attempts INTEGER NOT NULL DEFAULT 0, download_behavior TEXT, user_initiated INTEGER NOT NULL DEFAULT 0,
                        bytes_downloaded INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0, files TEXT NOT NULL,
                        persistent_user_info TEXT NOT NULL DEFAULT '{}', sdk_passthrough TEXT, expiry_ms INTEGER,
                        saved INTEGER NOT NULL DEFAULT 0, locked INTEGER NOT NULL DEFAULT 0, viewed INTEGER NOT NULL DEFAULT 0,
                        discovered_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, owner TEXT);
                    CREATE INDEX item_state ON item(state);
                    CREATE INDEX item_content ON item(source_name, content_id);
                    CREATE TABLE item_category (item_id TEXT NOT NULL, category_id TEXT NOT NULL, PRIMARY KEY (item_id, category_id));
                    CREATE INDEX item_category_category ON item_category(category_id);
                    CREATE TABLE category (id TEXT PRIMARY KEY, name TEXT NOT NULL, parent TEXT, selected INTEGER NOT NULL DEFAULT 1);
                    CREATE TABLE source (name TEXT PRIMARY KEY, display_name TEXT NOT NULL, subscribed INTEGER NOT NULL DEFAULT 1);
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    """)
        }
        // The service's suggested categories (the PCD SDK's suggestions: category filter).
        migrator.registerMigration("v2 suggested categories") { db in
            try db.execute(sql: "ALTER TABLE category ADD COLUMN suggested INTEGER NOT NULL DEFAULT 0")
        }
        try migrator.migrate(pool)
    }

    // MARK: meta

    func meta(_ key: String) throws -> String? {
        try pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key]) }
    }

    func setMeta(_ values: [String: String?]) throws {
        try pool.write { db in try Self.setMeta(db, values) }
    }

    static func setMeta(_ db: Database, _ values: [String: String?]) throws {
        for (key, value) in values {
            if let value {
                try db.execute(
                    sql: "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
            }
        }
    }

    // MARK: the last failure

    /// The last registration, sync or download failure, kept in `meta` so that every process
    /// sharing the data directory reads it (`prefetch status` beside a running serve).
    struct LastFailure: Sendable, Equatable {
        var reason: String
        /// When it happened, in ms since 1970.
        var ms: Int64
        /// The item whose download failed; nil for a registration or sync failure.
        var item: String?
    }

    /// The longest failure reason kept.
    static let maxFailureReason = 2000

    func lastFailure() throws -> LastFailure? {
        try pool.read { db in
            var values: [String: String] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT key, value FROM meta WHERE key IN ('last_failure', 'last_failure_ms', 'last_failure_item')")
            {
                values[row["key"]] = row["value"]
            }
            guard let reason = values["last_failure"] else { return nil }
            let ms = values["last_failure_ms"].flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil } ?? 0
            return LastFailure(reason: reason, ms: ms, item: values["last_failure_item"])
        }
    }

    func setLastFailure(_ reason: String, item: String?, ms: Int64) throws {
        try setMeta([
            "last_failure": String(reason.prefix(Self.maxFailureReason)), "last_failure_ms": "\(ms)", "last_failure_item": item
        ])
    }

    /// Clears the last failure when it is of `item` (nil: a registration or sync failure), in one transaction.
    func clearLastFailure(item: String?) throws {
        try pool.write { db in
            guard try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'last_failure'") != nil,
                try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'last_failure_item'") == item
            else { return }
            try Self.setMeta(db, ["last_failure": nil, "last_failure_ms": nil, "last_failure_item": nil])
        }
    }

    // MARK: items

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }()

    /// How much of the catalog file each connection maps (SQLite maps no more than the file holds).
    static let mmapBytes = 256 << 20

    /// The columns an item is read from, in the order `item(from:)` reads them by index: by name,
    /// GRDB compares each name case-insensitively with every column, which cost more than the
    /// query itself on a page of a thousand items.
    static let itemColumns = """
        unique_id, content_id, source_name, title, summary, share_url, type, state, download_error, wait_reason, retry_at_ms,
        attempts, download_behavior, user_initiated, bytes_downloaded, size, files, persistent_user_info, sdk_passthrough,
        expiry_ms, saved, locked, viewed, discovered_ms, updated_ms
        """

    /// An item from the current row of `SELECT \(itemColumns) FROM item`, its categories left
    /// empty for the caller.
    static func item(from row: SQLiteColumns) throws -> PrefetchItem {
        let files = try PrefetchFile.decodeList(row.text(16))
        let infoText = row.text(17)
        let info: [String: JSONValue]
        if case .object(let fields)? = JSONValueReader.read(infoText) {
            info = fields
        } else {
            info = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(infoText.utf8))) ?? [:]
        }
        return PrefetchItem(
            uniqueId: row.text(0), contentId: row.text(1), sourceName: row.text(2), categories: [], title: row.text(3),
            summary: row.text(4), shareURL: row.optionalText(5), type: row.optionalText(6),
            state: PrefetchItemState(rawValue: row.text(7)) ?? .discovered, downloadError: row.optionalText(8),
            waitReason: row.optionalText(9), retryAtMs: row.optionalInt64(10), attempts: Int(clamping: row.int64(11)),
            downloadBehavior: row.optionalText(12).flatMap(PrefetchSettings.DownloadBehavior.init(rawValue:)),
            userInitiated: row.bool(13), bytesDownloaded: row.int64(14), size: row.int64(15), files: files, persistentUserInfo: info,
            sdkMetadataPassthrough: row.optionalText(18), expiryMs: row.optionalInt64(19), saved: row.bool(20), locked: row.bool(21),
            viewed: row.bool(22), discoveredMs: row.int64(23), updatedMs: row.int64(24))
    }

    /// The items `sql` selects (its columns `itemColumns`), in its order, without their categories.
    /// The statement is compiled once per connection and query shape (GRDB's statement cache),
    /// not at every query.
    static func items(_ db: Database, sql: String, arguments: StatementArguments) throws -> [PrefetchItem] {
        var items: [PrefetchItem] = []
        try SQLiteColumns.forEachRow(try db.cachedStatement(sql: sql), arguments: arguments) { row in items.append(try item(from: row)) }
        return items
    }

    static func categories(_ db: Database, of id: String) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT category_id FROM item_category WHERE item_id = ? ORDER BY category_id", arguments: [id])
    }

    static func item(_ db: Database, _ id: String) throws -> PrefetchItem? {
        guard var item = try items(db, sql: "SELECT \(itemColumns) FROM item WHERE unique_id = ?", arguments: [id]).first else {
            return nil
        }
        item.categories = try categories(db, of: id)
        return item
    }

    func item(_ id: String) throws -> PrefetchItem? { try pool.read { db in try Self.item(db, id) } }

    /// Items matching `sql` (a WHERE clause over `item`, or nil for all), with their categories.
    func items(
        where clause: String? = nil, arguments: StatementArguments = [], orderBy: String = "discovered_ms, unique_id",
        limit: Int? = nil
    ) throws -> [PrefetchItem] {
        try pool.read { db in
            var sql = "SELECT \(Self.itemColumns) FROM item"
            if let clause { sql += " WHERE \(clause)" }
            sql += " ORDER BY \(orderBy)"
            if let limit { sql += " LIMIT \(max(0, limit))" }
            // Decoded straight from the statement, categories after.
            var items = try Self.items(db, sql: sql, arguments: arguments)
            guard !items.isEmpty else { return items }
            // The links of the items found only, by their ids (the primary key's index): running
            // the clause again would scan every match when a limit kept only a few. One statement
            // whatever the count (the ids as one JSON array), and no sort in SQL: the primary key's
            // index hands each item's categories over in category order.
            var position: [String: Int] = [:]
            position.reserveCapacity(items.count)
            for (index, item) in items.enumerated() { position[item.uniqueId] = index }
            try SQLiteColumns.forEachRow(
                try db.cachedStatement(sql: Self.linksOfItemsSQL), arguments: [SQLiteJSONList.strings(items.map(\.uniqueId))]
            ) { link in
                if let index = position[link.text(0)] { items[index].categories.append(link.text(1)) }  // item_id, category_id
            }
            // The index's order is the plan SQLite chooses today, not a promise: an item's few
            // categories are checked, and sorted (by bytes, as SQLite's BINARY collation) only if
            // another plan handed them over out of order.
            let byBytes = { (a: String, b: String) in a.utf8.lexicographicallyPrecedes(b.utf8) }
            for index in items.indices {
                let categories = items[index].categories
                if zip(categories, categories.dropFirst()).contains(where: { byBytes($1, $0) }) { items[index].categories.sort(by: byBytes) }
            }
            return items
        }
    }

    /// The category links of the items whose ids are in the JSON array argument (SQLiteJSONList),
    /// in the primary key's order (item, then category): SQLite reads them from that index alone.
    static let linksOfItemsSQL =
        "SELECT item_id, category_id FROM item_category WHERE item_id IN (SELECT value FROM json_each(?))"

    /// Writes every column of `item` (and its category links).
    static func write(_ db: Database, _ item: PrefetchItem) throws {
        let files = String(decoding: try encoder.encode(item.files), as: UTF8.self)
        let info = String(decoding: try encoder.encode(item.persistentUserInfo), as: UTF8.self)
        try db.execute(
            sql: """
                INSERT INTO item (unique_id, content_id, source_name, title, summary, share_url, type, state, download_error, wait_reason,
                    retry_at_ms, attempts, download_behavior, user_initiated, bytes_downloaded, size, files, persistent_user_info,
                    sdk_passthrough, expiry_ms, saved, locked, viewed, discovered_ms, updated_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(unique_id) DO UPDATE SET content_id = excluded.content_id, source_name = excluded.source_name,
                    title = excluded.title, summary = excluded.summary, share_url = excluded.share_url, type = excluded.type,
                    state = excluded.state, download_error = excluded.download_error, wait_reason = excluded.wait_reason,
                    retry_at_ms = excluded.retry_at_ms, attempts = excluded.attempts, download_behavior = excluded.download_behavior,
                    user_initiated = excluded.user_initiated, bytes_downloaded = excluded.bytes_downloaded, size = excluded.size,
                    files = excluded.files, persistent_user_info = excluded.persistent_user_info, sdk_passthrough = excluded.sdk_passthrough,
                    expiry_ms = excluded.expiry_ms, saved = excluded.saved, locked = excluded.locked, viewed = excluded.viewed,
                    updated_ms = excluded.updated_ms
                """,
            arguments: [
                item.uniqueId, item.contentId, item.sourceName, item.title, item.summary, item.shareURL, item.type,
                item.state.rawValue, item.downloadError, item.waitReason, item.retryAtMs, item.attempts,
                item.downloadBehavior?.rawValue, item.userInitiated, item.bytesDownloaded, item.size, files, info,
                item.sdkMetadataPassthrough, item.expiryMs, item.saved, item.locked, item.viewed, item.discoveredMs,
                item.updatedMs
            ])
        try db.execute(sql: "DELETE FROM item_category WHERE item_id = ?", arguments: [item.uniqueId])
        for category in Set(item.categories) {
            try db.execute(sql: "INSERT INTO item_category(item_id, category_id) VALUES (?, ?)", arguments: [item.uniqueId, category])
        }
    }

    /// Reads item `id`, lets `change` edit it (returning false or throwing leaves it as it was),
    /// and writes it in the same transaction: the compare-and-set every transition goes through.
    /// Returns the item as written, nil when `change` declined.
    func update(_ id: String, _ change: (inout PrefetchItem) throws -> Bool) throws -> PrefetchItem? {
        try pool.write { db in
            guard var item = try Self.item(db, id) else { throw PrefetchError.unknownItem(id) }
            guard try change(&item) else { return nil }
            item.updatedMs = Clock.wallMs()
            try Self.write(db, item)
            return item
        }
    }

    /// The owner (ProcessIdentity) of a downloading item, set in the same transaction as the state.
    func setOwner(_ id: String, _ owner: String?) throws {
        try pool.write { db in try db.execute(sql: "UPDATE item SET owner = ? WHERE unique_id = ?", arguments: [owner, id]) }
    }

    /// Claims the next queued item for this process: user-initiated first, then oldest discovered.
    /// Queued -> Downloading with this process as owner, in one transaction.
    func claimNext(owner: String, excluding: Set<String>) throws -> PrefetchItem? {
        try pool.write { db in
            let candidates = try String.fetchAll(
                db,
                sql: """
                    SELECT unique_id FROM item WHERE state = 'queued' ORDER BY user_initiated DESC, discovered_ms, unique_id LIMIT 64
                    """)
            guard let id = candidates.first(where: { !excluding.contains($0) }), var item = try Self.item(db, id) else { return nil }
            item.state = .downloading
            item.waitReason = nil
            item.updatedMs = Clock.wallMs()
            try Self.write(db, item)
            try db.execute(sql: "UPDATE item SET owner = ? WHERE unique_id = ?", arguments: [owner, id])
            return item
        }
    }

    /// Downloading items whose owner process is gone (kill -9, crash): their ids.
    func orphanedDownloads() throws -> [String] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT unique_id, owner FROM item WHERE state = 'downloading'").compactMap { row in
                let owner: String? = row["owner"]
                return owner.map(ProcessIdentity.isRunning) == true ? nil : row["unique_id"]
            }
        }
    }

    // MARK: categories and sources

    func categories() throws -> [PrefetchCategory] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM category ORDER BY id").map {
                PrefetchCategory(id: $0["id"], name: $0["name"], parent: $0["parent"], selected: $0["selected"], suggested: $0["suggested"])
            }
        }
    }

    func sources() throws -> [PrefetchSource] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM source ORDER BY name").map {
                PrefetchSource(name: $0["name"], displayName: $0["display_name"], subscribed: $0["subscribed"])
            }
        }
    }
}

/// The prefetch engine's errors: each says what was refused and why.
public enum PrefetchError: Error, CustomStringConvertible, Equatable {
    /// No item with this unique id in the catalog (HTTP 404).
    case unknownItem(String)
    /// The request does not apply to the item in its state (already cached, locked, deleted, not playable...): the reason says why (HTTP 409).
    case refused(id: String, reason: String)
    /// The engine is not registered with the catalog service, or the service refused or dropped the registration: why (HTTP 409).
    case notRegistered(String)
    /// The catalog service or a file's origin failed or answered something unusable: what went wrong (HTTP 502).
    case service(String)
    /// An argument was refused (a partial length, a consumption time, a range, an import path): what was wrong with it (HTTP 400).
    case invalid(String)

    public var description: String {
        switch self {
        case .unknownItem(let id): return "no item '\(id)' in the catalog"
        case .refused(let id, let reason): return "item '\(id)': \(reason)"
        case .notRegistered(let why): return "not registered: \(why)"
        case .service(let why): return "catalog service: \(why)"
        case .invalid(let why): return why
        }
    }
}
