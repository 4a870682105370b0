import Foundation
import GRDB
import Logging
import XCTest

@testable import HubHostKit

/// The delivered cursor: a delivered batch is recorded as one delivery_log row, not a status per
/// event, and every event still reads with its own status (list, event(id:), stats, count), on a
/// real SQLite file. Retries, rejections and holds inside a passed range keep their own rows; two
/// stores on one file answering out of order lose and repeat nothing; purge deletes exactly what
/// was passed before its cut-off; a store from before the cursor delivers everything it waits with.
final class DeliveredCursorTests: XCTestCase {
    typealias RecordingSink = DeliveryPipelineTests.RecordingSink

    private var path = ""

    override func setUpWithError() throws {
        path = try TestSupport.temporaryFolder(self) + "/events.sqlite"
    }

    private func store() throws -> EventStore { try EventStore.open(path: path).store }

    private func delivery(_ store: EventStore, _ sink: EventSink, batchSize: Int, retryDelay: Double = 60) -> EventDelivery {
        let settings = EventSettings(values: ["retry_base_delay": .double(retryDelay), "max_num_retries": .int(3), "post_timeout": .double(30)])
        let delivery = EventDelivery(settings: settings, store: store, sink: sink, logger: Logger(label: "cursor-test"))
        delivery.batchSize = batchSize
        return delivery
    }

    /// `count` events inserted in one transaction (seqs in this order), with `attributes` by index.
    private func track(_ store: EventStore, _ count: Int, attributes: (Int) -> [Event.Attribute] = { _ in [] }) throws -> [Event] {
        let events = (0..<count).map {
            Event(type: .namedEvent, name: "E\($0)", timestampMs: 1_700_000_000_000 + Int64($0), attributes: attributes($0))
        }
        try store.insert(events)
        return events
    }

    /// What the events table's own columns say, by id, read raw.
    private func rows(_ store: EventStore) throws -> [String: (status: String, attempts: Int, updatedMs: Int64, createdMs: Int64)] {
        try store.pool.read { db in
            var rows: [String: (status: String, attempts: Int, updatedMs: Int64, createdMs: Int64)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, status, attempts, updated_ms, created_ms FROM events") {
                rows[row["id"]] = (row["status"] as String, row["attempts"] as Int, row["updated_ms"] as Int64, row["created_ms"] as Int64)
            }
            return rows
        }
    }

    private func seq(_ store: EventStore, _ id: String) throws -> Int64 {
        try XCTUnwrap(store.pool.read { db in try Int64.fetchOne(db, sql: "SELECT seq FROM events WHERE id = ?", arguments: [id]) })
    }

    private func holes(_ store: EventStore) throws -> [Int64] {
        try store.pool.read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM delivery_holes ORDER BY seq") }
    }

    private func logRows(_ store: EventStore) throws -> Int {
        try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM delivery_log") } ?? -1
    }

