import Foundation
import GRDB
import XCTest

@testable import HubHostKit

/// Hostile and out-of-range input at the event engine's boundaries (JSON, Swift API, a poisoned
/// store), and several processes on one store: nothing traps, a refused batch stores nothing.
final class EventSafetyTests: FolderTestCase {
    private func host(plugins: String = "") throws -> HubHost {
        try TestSupport.write(
            "data_dir: data\nevents: {cache_size: 1000}\nplugins:\(plugins.isEmpty ? " []" : "\n" + plugins)",
            to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    func testOutOfRangeTimestampsAreRefusedAtTheJSONBoundaryWithTheRange() throws {
        for stamp in [
            "1e300", "-1e300", "-9223372036854775808", "9223372036854775807", "-1", "253402300800000", "\"-9223372036854775808\"",
            "\"10000-01-01T00:00:00Z\"", "true"
        ] {
            XCTAssertThrowsError(try EventInput.parse(Data(#"{"name":"x","timestamp":\#(stamp)}"#.utf8)), stamp) { error in
                XCTAssertTrue("\(error)".contains("timestamp"), "\(stamp): \(error)")
            }
        }
        XCTAssertEqual(try EventInput.parse(Data(#"{"name":"x","timestamp":253402300799999}"#.utf8))[0].timestampMs, 253_402_300_799_999)
        XCTAssertEqual(try EventInput.parse(Data(#"{"name":"x","timestamp":"2014-06-10T00:00:00Z"}"#.utf8))[0].timestampMs, 1_402_358_400_000)
        XCTAssertThrowsError(try EventInput.parse(Data(#"{"name":"x","attributes":{"t":{"type":"time","value":-5}}}"#.utf8)))
        XCTAssertThrowsError(try EventInput.parse(Data(#"{"name":"x","attributes":{"n":{"type":"int","value":1e300}}}"#.utf8)))
    }

    func testWrongJSONTypesForNameAndIDAreRefusedNamingTheField() throws {
        XCTAssertThrowsError(try EventInput.parse(Data(#"{"name": 5}"#.utf8))) { XCTAssertTrue("\($0)".contains("'name' must be a string"), "\($0)") }
        XCTAssertThrowsError(try EventInput.parse(Data(#"{"name": "x", "id": 7}"#.utf8))) {
            XCTAssertTrue("\($0)".contains("'id' must be a string"), "\($0)")
        }
    }

    func testTheSwiftAPIRefusesOutOfRangeTimesAndStoresNothing() throws {
        let engine = try host().events()
        XCTAssertThrowsError(try engine.track(Event(type: .namedEvent, name: "x", timestampMs: .min))) { error in
            XCTAssertTrue(error is EventLimits.Refusal, "\(error)")
        }
        XCTAssertThrowsError(
            try engine.trackBatch([
                Event(type: .namedEvent, name: "ok"),
                Event(type: .namedEvent, name: "x", attributes: [.init("d", .double(.nan))])
            ]))
        XCTAssertEqual(try engine.store.list().count, 0, "a refused batch stores none of its events")
    }

    /// A store an older version wrote with a timestamp of -2^63 in the session state: the next
    /// ordinary event once trapped on every start ("arithmetic overflow"). Now it ends that session.
    func testAPoisonedSessionStateNoLongerTraps() throws {
        _ = try host().events()
        let store = try EventStore.open(path: folder + "/data/events.sqlite").store
        try KeyValueState(store: store).set(SessionTracker.key, SessionTracker.State(startedMs: .min, lastActivityMs: .min))
        let again = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { again.shutdown() }
        let tracked = try again.events().track(Event(type: .namedEvent, name: "after"))
        XCTAssertEqual(tracked.name, "after")
        let types = try again.events().store.list().map(\.event.type)
        XCTAssertTrue(types.contains(.sessionEnded) && types.contains(.sessionStarted), "\(types)")
    }

    func testARepeatedIDStoresNothingOfItsBatch() throws {
        let engine = try host().events()
        let first = try engine.trackBatch([Event(id: "same", type: .namedEvent, name: "one")])
        XCTAssertEqual(first.map(\.id), ["same"])
        XCTAssertThrowsError(
            try engine.trackBatch([Event(id: "new-1", type: .namedEvent, name: "a"), Event(id: "same", type: .namedEvent, name: "b")])
        ) {
            XCTAssertTrue($0 is EventEngine.DuplicateEventID, "\($0)")
        }
        // Found by the store's unique index, then named as the input's own repeat.
        XCTAssertThrowsError(
            try engine.trackBatch([
                Event(id: "twice", type: .namedEvent), Event(id: "other", type: .namedEvent), Event(id: "twice", type: .namedEvent)
            ])
        ) {
            let duplicate = $0 as? EventEngine.DuplicateEventID
            XCTAssertEqual(duplicate?.id, "twice", "\($0)")
            XCTAssertEqual(duplicate?.reason, "it appears twice in the input")
        }
        XCTAssertThrowsError(try engine.track(Event(id: "same", type: .namedEvent, name: "c"))) { XCTAssertTrue($0 is EventEngine.DuplicateEventID) }
        let ids = Set(try engine.store.list().map(\.event.id))
        XCTAssertFalse(ids.contains("new-1") || ids.contains("twice") || ids.contains("other"), "\(ids)")
        // The engine still works, with its session state as stored.
        XCTAssertNoThrow(try engine.trackBatch([Event(id: "new-2", type: .namedEvent, name: "d")]))
    }

    func testTooManyAttributesAreRefusedWithTheLimit() throws {
        var attributes: [String] = []
        for i in 0..<100_000 { attributes.append("\"a\(i)\": \(i)") }
        let json = Data("{\"name\": \"big\", \"attributes\": {\(attributes.joined(separator: ","))}}".utf8)
        XCTAssertThrowsError(try EventInput.parse(json)) { error in
            XCTAssertTrue("\(error)".contains("limit is \(EventLimits.maxAttributes)"), "\(error)")
            XCTAssertEqual((error as? EventInput.Problem)?.tooLarge, true)
        }
        let fits = Data("{\"name\": \"ok\", \"attributes\": {\(attributes.prefix(EventLimits.maxAttributes).joined(separator: ","))}}".utf8)
        XCTAssertEqual(try EventInput.parse(fits)[0].attributes.count, EventLimits.maxAttributes)
    }

    func testDurationsOutsideAHundredYearsAreRefused() {
        for text in ["1e300", "inf", "nan", "200000 weeks"] {
            guard case .failure = EngageDuration.parse(text) else { return XCTFail("\(text) was accepted") }
        }
        XCTAssertEqual(try EngageDuration.parse("1d").get(), 86_400)
    }

    func testACampaignEndTimeOutsideTheRangeDoesNotActivateOrTrap() throws {
        let engine = try host().events()
        for end in ["1e300", "-1e300", "nan", "inf"] {
            let event = try engine.notification(opened: true, payload: ["CurrentCampaign": "c-\(end)", "CampaignEndTimeStamp": end])
            XCTAssertNil(event[attribute: "Campaign Name"], end)
        }
    }

    /// A HOLD is only recovered (EXPIRED) when its holder is gone: a second process opening the
    /// same store must not take a live process's event and post it unaugmented.
    func testOnlyADeadProcessesHoldsAreRecovered() throws {
        let store = try EventStore.open(path: folder + "/events.sqlite").store
        var live = Event(id: "live", type: .namedEvent)
        live.status = .hold
        try store.insert([live])  // held by this, running, process
        var dead = Event(id: "dead", type: .namedEvent)
        dead.status = .hold
        try store.insert([dead])
        try store.pool.write { try $0.execute(sql: "UPDATE events SET holder = '999999999:1' WHERE id = 'dead'") }
        XCTAssertEqual(try store.expireStaleHolds(olderThanMs: 0), 1)
        XCTAssertEqual(try store.event(id: "live")?.event.status, .hold)
        XCTAssertEqual(try store.event(id: "dead")?.event.status, .expired)
        XCTAssertTrue(ProcessIdentity.isRunning(ProcessIdentity.current))
        XCTAssertFalse(ProcessIdentity.isRunning("1:0"))
    }

    /// Two deliveries (two processes' flushes) never claim the same event.
    func testClaimsDoNotOverlap() throws {
        let store = try EventStore.open(path: folder + "/events.sqlite").store
        try store.insert((0..<10).map { Event(id: "e\($0)", type: .namedEvent) })
        let now = Clock.wallMs()
        let a = try store.claimDeliverable(limit: 6, nowMs: now, leaseUntilMs: now + 60_000)
        let b = try store.claimDeliverable(limit: 6, nowMs: now, leaseUntilMs: now + 60_000)
        XCTAssertEqual(a.count, 6)
        XCTAssertEqual(b.count, 4)
        XCTAssertTrue(Set(a.map(\.id)).isDisjoint(with: b.map(\.id)))
        try store.release(a.map(\.id))
        XCTAssertEqual(try store.claimDeliverable(limit: 10, nowMs: now, leaseUntilMs: now + 60_000).count, 6)
    }

    /// Two processes on one data directory (two hosts here) share one session and one current
    /// campaign: each reads the state as stored before it tracks, never its own stale copy.
    func testTwoProcessesShareTheSessionAndTheCurrentCampaign() throws {
        let first = try host().events()
        let second = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { second.shutdown() }
        let other = try second.events()
        let now = Clock.wallMs()
        try first.track(Event(type: .namedEvent, name: "A", timestampMs: now))
        try other.track(Event(type: .namedEvent, name: "B", timestampMs: now + 1_000))
        try first.notification(opened: true, payload: ["CurrentCampaign": "shared"])
        let tracked = try other.track(Event(type: .namedEvent, name: "C", timestampMs: now + 2_000))
        let started = try first.store.list(limit: 100).filter { $0.event.type == .sessionStarted }
        XCTAssertEqual(started.count, 1, "one session across both processes")
        XCTAssertEqual(tracked[attribute: "Campaign Name"], .string("shared"), "the campaign the other process opened")
    }
}
