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
                try db.execute(
                    sql: """
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
        XCTAssertEqual(
            indexes,
            [
                "CREATE INDEX events_by_status_seq ON events(status, seq, next_attempt_ms)",
                "CREATE INDEX events_backoff ON events(status, next_attempt_ms) WHERE next_attempt_ms > 0"
            ])
        let plan = try store.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN \(EventStore.dueSeqsSQL)", arguments: EventStore.dueArguments(nowMs: 0, limit: 10))
                .map { $0["detail"] as String }
        }
        XCTAssertEqual(plan.filter { $0.contains("events_by_status_seq (status=? AND seq>? AND seq<?)") }.count, 2, "\(plan)")
        XCTAssertFalse(plan.contains { $0.contains("next_attempt_ms<") }, "not the old index's range: \(plan)")
    }

    /// A v5 store (leases written on the rows: next_attempt_ms moved to the lease's end) with
    /// pending and leased events: after v6 the pending ones are claimable at once, the leased ones
    /// only once their lease ends, each claimed once, and a new claim writes a lease row, not the events.
    func testAVersion5StoreWithPendingAndLeasedEventsMigratesToLeaseRows() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let path = folder + "/events.sqlite"
        let now = Clock.wallMs()
        let leaseEnd = now + 600_000
        do {  // what v5 left on disk: every migration up to v5 recorded, the v5 schema and index
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: OlderEventStoreSchema.sql(version: 5))
                for n in 1...6 {  // 1-3 leased by a v5 claim (a process killed mid-delivery), 4-6 pending
                    try db.execute(
                        sql: """
                            INSERT INTO events (seq, id, type, name, timestamp_ms, attributes, status, next_attempt_ms, created_ms, updated_ms)
                            VALUES (?, ?, 'named_event', ?, 1000, '[]', 'NOT_POSTED', ?, 1, 1)
                            """, arguments: [n, "v5-\(n)", "E\(n)", n <= 3 ? leaseEnd : 0])
                }
            }
        }
        let store = try EventStore.open(path: path).store
        let tables = try store.pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        XCTAssertTrue(tables.contains("delivery_leases"), "\(tables)")
        XCTAssertEqual(try store.deliverable(limit: 10, nowMs: now).map(\.id), ["v5-4", "v5-5", "v5-6"], "the v5 lease still holds 1-3")
        let first = try store.claimDeliverable(limit: 10, nowMs: now, leaseUntilMs: now + 60_000)
        XCTAssertEqual(first.map(\.id), ["v5-4", "v5-5", "v5-6"])
        let rows = try store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, next_attempt_ms FROM events ORDER BY seq").map {
                ($0["id"] as String, $0["next_attempt_ms"] as Int64)
            }
        }
        XCTAssertEqual(rows.map(\.1), [leaseEnd, leaseEnd, leaseEnd, 0, 0, 0], "the claim wrote no event row")
        let leases = try store.pool.read { db in try Row.fetchAll(db, sql: "SELECT first_seq, last_seq, until_ms FROM delivery_leases") }
        XCTAssertEqual(leases.count, 1)
        XCTAssertEqual(leases.first?["first_seq"] as Int64?, 4)
        XCTAssertEqual(leases.first?["last_seq"] as Int64?, 6)
        XCTAssertEqual(try store.claimDeliverable(limit: 10, nowMs: now, leaseUntilMs: now + 60_000).count, 0, "all leased")
        // Past the v5 lease (and the new one): every event claimable again, once.
        let later = try store.claimDeliverable(limit: 10, nowMs: leaseEnd + 1, leaseUntilMs: leaseEnd + 60_000)
        XCTAssertEqual(later.map(\.id), (1...6).map { "v5-\($0)" })
        try store.markPosted(later.map(\.id))
        XCTAssertEqual(try store.count(status: .successfullyPosted), 6)
        XCTAssertEqual(
            try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM delivery_leases") }, 0, "markPosted ended the lease")
    }

    /// A v8 store (before traces) with waiting events: v9 adds the traceparent column, NULL for the
    /// old rows, which are claimed and delivered as before; a new event keeps its traceparent.
    func testAVersion8StoreGainsANullTraceparentColumn() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let path = folder + "/events.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: OlderEventStoreSchema.sql(version: 8))
                for n in 1...3 {
                    try db.execute(
                        sql: """
                            INSERT INTO events (seq, id, type, name, timestamp_ms, attributes, status, created_ms, updated_ms)
                            VALUES (?, ?, 'named_event', 'E', 1000, '[]', 'NOT_POSTED', 1, 1)
                            """, arguments: [n, "v8-\(n)"])
                }
            }
        }
        let store = try EventStore.open(path: path).store
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        try store.insert([Event(id: "v9", type: .namedEvent, traceparent: traceparent)])
        let stored = try store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, traceparent FROM events ORDER BY seq").map { ($0["id"] as String, $0["traceparent"] as String?) }
        }
        XCTAssertEqual(stored.map(\.0), ["v8-1", "v8-2", "v8-3", "v9"])
        XCTAssertEqual(stored.map(\.1), [nil, nil, nil, traceparent])
        let claimed = try store.claimDeliverable(limit: 10, nowMs: Clock.wallMs(), leaseUntilMs: Clock.wallMs() + 60_000)
        XCTAssertEqual(claimed.map(\.id), ["v8-1", "v8-2", "v8-3", "v9"])
        XCTAssertEqual(claimed.map(\.traceparent), [nil, nil, nil, traceparent])
    }

    /// The seq ranges a claim may read, between the running leases (overlapping and unsorted included).
    func testUnleasedRangesAreTheGapsBetweenLeases() {
        XCTAssertEqual(EventStore.unleasedRanges([]), [Int64.min...Int64.max])
        XCTAssertEqual(EventStore.unleasedRanges([(10, 20)]), [Int64.min...9, 21...Int64.max])
        XCTAssertEqual(EventStore.unleasedRanges([(30, 40), (10, 20), (15, 25)]), [Int64.min...9, 26...29, 41...Int64.max])
        XCTAssertEqual(EventStore.unleasedRanges([(1, 5), (6, 9)]), [Int64.min...0, 10...Int64.max])
        XCTAssertEqual(EventStore.unleasedRanges([(Int64.min, 3), (7, Int64.max)]), [4...6])
    }
}