    func testADeliveredBatchReadsPostedWithNoWritePerEvent() throws {
        let store = try store()
        let events = try track(store, 1000)
        let before = try rows(store)
        let flushedFrom = Clock.wallMs()
        let sink = RecordingSink()
        let report = delivery(store, sink, batchSize: 1000).flush()
        XCTAssertEqual(report.posted, 1000, "\(report)")
        XCTAssertEqual(sink.batches.flatMap { $0 }, events.map(\.id))

        // Every read API says SUCCESSFULLY_POSTED, with the attempt counted and the time it was posted.
        let listed = try store.list(limit: 5000)
        XCTAssertEqual(listed.count, 1000)
        for stored in listed {
            XCTAssertEqual(stored.event.status, .successfullyPosted, stored.event.name)
            XCTAssertEqual(stored.event.attempts, 1, stored.event.name)
            XCTAssertNil(stored.lastError)
            XCTAssertGreaterThanOrEqual(stored.updatedMs, flushedFrom, stored.event.name)
            XCTAssertLessThanOrEqual(stored.updatedMs, Clock.wallMs())
        }
        let first = try XCTUnwrap(store.event(id: events[0].id))
        XCTAssertEqual(first.event.status, .successfullyPosted)
        XCTAssertEqual(first.event.attempts, 1)
        XCTAssertGreaterThanOrEqual(first.updatedMs, flushedFrom)
        XCTAssertEqual(try store.event(id: events[999].id)?.event.status, .successfullyPosted)
        let stats = try store.stats()
        XCTAssertEqual(stats[.successfullyPosted], 1000)
        XCTAssertEqual(stats[.notPosted], 0)
        XCTAssertEqual(try store.count(status: .successfullyPosted), 1000)
        XCTAssertEqual(try store.count(status: .notPosted), 0)
        XCTAssertEqual(try store.list(status: .successfullyPosted, limit: 5000).count, 1000)
        XCTAssertEqual(try store.list(status: .successfullyPosted, limit: 3).map(\.event.id), events.suffix(3).reversed().map(\.id), "newest first")
        XCTAssertEqual(try store.list(status: .notPosted, limit: 5000).count, 0)
        XCTAssertFalse(try store.waitingAtLeast(1))
        XCTAssertEqual(try store.deliverable(limit: 5000, nowMs: Clock.wallMs() + 3_600_000).count, 0)

        // ...while the rows themselves were not written: the batch cost one delivery_log row.
        let after = try rows(store)
        for event in events {
            let row = try XCTUnwrap(after[event.id])
            XCTAssertEqual(row.status, EventStatus.notPosted.rawValue, event.name)
            XCTAssertEqual(row.attempts, 0, event.name)
            XCTAssertEqual(row.updatedMs, before[event.id]?.updatedMs, event.name)
        }
        XCTAssertEqual(try logRows(store), 1)
        XCTAssertEqual(try holes(store), [])
    }

    func testARetryAndARejectInsideADeliveredBatchKeepTheirOwnStatuses() throws {
        let store = try store()
        let events = try track(store, 10)
        let retried = events[3].id
        let rejected = events[5].id
        let sink = RecordingSink { _, batch in
            .answered(
                batch.map { event in
                    switch event.idempotencyKey {
                    case retried: return .retry(reason: "busy")
                    case rejected: return .rejected(reason: "malformed")
                    default: return .delivered
                    }
                })
        }
        let now = Clock.wallMs()
        let report = delivery(store, sink, batchSize: 10).flush(nowMs: now)
        XCTAssertEqual(report.posted, 8, "\(report)")
        XCTAssertEqual(report.retrying, 1)
        XCTAssertEqual(report.failed, 1)

        let retry = try XCTUnwrap(store.event(id: retried))
        XCTAssertEqual(retry.event.status, .notPosted)
        XCTAssertEqual(retry.event.attempts, 1)
        XCTAssertEqual(retry.lastError, "busy")
        let reject = try XCTUnwrap(store.event(id: rejected))
        XCTAssertEqual(reject.event.status, .failedPost, "a rejection is final")
        XCTAssertEqual(reject.lastError, "malformed")
        for event in events where ![retried, rejected].contains(event.id) {
            XCTAssertEqual(try store.event(id: event.id)?.event.status, .successfullyPosted, event.name)
        }
        XCTAssertEqual(try holes(store), [try seq(store, retried)], "the cursor passed the retry: a hole; the rejection is final, none")
        let stats = try store.stats()
        XCTAssertEqual(stats[.successfullyPosted], 8)
        XCTAssertEqual(stats[.notPosted], 1)
        XCTAssertEqual(stats[.failedPost], 1)
        XCTAssertEqual(try store.list(status: .notPosted).map(\.event.id), [retried])
        XCTAssertEqual(try store.list(status: .failedPost).map(\.event.id), [rejected])
        XCTAssertEqual(try store.count(status: .notPosted), 1)
        XCTAssertTrue(try store.waitingAtLeast(1))
        XCTAssertFalse(try store.waitingAtLeast(2))

        // In its backoff it is not due; after it, it is claimed and delivered, then posted.
        XCTAssertEqual(try store.deliverable(limit: 100, nowMs: now).map(\.id), [])
        XCTAssertEqual(try store.deliverable(limit: 100, nowMs: now + 3_600_000).map(\.id), [retried])
        let later = RecordingSink()
        XCTAssertEqual(delivery(store, later, batchSize: 10).flush(nowMs: now + 3_600_000).posted, 1)
        XCTAssertEqual(later.batches, [[retried]])
        let posted = try XCTUnwrap(store.event(id: retried))
        XCTAssertEqual(posted.event.status, .successfullyPosted)
        XCTAssertEqual(posted.event.attempts, 2)
        XCTAssertNil(posted.lastError)
        XCTAssertEqual(try holes(store), [], "a delivered hole is dropped")
        XCTAssertEqual(try store.stats()[.successfullyPosted], 9)
        XCTAssertEqual(try store.event(id: rejected)?.event.status, .failedPost)
    }

