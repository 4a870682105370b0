import GRDB
import XCTest
@testable import HubHostKit

/// A store written by an earlier hubhost (schema v1, `seq ... AUTOINCREMENT`) opens with every
/// event kept, in order, and new events after them.
final class EventStoreMigrationTests: XCTestCase {
    func testAVersion1StoreKeepsItsEventsAndTheirOrder() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let path = folder + "/events.sqlite"
        do {  // what the v1 migration left on disk
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                    INSERT INTO grdb_migrations VALUES ('v1 events');
                    CREATE TABLE events (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, name TEXT NOT NULL,
                        timestamp_ms INTEGER NOT NULL, attributes TEXT NOT NULL, status TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ms INTEGER NOT NULL DEFAULT 0,
                        created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, last_error TEXT);
                    CREATE INDEX events_by_status ON events(status, next_attempt_ms, seq);
                    INSERT INTO events (seq, id, type, name, timestamp_ms, attributes, status, attempts, created_ms, updated_ms, last_error)
                        VALUES (7, 'old-1', 'named_event', 'FIRST', 1000, '[]', 'NOT_POSTED', 0, 1, 1, NULL),
                               (9, 'old-2', 'named_event', 'SECOND', 2000, '[]', 'FAILED_POST', 3, 2, 2, 'the collector answered HTTP 500');
                    """)
            }
        }
        let store = try EventStore.open(path: path).store
        try store.insert([Event(type: .namedEvent, name: "THIRD")])
        XCTAssertEqual(try store.list(limit: 10).map(\.event.name), ["THIRD", "SECOND", "FIRST"], "newest first, the new one after the old ones")
        XCTAssertEqual(try store.event(id: "old-2")?.lastError, "the collector answered HTTP 500")
        XCTAssertEqual(try store.event(id: "old-2")?.event.attempts, 3)
        XCTAssertEqual(try store.deliverable(limit: 10).map(\.id).first, "old-1", "the oldest waiting event is still sent first")
        let schema = try store.pool.read { db in try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'events'") } ?? ""
        XCTAssertFalse(schema.contains("AUTOINCREMENT"), schema)
        let seqs = try store.pool.read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM events ORDER BY seq") }
        XCTAssertEqual(Array(seqs.prefix(2)), [7, 9], "old events keep their seq")
        XCTAssertGreaterThan(seqs[2], 9)
        // v5: the status index is in seq order, so a claim reads each status in order and stops after its batch.
        let indexes = try store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL")
        }
        XCTAssertEqual(indexes, ["CREATE INDEX events_by_status_seq ON events(status, seq, next_attempt_ms)"])
        let plan = try store.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN \(EventStore.dueSeqsSQL)", arguments: EventStore.dueArguments(nowMs: 0, limit: 10))
                .map { $0["detail"] as String }
        }
        XCTAssertEqual(plan.filter { $0.contains("events_by_status_seq (status=?)") }.count, 2, "\(plan)")
        XCTAssertFalse(plan.contains { $0.contains("next_attempt_ms<") }, "not the old index's range: \(plan)")
    }
}
