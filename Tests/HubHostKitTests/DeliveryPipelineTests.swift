import Foundation
import Logging
import XCTest

@testable import HubHostKit

/// EventDelivery's pipeline: the sink delivers batch k while the store records batch k-1 and claims
/// batch k+1 in one transaction. The sink must still see every event once, in tracked order, one
/// batch after the other; a claimed batch that is not sent goes back at once; and a batch in flight
/// (or claimed ahead) is never claimable by another store on the same file.
final class DeliveryPipelineTests: XCTestCase {
    /// A sink in Swift that records each batch's idempotency keys and answers by `answer`.
    final class RecordingSink: EventSink, @unchecked Sendable {
        let name = "recording"
        var unavailableReason: String? { nil }
        private let lock = NSLock()
        private var recorded: [[String]] = []
        private var inFlight = 0
        private(set) var overlapped = false
        let answer: @Sendable (_ batchIndex: Int, _ events: [SinkEvent]) -> SinkBatchResult

        init(
            answer: @escaping @Sendable (_ batchIndex: Int, _ events: [SinkEvent]) -> SinkBatchResult = { _, events in
                .answered(Array(repeating: .delivered, count: events.count))
            }
        ) {
            self.answer = answer
        }

        var batches: [[String]] { lock.withLock { recorded } }

        func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkBatchResult {
            let index: Int = lock.withLock {
                inFlight += 1
                if inFlight > 1 { overlapped = true }
                recorded.append(events.map(\.idempotencyKey))
                return recorded.count - 1
            }
            defer { lock.withLock { inFlight -= 1 } }
            return answer(index, events)
        }
    }

    private var path = ""

    override func setUpWithError() throws {
        path = try TestSupport.temporaryFolder(self) + "/events.sqlite"
    }

    private func store() throws -> EventStore { try EventStore.open(path: path).store }

    private func delivery(_ store: EventStore, _ sink: EventSink, batchSize: Int) -> EventDelivery {
        let settings = EventSettings(values: ["retry_base_delay": .double(60), "max_num_retries": .int(3), "post_timeout": .double(30)])
        let delivery = EventDelivery(settings: settings, store: store, sink: sink, logger: Logger(label: "pipeline-test"))
        delivery.batchSize = batchSize
        return delivery
    }

    /// `count` events tracked in order (each insert its own transaction, so seq follows the order).
    private func track(_ store: EventStore, _ count: Int) throws -> [String] {
        let events = (0..<count).map { Event(type: .namedEvent, name: "E\($0)", timestampMs: 1_700_000_000_000 + Int64($0)) }
        try store.insert(events)
        return events.map(\.id)
    }

    func testEveryEventOnceInTrackedOrderBatchAfterBatch() throws {
        let store = try store()
        let ids = try track(store, 95)
        let sink = RecordingSink()
        let report = delivery(store, sink, batchSize: 10).flush()
        XCTAssertEqual(report.posted, 95, "\(report)")
        XCTAssertEqual(report.batches, 10)
        XCTAssertNil(report.lastError)
        XCTAssertEqual(sink.batches.map(\.count), Array(repeating: 10, count: 9) + [5])
        XCTAssertEqual(sink.batches.flatMap { $0 }, ids, "tracked order, each once")
        XCTAssertFalse(sink.overlapped, "one deliver call at a time")
        XCTAssertEqual(try store.count(status: .successfullyPosted), 95)
        XCTAssertEqual(try store.deliverable(limit: 1000, nowMs: Clock.wallMs() + 3_600_000).count, 0, "no lease left behind")
        XCTAssertEqual(
            try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM delivery_leases") }, 0,
            "each batch's lease row ended with its statuses")
    }