    func testAHoldInsideAPassedRangeStaysHoldUntilItIsUpdated() throws {
        let store = try store()
        let statuses: [EventStatus] = [.notPosted, .hold, .notPosted, .hold, .notPosted]
        let events = statuses.enumerated().map { Event(type: .namedEvent, name: "E\($0.offset)", status: $0.element) }
        try store.insert(events)
        let first = RecordingSink()
        XCTAssertEqual(delivery(store, first, batchSize: 10).flush().posted, 3)
        XCTAssertEqual(first.batches, [[events[0].id, events[2].id, events[4].id]])
        XCTAssertEqual(try store.event(id: events[1].id)?.event.status, .hold, "passed by the cursor, still HOLD")
        XCTAssertEqual(try store.stats()[.hold], 2)
        XCTAssertEqual(try holes(store), [try seq(store, events[1].id), try seq(store, events[3].id)])

        // Augmented: NOT_POSTED, claimable and delivered (with what the update wrote).
        var augmented = events[1]
        augmented.status = .notPosted
        augmented.attributes = [.init("Weather", .string("sunny"))]
        try store.update(augmented)
        XCTAssertEqual(try store.event(id: events[1].id)?.event.status, .notPosted)
        XCTAssertEqual(try store.deliverable(limit: 10).map(\.id), [events[1].id])
        // A dead process's hold: EXPIRED, claimable too.
        XCTAssertEqual(try store.expireStaleHolds(olderThanMs: Clock.wallMs() + 1_000), 1)
        XCTAssertEqual(try store.event(id: events[3].id)?.event.status, .expired)
        let second = RecordingSink()
        XCTAssertEqual(delivery(store, second, batchSize: 10).flush().posted, 2)
        XCTAssertEqual(second.batches, [[events[1].id, events[3].id]])
        for event in events {
            XCTAssertEqual(try store.event(id: event.id)?.event.status, .successfullyPosted, event.name)
        }
        XCTAssertEqual(try store.event(id: events[1].id)?.event.attributes.map(\.name), ["Weather"])
        XCTAssertEqual(try holes(store), [])
    }

