import Foundation
import GRDB
import XCTest

@testable import HubHostKit

/// Every SQLite store of the data directory commits with `synchronous = FULL`: in WAL mode that is
/// what syncs the WAL at each commit, so a committed event survives a power loss, not only kill -9.
/// GRDB's pool sets NORMAL on its writer when it turns WAL on, after the configuration's own
/// pragmas; the check is on the connection that commits (a reader kept FULL, which hid it).
final class StoreDurabilityTests: XCTestCase {
    private func synchronous(_ pool: DatabasePool) throws -> (writer: Int?, reader: Int?, journal: String?) {
        let writer = try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        let reader = try pool.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        let journal = try pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        return (writer, reader, journal)
    }

    func testEveryStoreCommitsWithSynchronousFull() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let full = 2  // PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA
        let pools: [(String, DatabasePool)] = [
            ("events", try EventStore.open(path: folder + "/events.sqlite").store.pool),
            ("users", try UserStore(path: folder + "/users.sqlite").pool),
            ("identity", try IdentityStore(path: folder + "/identity.sqlite").pool),
            ("prefetch", try PrefetchStore(path: folder + "/prefetch.sqlite").pool)
        ]
        for (name, pool) in pools {
            let settings = try synchronous(pool)
            XCTAssertEqual(settings.writer, full, "\(name): the committing connection")
            XCTAssertEqual(settings.reader, full, "\(name): a reader")
            XCTAssertEqual(settings.journal, "wal", name)
        }
        // And it is the writer's setting that a commit uses: one insert, then the same connection.
        let store = try EventStore.open(path: folder + "/events.sqlite").store
        try store.insert([Event(type: .namedEvent, name: "DURABLE")])
        XCTAssertEqual(try store.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }, full)
    }

    /// A write that does not wait for the disk (page-view metrics, the profile learning, events
    /// tracked in the background) commits at NORMAL on the writer and puts the pool's own setting
    /// back, committed or rolled back: the acknowledged commits after it still sync.
    func testAWriteWithoutWaitingForDiskRestoresTheWritersSetting() throws {
        let folder = try TestSupport.temporaryFolder(self)
        for (durability, restored) in [(EventDurability.fsync, 2), (.process, 1)] {
            let store = try EventStore.open(path: folder + "/events-\(durability.rawValue).sqlite", durability: durability).store
            let during = try SharedSQLite.writeWithoutWaitingForDisk(store.pool, restoring: durability.synchronous) { db in
                try db.execute(sql: "INSERT INTO state (key, value) VALUES ('k', 'v')")
                return try Int.fetchOne(db, sql: "PRAGMA synchronous")
            }
            XCTAssertEqual(during, 1, "NORMAL for the write itself")
            XCTAssertEqual(try synchronous(store.pool).writer, restored, "\(durability): the writer's own setting again")
            XCTAssertEqual(try store.pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM state WHERE key = 'k'") }, "v")
            // A write that throws is rolled back, and the setting is restored all the same.
            struct Refused: Error {}
            XCTAssertThrowsError(
                try SharedSQLite.writeWithoutWaitingForDisk(store.pool, restoring: durability.synchronous) { db -> Void in
                    try db.execute(sql: "INSERT INTO state (key, value) VALUES ('gone', 'v')")
                    throw Refused()
                })
            XCTAssertEqual(try synchronous(store.pool).writer, restored)
            XCTAssertEqual(try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM state WHERE key = 'gone'") }, 0)
        }
        // Through the engine: events tracked in the background are stored, and the writer is FULL after.
        try TestSupport.write("data_dir: data\nevents: {cache_size: 1000000}\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        let engine = try host.events()
        for n in 0..<20 { engine.trackInBackground(Event(type: .namedEvent, name: "background \(n)")) }
        engine.waitForBackgroundWrites()
        XCTAssertEqual(try engine.store.list(limit: 100).filter { $0.event.name.hasPrefix("background") }.count, 20)
        XCTAssertEqual(try synchronous(engine.store.pool).writer, 2)
    }
}