    func testDueEventsAreTheOldestOfBothStatusesInSeqOrder() throws {
        let store = try store()
        let now = Clock.wallMs()
        // seq order: E0..E9; EXPIRED and NOT_POSTED interleaved, two not due yet, one posted.
        let statuses: [EventStatus] = [
            .expired, .notPosted, .notPosted, .expired, .successfullyPosted, .notPosted, .expired, .notPosted, .expired, .notPosted
        ]
        let events = statuses.enumerated().map { Event(type: .namedEvent, name: "E\($0.offset)", status: $0.element) }
        try store.insert(events)
        try store.markAttemptFailed([events[2].id, events[6].id], error: "later", retryAtMs: now + 60_000, maxAttempts: 10)
        let due = [0, 1, 3, 5, 7, 8, 9].map { events[$0].id }
        XCTAssertEqual(try store.deliverable(limit: 100, nowMs: now).map(\.id), due)
        XCTAssertEqual(try store.deliverable(limit: 4, nowMs: now).map(\.id), Array(due.prefix(4)), "the oldest, whatever their status")
        XCTAssertEqual(try store.claimDeliverable(limit: 4, nowMs: now, leaseUntilMs: now + 60_000).map(\.id), Array(due.prefix(4)))
        XCTAssertEqual(try store.deliverable(limit: 100, nowMs: now).map(\.id), Array(due.suffix(3)), "the claimed ones are leased")
    }

    func testABatchWithRetriesStopsTheFlushAndTheBatchClaimedAheadIsReleased() throws {
        let store = try store()
        let ids = try track(store, 50)
        // Batch 1 (events 10-19): event 12 is to be retried, the rest delivered.
        let retried = ids[12]
        let sink = RecordingSink { _, events in
            .answered(events.map { $0.idempotencyKey == retried ? .retry(reason: "busy") : .delivered })
        }
        let report = delivery(store, sink, batchSize: 10).flush()
        XCTAssertEqual(sink.batches.count, 2, "batch 2 is not sent after batch 1 asked for a retry")
        XCTAssertEqual(report.posted, 19)
        XCTAssertEqual(report.retrying, 1)
        XCTAssertEqual(report.lastError, "busy")
        // The batch claimed ahead (20-29) and the rest are deliverable at once, in order; the retried one is not.
        let due = try store.deliverable(limit: 1000).map(\.id)
        XCTAssertEqual(due, Array(ids[20...]), "released, nothing kept leased")
        let retriedNow = try XCTUnwrap(store.event(id: retried))
        XCTAssertEqual(retriedNow.event.attempts, 1)
        XCTAssertEqual(retriedNow.lastError, "busy")
        XCTAssertEqual(retriedNow.event.status, .notPosted)
        // The next flush carries on from event 20.
        let next = delivery(store, RecordingSink(), batchSize: 10).flush()
        XCTAssertEqual(next.posted, 30)
        XCTAssertEqual(try store.count(status: .successfullyPosted), 49)
    }

    /// An event waiting out its backoff holds back its user's later events (by Mobile User Id, else
    /// Device Id), and only theirs: other users and events with neither id go out meanwhile.
    func testAUsersLaterEventsWaitBehindItsEventInBackoff() throws {
        let store = try store()
        let now = Clock.wallMs()
        let users: [(String, String)?] = [
            ("Mobile User Id", "u1"), ("Mobile User Id", "u2"), nil, ("Device Id", "d1"), ("Mobile User Id", "u1"),
            ("Mobile User Id", "u2"), ("Device Id", "d1"), nil, ("Mobile User Id", "u1")
        ]
        let events = users.enumerated().map { index, user in
            Event(type: .namedEvent, name: "E\(index)", attributes: user.map { [.init($0.0, .string($0.1))] } ?? [])
        }
        try store.insert(events)
        // u1's first event and d1's first failed: they wait 60 s.
        try store.markAttemptFailed([events[0].id, events[3].id], error: "broker down", retryAtMs: now + 60_000, maxAttempts: 10)
        let claimed = try store.claimDeliverable(limit: 100, nowMs: now, leaseUntilMs: now + 1_000)
        XCTAssertEqual(claimed.map(\.name), ["E1", "E2", "E5", "E7"], "u2's and the anonymous events; u1's and d1's later ones wait")
        try store.markPosted(claimed.map(\.id))
        // Once the backoff has passed, each user's events go out in tracked order.
        let later = try store.claimDeliverable(limit: 100, nowMs: now + 61_000, leaseUntilMs: now + 62_000)
        XCTAssertEqual(later.map(\.name), ["E0", "E3", "E4", "E6", "E8"])
    }

