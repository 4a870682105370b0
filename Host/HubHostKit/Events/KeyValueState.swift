import Foundation
import GRDB

/// Small persistent state (sessions, current campaign, the campaign engine's shared state) in the
/// event store's database. Several processes share it: `read` sees what every process committed,
/// and `write` is one IMMEDIATE transaction (GRDB's writes), so a read-modify-write inside it
/// cannot interleave with another process's.
package final class KeyValueState {
    let store: EventStore

    /// The `state` table is made by the store's migrations ("v3 state").
    package init(store: EventStore) throws {
        self.store = store
    }

    func get<T: Decodable>(_ key: String) throws -> T? {
        try store.pool.read { db in try Self.get(db, key) }
    }

    /// Writes inside an open transaction (with the events whose tracking changed the state).
    static func write(_ db: Database, key: String, json: String) throws {
        try db.cachedStatement(sql: "INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            .execute(arguments: [key, json])
    }

    func set<T: Encodable>(_ key: String, _ value: T) throws {
        try store.pool.write { db in try Self.set(db, key, value) }
    }

    /// Reads inside an open transaction.
    static func get<T: Decodable>(_ db: Database, _ key: String) throws -> T? {
        // Cached: the campaign engine asks for its version once per tracked batch.
        guard let text = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM state WHERE key = ?"), arguments: [key]) else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    /// Writes inside an open transaction.
    static func set<T: Encodable>(_ db: Database, _ key: String, _ value: T) throws {
        try write(db, key: key, json: String(decoding: try JSONEncoder().encode(value), as: UTF8.self))
    }

    /// One read transaction: a consistent snapshot of what every process committed.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try store.pool.read(body)
    }

    /// One write transaction (BEGIN IMMEDIATE: it waits, up to the busy timeout, for another
    /// process's write to end, and no other writer starts before it commits).
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try store.pool.write(body)
    }
}
