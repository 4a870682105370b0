import Foundation
import GRDB

/// Small persistent state (sessions, current campaign) in the event store's database.
package final class KeyValueState {
    let store: EventStore

    /// The `state` table is made by the store's migrations ("v3 state").
    package init(store: EventStore) throws {
        self.store = store
    }

    func get<T: Decodable>(_ key: String) throws -> T? {
        guard let text = try store.pool.read({ db in try String.fetchOne(db, sql: "SELECT value FROM state WHERE key = ?", arguments: [key]) })
        else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    /// Writes inside an open transaction (with the events whose tracking changed the state).
    static func write(_ db: Database, key: String, json: String) throws {
        try db.execute(sql: "INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                       arguments: [key, json])
    }

    func set<T: Encodable>(_ key: String, _ value: T) throws {
        let text = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        try store.pool.write { db in try Self.write(db, key: key, json: text) }
    }
}