    /// Many events of waiting users ahead of one that may go: the claim reads past them (bounded)
    /// instead of returning an empty batch.
    func testAClaimReadsPastEventsHeldForOrder() throws {
        let store = try store()
        let now = Clock.wallMs()
        let first = Event(type: .namedEvent, name: "FIRST", attributes: [.init("Mobile User Id", .string("busy"))])
        let held = (0..<25).map { Event(type: .namedEvent, name: "H\($0)", attributes: [.init("Mobile User Id", .string("busy"))]) }
        let free = Event(type: .namedEvent, name: "FREE", attributes: [.init("Mobile User Id", .string("other"))])
        try store.insert([first] + held + [free])
        try store.markAttemptFailed([first.id], error: "down", retryAtMs: now + 60_000, maxAttempts: 10)
        XCTAssertEqual(try store.claimDeliverable(limit: 5, nowMs: now, leaseUntilMs: now + 1_000).map(\.name), ["FREE"])
    }

    func testANotAttemptedBatchAndTheOneClaimedAheadStayAsTheyWere() throws {
        let store = try store()
        let ids = try track(store, 30)
        let sink = RecordingSink { index, events in
            index == 1 ? .notAttempted(reason: "no token yet") : .answered(Array(repeating: .delivered, count: events.count))
        }
        let report = delivery(store, sink, batchSize: 10).flush()
        XCTAssertEqual(report.posted, 10)
        XCTAssertEqual(report.lastError, "no token yet")
        let due = try store.deliverable(limit: 1000)
        XCTAssertEqual(due.map(\.id), Array(ids[10...]), "both batches deliverable at once")
        XCTAssertEqual(Set(due.map(\.attempts)), [0], "not an attempt")
    }

    func testABatchInFlightOrClaimedAheadIsNotClaimableByAnotherStore() throws {
        let store = try store()
        let ids = try track(store, 40)
        let other = try self.store()  // another process's connection to the same file
        let seenByOther = NSLock()
        nonisolated(unsafe) var claimableDuringBatch: [[String]] = []
        let sink = RecordingSink { _, events in
            let due = (try? other.deliverable(limit: 1000).map(\.id)) ?? ["(store error)"]
            seenByOther.withLock { claimableDuringBatch.append(due) }
            return .answered(Array(repeating: .delivered, count: events.count))
        }
        XCTAssertEqual(delivery(store, sink, batchSize: 10).flush().posted, 40)
        XCTAssertEqual(sink.batches.flatMap { $0 }, ids)
        for (batch, due) in zip(sink.batches, claimableDuringBatch) {
            XCTAssertTrue(Set(batch).isDisjoint(with: due), "the batch in flight is leased")
            XCTAssertTrue(
                due.allSatisfy { id in ids.firstIndex(of: id)! > ids.firstIndex(of: batch.last!)! },
                "only events after the batch in flight are claimable")
        }
    }

    func testTwoStoresFlushingAtOnceDeliverEachEventOnce() throws {
        let first = try store()
        let ids = try track(first, 400)
        let second = try store()
        let sink = RecordingSink()
        let deliveries = [delivery(first, sink, batchSize: 25), delivery(second, RecordingSinkForwarder(sink), batchSize: 25)]
        let reports = NSLock()
        nonisolated(unsafe) var posted = 0
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            for _ in 0..<2000 {  // bounded in count, and in time by the pause after a flush that found all leased
                let report = deliveries[index].flush()
                reports.withLock { posted += report.posted }
                if (try? deliveries[index].store.count(status: .notPosted)) == 0 { break }
                if report.posted == 0 { usleep(2000) }
            }
        }
        XCTAssertEqual(posted, 400)
        XCTAssertEqual(sink.batches.flatMap { $0 }.count, 400, "no event posted by both")
        XCTAssertEqual(Set(sink.batches.flatMap { $0 }), Set(ids))
    }

    /// A second sink object over the same record (each EventDelivery has its own sink queue).
    final class RecordingSinkForwarder: EventSink, @unchecked Sendable {
        let target: RecordingSink
        init(_ target: RecordingSink) { self.target = target }
        var name: String { "forwarder" }
        var unavailableReason: String? { nil }
        func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkBatchResult { target.deliver(events, timeoutMs: timeoutMs) }
    }
}