    /// Two stores on one file, as two processes: each claims a batch, the later batch is answered
    /// first (the cursor passes the earlier one, still leased), then the earlier one with a retry.
    func testTwoStoresAnsweringOutOfOrderLoseAndRepeatNothing() throws {
        let a = try store()
        let b = try store()
        let events = try track(a, 30)
        let ids = events.map(\.id)
        let now = Clock.wallMs()
        let claimA = try a.commit(.init(claim: (10, now, now + 60_000)))
        let claimB = try b.commit(.init(claim: (10, now, now + 60_000)))
        XCTAssertEqual(claimA.ids, Array(ids[0..<10]))
        XCTAssertEqual(claimB.ids, Array(ids[10..<20]), "A's batch is leased")

        _ = try b.commit(.init(posted: claimB.seqs, endedLeases: [claimB.lease!]))
        XCTAssertEqual(try holes(a), claimA.seqs, "A's batch, passed by the cursor, keeps its own rows")
        XCTAssertEqual(try a.stats()[.successfullyPosted], 10)
        XCTAssertEqual(try a.stats()[.notPosted], 20)
        XCTAssertEqual(try a.event(id: ids[0])?.event.status, .notPosted)
        XCTAssertEqual(try b.claimDeliverable(limit: 100, nowMs: now, leaseUntilMs: now + 60_000).map(\.id), Array(ids[20...]), "A's still leased")

        // A answers: event 4 to retry, the rest delivered (at or below the cursor: one by one).
        let retried = claimA.seqs[4]
        _ = try a.commit(
            .init(
                posted: claimA.seqs.filter { $0 != retried }, failed: [([retried], "busy", now + 1_000, 3)], endedLeases: [claimA.lease!]))
        XCTAssertEqual(try holes(a), [retried])
        XCTAssertEqual(try a.stats()[.successfullyPosted], 19)
        XCTAssertEqual(try a.event(id: ids[4])?.event.status, .notPosted)
        XCTAssertEqual(try a.event(id: ids[4])?.event.attempts, 1)
        XCTAssertEqual(try a.event(id: ids[0])?.event.attempts, 1)

        // Once every lease and backoff has passed, each event left is delivered exactly once more.
        let sink = RecordingSink()
        XCTAssertEqual(delivery(b, sink, batchSize: 100).flush(nowMs: now + 3_600_000).posted, 11)
        XCTAssertEqual(sink.batches.flatMap { $0 }, [ids[4]] + Array(ids[20...]), "the hole first: oldest first")
        XCTAssertEqual(try a.stats()[.successfullyPosted], 30)
        XCTAssertEqual(try a.count(status: .notPosted), 0)
        XCTAssertEqual(Set(try a.list(limit: 100).filter { $0.event.id != ids[4] }.map(\.event.attempts)), [1], "each delivered once")
        XCTAssertEqual(try a.event(id: ids[4])?.event.attempts, 2, "one failed attempt, one delivery")
        XCTAssertEqual(try holes(a), [])
    }

