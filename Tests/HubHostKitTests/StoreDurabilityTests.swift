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
}