    func testTwoStoresFlushingAtOnceWithRetriesDeliverEveryEventOnce() throws {
        let first = try store()
        let ids = try track(first, 300).map(\.id)
        let second = try store()
        // Every 7th event is refused once (a retry, due again at once), then delivered: the retries
        // become holes behind the cursor, claimed by either store.
        let refused = Set(ids.enumerated().filter { $0.offset % 7 == 3 }.map(\.element))
        let lock = NSLock()
        nonisolated(unsafe) var answered: Set<String> = []
        let sink = RecordingSink { _, events in
            .answered(
                events.map { event in
                    lock.withLock {
                        answered.insert(event.idempotencyKey).inserted && refused.contains(event.idempotencyKey) ? .retry(reason: "once") : .delivered
                    }
                })
        }
        let deliveries = [
            delivery(first, sink, batchSize: 20, retryDelay: 0),
            delivery(second, DeliveryPipelineTests.RecordingSinkForwarder(sink), batchSize: 20, retryDelay: 0)
        ]
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            for _ in 0..<2000 {  // bounded in count, and in time by the pause after a flush that found all leased
                let report = deliveries[index].flush()
                if (try? deliveries[index].store.count(status: .notPosted)) == 0 { break }
                if report.posted == 0 { usleep(2000) }
            }
        }
        let sent = sink.batches.flatMap { $0 }
        XCTAssertEqual(try first.count(status: .successfullyPosted), 300)
        XCTAssertEqual(try first.count(status: .notPosted), 0)
        XCTAssertEqual(Set(sent), Set(ids))
        XCTAssertEqual(sent.count, 300 + refused.count, "each event once, and once more for its one retry")
        XCTAssertEqual(try holes(first), [])
        for id in refused { XCTAssertEqual(try first.event(id: id)?.event.attempts, 2) }
    }

    func testPurgeDeletesThePassedEventsOlderThanTheCutOffAndKeepsHoles() throws {
        let store = try store()
        let events = try track(store, 10)
        let ids = events.map(\.id)
        let now = Clock.wallMs()
        // Batch 1 (E0-E4) with E2 to retry; batch 2 (E5-E9) posted later.
        let sink = RecordingSink { _, batch in .answered(batch.map { $0.idempotencyKey == ids[2] ? .retry(reason: "busy") : .delivered }) }
        XCTAssertEqual(delivery(store, sink, batchSize: 5).flush(nowMs: now).posted, 4)
        usleep(30_000)
        let cutOff = Clock.wallMs()
        usleep(30_000)
        XCTAssertEqual(delivery(store, RecordingSink(), batchSize: 5).flush(nowMs: now).posted, 5)
        XCTAssertEqual(try logRows(store), 2)

        XCTAssertEqual(try store.purgePosted(olderThanMs: cutOff), 4, "E0, E1, E3, E4: passed before the cut-off")
        XCTAssertEqual(Set(try store.list(limit: 100).map(\.event.id)), Set([ids[2]] + Array(ids[5...])))
        XCTAssertEqual(try store.event(id: ids[2])?.event.status, .notPosted, "the hole is kept, and still waits")
        XCTAssertEqual(try holes(store), [try seq(store, ids[2])])
        XCTAssertEqual(try store.stats()[.successfullyPosted], 5)
        XCTAssertEqual(try store.event(id: ids[5])?.event.status, .successfullyPosted, "batch 2 still dated by its log row")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(store.event(id: ids[5])).updatedMs, cutOff)

        XCTAssertEqual(try store.purgePosted(olderThanMs: Clock.wallMs() + 1), 5)
        XCTAssertEqual(try store.list(limit: 100).map(\.event.id), [ids[2]])
        XCTAssertEqual(try logRows(store), 1, "the cursor's row is kept")
        // The hole delivered (one by one) is purged by its own row's time; its hole row goes with it.
        XCTAssertEqual(delivery(store, RecordingSink(), batchSize: 5).flush(nowMs: now + 3_600_000).posted, 1)
        XCTAssertEqual(try store.purgePosted(olderThanMs: Clock.wallMs() + 1), 1)
        XCTAssertEqual(try store.list(limit: 100).count, 0)
        XCTAssertEqual(try holes(store), [])
    }

    /// Purge deleted every event, the cursor's too: SQLite alone would give the next event a seq
    /// the cursor already passed, and it would read as delivered without being sent.
    func testAnEventTrackedAfterEverythingWasPurgedIsNotTakenAsDelivered() throws {
        let store = try store()
        _ = try track(store, 5)
        XCTAssertEqual(delivery(store, RecordingSink(), batchSize: 5).flush().posted, 5)
        XCTAssertEqual(try store.purgePosted(olderThanMs: Clock.wallMs() + 1), 5)
        XCTAssertEqual(try store.list(limit: 10).count, 0)
        let cursor = try XCTUnwrap(store.pool.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(last_seq) FROM delivery_log") })

        let fresh = try track(store, 2)
        XCTAssertGreaterThan(try seq(store, fresh[0].id), cursor)
        XCTAssertEqual(try store.event(id: fresh[0].id)?.event.status, .notPosted)
        XCTAssertEqual(try store.count(status: .notPosted), 2)
        let sink = RecordingSink()
        XCTAssertEqual(delivery(store, sink, batchSize: 5).flush().posted, 2)
        XCTAssertEqual(sink.batches, [fresh.map(\.id)])
    }

    /// The public per-event calls on an event the cursor passed act on its delivered status, as
    /// they did on a row that said SUCCESSFULLY_POSTED.
    func testPerEventCallsOnAPassedEventActOnItsDeliveredStatus() throws {
        let store = try store()
        let events = try track(store, 4)
        XCTAssertEqual(delivery(store, RecordingSink(), batchSize: 10).flush().posted, 4)
        try store.release([events[0].id])
        XCTAssertEqual(try store.event(id: events[0].id)?.event.status, .successfullyPosted, "release keeps the status")
        XCTAssertEqual(try store.event(id: events[0].id)?.event.attempts, 1)
        XCTAssertEqual(try rows(store)[events[0].id]?.status, EventStatus.successfullyPosted.rawValue, "now written in its own row")
        try store.markPosted([events[1].id])
        XCTAssertEqual(try store.event(id: events[1].id)?.event.attempts, 2, "posted twice")
        var again = events[2]
        again.status = .notPosted
        try store.update(again)
        XCTAssertEqual(try store.event(id: events[2].id)?.event.status, .notPosted, "an update sets its status")
        XCTAssertEqual(try store.deliverable(limit: 10).map(\.id), [events[2].id])
        XCTAssertEqual(try store.event(id: events[3].id)?.event.status, .successfullyPosted, "the others untouched")
        XCTAssertEqual(try store.stats()[.successfullyPosted], 3)
        XCTAssertEqual(try holes(store), [try seq(store, events[2].id)], "only the waiting one is a hole")
    }

    /// A user's event retried and passed by the cursor (a hole in its backoff) still holds back
    /// that user's later events, and only theirs.
    func testAUsersLaterEventsWaitBehindItsRetriedHole() throws {
        let store = try store()
        let users = ["u1", "u2", "u1", "u2"]
        let events = try track(store, 4) { [Event.Attribute("Mobile User Id", .string(users[$0]))] }
        let ids = events.map(\.id)
        let now = Clock.wallMs()
        let sink = RecordingSink { _, batch in .answered(batch.map { $0.idempotencyKey == ids[0] ? .retry(reason: "busy") : .delivered }) }
        XCTAssertEqual(delivery(store, sink, batchSize: 2).flush(nowMs: now).posted, 1)
        XCTAssertEqual(try holes(store), [try seq(store, ids[0])])
        let meanwhile = RecordingSink()
        XCTAssertEqual(delivery(store, meanwhile, batchSize: 10).flush(nowMs: now).posted, 1)
        XCTAssertEqual(meanwhile.batches, [[ids[3]]], "u2's event goes; u1's waits behind its retry")
        let after = RecordingSink()
        XCTAssertEqual(delivery(store, after, batchSize: 10).flush(nowMs: now + 3_600_000).posted, 2)
        XCTAssertEqual(after.batches, [[ids[0], ids[2]]], "u1's in tracked order")
    }

    /// A retry delivered later by moving the cursor keeps its row's backoff time, and its row still
    /// says NOT_POSTED: it is delivered, so it holds back none of its user's later events.
    func testARetryDeliveredByTheCursorNoLongerHoldsBackItsUser() throws {
        let store = try store()
        let users = ["u1", "u2", "u1", "u2"]
        let events = try track(store, 4) { [Event.Attribute("Mobile User Id", .string(users[$0]))] }
        let ids = events.map(\.id)
        let now = Clock.wallMs()
        let sink = RecordingSink { _, batch in .answered(batch.map { $0.idempotencyKey == ids[1] ? .retry(reason: "busy") : .delivered }) }
        XCTAssertEqual(delivery(store, sink, batchSize: 2).flush(nowMs: now).posted, 1)
        // Delivered at a time past its backoff: by the cursor (it is above it), its row not written.
        XCTAssertEqual(delivery(store, RecordingSink(), batchSize: 2).flush(nowMs: now + 3_600_000).posted, 3)
        XCTAssertEqual(try store.event(id: ids[1])?.event.status, .successfullyPosted)
        let row = try store.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT status, next_attempt_ms FROM events WHERE id = ?", arguments: [ids[1]])
        }
        XCTAssertEqual(row?["status"] as String?, EventStatus.notPosted.rawValue)
        XCTAssertGreaterThan(row?["next_attempt_ms"] as Int64? ?? 0, Clock.wallMs(), "its backoff is still ahead of the clock")
        let later = try track(store, 1) { _ in [Event.Attribute("Mobile User Id", .string("u2"))] }
        let next = RecordingSink()
        XCTAssertEqual(delivery(store, next, batchSize: 10).flush().posted, 1)
        XCTAssertEqual(next.batches, [[later[0].id]])
    }

    /// A store written before the cursor (every migration to v7) with waiting, posted, failed and
    /// backed-off events: it opens with its statuses as they were, and delivers every waiting event.
    func testAVersion7StoreMigratesAndDeliversEveryWaitingEvent() throws {
        let now = Clock.wallMs()
        do {
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: OlderEventStoreSchema.sql(version: 7))
                // 1-5 waiting, 6 posted, 7 failed, 8 waiting out a backoff, 9-10 waiting.
                let rows: [(String, Int, Int64, String?)] = [
                    ("NOT_POSTED", 0, 0, nil), ("NOT_POSTED", 0, 0, nil), ("EXPIRED", 0, 0, nil), ("NOT_POSTED", 0, 0, nil),
                    ("NOT_POSTED", 0, 0, nil), ("SUCCESSFULLY_POSTED", 1, 0, nil), ("FAILED_POST", 3, 0, "HTTP 500"),
                    ("NOT_POSTED", 1, now + 600_000, "busy"), ("NOT_POSTED", 0, 0, nil), ("NOT_POSTED", 0, 0, nil)
                ]
                for (index, row) in rows.enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO events (seq, id, type, name, timestamp_ms, attributes, status, attempts, next_attempt_ms, created_ms, updated_ms, last_error)
                            VALUES (?, ?, 'named_event', ?, 1000, '[]', ?, ?, ?, 1, 1, ?)
                            """, arguments: [index + 1, "v7-\(index + 1)", "E\(index + 1)", row.0, row.1, row.2, row.3])
                }
            }
        }
        let store = try store()
        let tables = try store.pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        XCTAssertTrue(tables.contains("delivery_log") && tables.contains("delivery_holes"), "\(tables)")
        XCTAssertEqual(try logRows(store), 0, "no cursor yet")
        XCTAssertEqual(try store.stats(), [EventStatus.notPosted: 7, .expired: 1, .successfullyPosted: 1, .failedPost: 1, .hold: 0])

        let sink = RecordingSink()
        XCTAssertEqual(delivery(store, sink, batchSize: 100).flush(nowMs: now).posted, 7)
        XCTAssertEqual(sink.batches.flatMap { $0 }, ["v7-1", "v7-2", "v7-3", "v7-4", "v7-5", "v7-9", "v7-10"])
        XCTAssertEqual(try holes(store), [8], "the backed-off event the cursor passed")
        XCTAssertEqual(try store.event(id: "v7-6")?.event.attempts, 1, "a posted row keeps its own attempts")
        XCTAssertEqual(try store.event(id: "v7-7")?.event.status, .failedPost)
        XCTAssertEqual(try store.event(id: "v7-8")?.event.status, .notPosted)
        XCTAssertEqual(try store.event(id: "v7-3")?.event.status, .successfullyPosted)

        XCTAssertEqual(delivery(store, RecordingSink(), batchSize: 100).flush(nowMs: now + 3_600_000).posted, 1)
        XCTAssertEqual(try store.count(status: .notPosted), 0)
        XCTAssertEqual(try store.count(status: .expired), 0)
        XCTAssertEqual(try store.stats(), [EventStatus.notPosted: 0, .expired: 0, .successfullyPosted: 9, .failedPost: 1, .hold: 0])
        XCTAssertEqual(try store.event(id: "v7-8")?.event.attempts, 2)
    }

    /// The cursor's read of a passed range touches only the status index; the holes are walked by
    /// their own key.
    func testTheCursorReadsOnlyTheStatusIndex() throws {
        let store = try store()
        let plan = { (sql: String, arguments: StatementArguments) in
            try store.pool.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN \(sql)", arguments: arguments).map { $0["detail"] as String }
            }
        }
        let passed = try plan(EventStore.passedRowsSQL, [0, 100])
        XCTAssertTrue(passed.contains { $0.contains("USING COVERING INDEX events_by_status_seq (status=? AND seq>? AND seq<?)") }, "\(passed)")
        let holes = try plan(EventStore.claimHolesSQL, EventStore.dueHoleArguments(nowMs: 0, limit: 10, in: 1...100))
        XCTAssertTrue(holes.contains { $0.contains("SEARCH h USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)") }, "\(holes)")
        XCTAssertFalse(holes.contains { $0.contains("SCAN e") || $0.contains("SCAN events") }, "\(holes)")
    }
}
