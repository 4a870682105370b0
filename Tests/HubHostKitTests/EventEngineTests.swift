import Foundation
import XCTest

@testable import HubHostKit

/// The event pipeline against a real collector on 127.0.0.1 and a real SQLite file on disk.
final class EventEngineTests: FolderTestCase {
    private var collector: TestCollector!

    override func setUpWithError() throws {
        try super.setUpWithError()
        collector = try TestCollector()
        addTeardownBlock { [collector] in collector?.stop() }
    }

    /// A host whose events section is `events` (YAML lines, indented by 2) and plugins `plugins`.
    private func host(events: String, plugins: String = "") throws -> (HubHost, LogCapture) {
        try TestSupport.write("data_dir: data\nlogging: {severity: info}\nevents:\n\(events)\nplugins:\n\(plugins)", to: folder + "/plugins.yaml")
        let capture = LogCapture()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml", extraDestinations: [capture])
        addTeardownBlock { host.shutdown() }
        return (host, capture)
    }

    private func named(_ name: String, _ attributes: [Event.Attribute] = []) -> Event {
        Event(type: .namedEvent, name: name, attributes: attributes)
    }

    func testTrackStoresDurablyWithCoreValuesAndTheCallerWins() throws {
        let (host, _) = try host(events: "  app_name: Demo\n  os_version: \"12\"\n  collector_url: \(collector.url)\n  cache_size: 100")
        let engine = try host.events()
        let tracked = try engine.track(named("PLAYER LOADED", [.init("App Name", .string("Mine")), .init("Level", .int(3))]))
        XCTAssertEqual(tracked.status, .notPosted)
        XCTAssertEqual(tracked[attribute: "App Name"], .string("Mine"), "the caller's value wins")
        XCTAssertEqual(tracked[attribute: "OS Version"], .string("12"))
        XCTAssertEqual(tracked[attribute: "Level"], .int(3))
        // On disk, read back by a second store on the same file.
        let reopened = try EventStore.open(path: folder + "/data/events.sqlite").store
        XCTAssertEqual(try reopened.event(id: tracked.id)?.event, tracked)
        XCTAssertEqual(try reopened.stats()[.notPosted], 2, "the event and its session-started event")
        XCTAssertTrue(collector.requests.isEmpty, "cache_size not reached: nothing posted")
    }

    func testABatchIsPostedWhenCacheSizeIsReached() throws {
        let (host, _) = try host(events: "  collector_url: \(collector.url)\n  cache_size: 3")
        let engine = try host.events()
        let first = try engine.track(named("ONE"))  // + session started = 2 waiting
        XCTAssertTrue(collector.requests.isEmpty)
        let second = try engine.track(named("TWO", [.init("Score", .double(1.5)), .init("At", .timeMs(1_402_358_400_000))]))
        XCTAssertEqual(collector.requests.count, 1)
        let body = try XCTUnwrap(JSONSerialization.jsonObject(with: collector.requests[0].body) as? [String: Any])
        let events = try XCTUnwrap(body["events"] as? [[String: Any]])
        XCTAssertEqual(events.map { $0["eventTypeCode"] as? String }, ["13", "17", "17"])
        XCTAssertEqual(Set(collector.acceptedKeys), Set(try engine.store.list().map(\.event.id)))
        let two = try XCTUnwrap(events.last?["attributes"] as? [[String: String]])
        XCTAssertEqual(two.first, ["name": "Event Name", "value": "TWO"])
        XCTAssertTrue(two.contains(["name": "At", "value": "2014-06-10T00:00:00.000Z"]), "\(two)")
        XCTAssertTrue(two.contains(["name": "Score", "value": "1.5"]))
        XCTAssertEqual(events.last?["eventTimestamp"] as? String, EventDelivery.isoTime(second.timestampMs))
        XCTAssertEqual(try engine.store.event(id: first.id)?.event.status, .successfullyPosted)
        XCTAssertEqual(collector.requests[0].headers["content-type"], "application/json")
    }

    func testCollectorFailuresRetryThenSucceedWithNothingLostOrPostedTwice() throws {
        let (host, _) = try host(
            events: "  collector_url: \(collector.url)\n  cache_size: 100\n  retry_base_delay: 0\n  max_num_retries: 5\n  post_timeout: 0.5")
        let engine = try host.events()
        collector.script([.status(500), .close, .hang, .status(503)], then: .status(200))
        var ids: [String] = []
        for i in 0..<5 { ids.append(try engine.track(named("E\(i)")).id) }
        var reports: [DeliveryReport] = []
        for _ in 0..<5 { reports.append(engine.flush()) }
        XCTAssertEqual(reports.map(\.posted), [0, 0, 0, 0, 6])
        XCTAssertEqual(reports[0].lastError, "the collector answered HTTP 500")
        XCTAssertNotNil(reports[1].lastError)
        XCTAssertEqual(reports[2].lastError?.contains("before the deadline"), true, "\(reports[2])")
        XCTAssertEqual(try engine.store.stats()[.successfullyPosted], 6)
        // Every event was accepted exactly once.
        XCTAssertEqual(collector.acceptedKeys.count, 6)
        XCTAssertEqual(Set(collector.acceptedKeys).count, 6)
        XCTAssertTrue(Set(ids).isSubset(of: Set(collector.acceptedKeys)))
        // Each failed attempt was the same batch, with the same idempotency keys.
        let batches = collector.requests.map { request -> [String] in
            let json = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any]
            return (json?["events"] as? [[String: Any]])?.compactMap { $0["idempotencyKey"] as? String } ?? []
        }
        XCTAssertEqual(Set(batches.map { $0.sorted() }).count, 1)
    }

    func testAfterMaxRetriesEventsAreFailedPostAndNotRetried() throws {
        let (host, _) = try host(events: "  collector_url: \(collector.url)\n  cache_size: 100\n  retry_base_delay: 0\n  max_num_retries: 3")
        let engine = try host.events()
        collector.script([], then: .status(500))
        _ = try engine.track(named("DOOMED"))
        let reports = (0..<3).map { _ in engine.flush() }
        XCTAssertEqual(reports.map(\.failed), [0, 0, 2])
        XCTAssertEqual(try engine.store.stats()[.failedPost], 2)
        collector.script([], then: .status(200))
        XCTAssertEqual(engine.flush().posted, 0, "FAILED_POST is never retried")
        XCTAssertEqual(collector.requests.count, 3)
        XCTAssertEqual(try engine.store.list(status: .failedPost).first?.lastError, "the collector answered HTTP 500")
    }

    func testAnAbsentCollectorLosesNothing() throws {
        let port = collector.port
        collector.stop()
        let (host, _) = try host(
            events: "  collector_url: http://127.0.0.1:\(port)/collect\n  cache_size: 100\n  retry_base_delay: 0\n  max_num_retries: 10")
        let engine = try host.events()
        _ = try engine.track(named("OFFLINE"))
        let report = engine.flush()
        XCTAssertEqual(report.posted, 0)
        XCTAssertEqual(report.retrying, 2)
        XCTAssertEqual(try engine.store.stats()[.notPosted], 2)
    }

    func testOAuthTokenIsCachedAnd401RefreshesOnce() throws {
        let (host, _) = try host(
            events: """
                  collector_url: \(collector.url)
                  cache_size: 100
                  auth_token_url: \(collector.tokenURL)
                  auth_client_id: app
                  auth_client_secret: s3cret
                  auth_refresh_token: r1
                """)
        let engine = try host.events()
        _ = try engine.track(named("A"))
        XCTAssertEqual(engine.flush().posted, 2)
        XCTAssertEqual(collector.tokenRequests, 1)
        XCTAssertEqual(collector.requests.last?.headers["authorization"], "Bearer token-1")
        _ = try engine.track(named("B"))
        XCTAssertEqual(engine.flush().posted, 1)
        XCTAssertEqual(collector.tokenRequests, 1, "the token is cached until it expires")
        collector.script([.status(401)], then: .status(200))
        _ = try engine.track(named("C"))
        XCTAssertEqual(engine.flush().posted, 1)
        XCTAssertEqual(collector.tokenRequests, 2, "a 401 refreshes the token once")
        XCTAssertEqual(collector.requests.last?.headers["authorization"], "Bearer token-2")
    }

    func testEventsWaitWhileAuthenticationFails() throws {
        let (host, _) = try host(
            events: """
                  collector_url: \(collector.url)
                  cache_size: 100
                  auth_token_url: http://127.0.0.1:1/token
                  auth_refresh_token: r1
                """)
        let engine = try host.events()
        _ = try engine.track(named("QUEUED"))
        let report = engine.flush()
        XCTAssertEqual(report.posted, 0)
        XCTAssertTrue(report.lastError?.hasPrefix("token endpoint:") ?? false, "\(report)")
        let waiting = try engine.store.list(status: .notPosted)
        XCTAssertEqual(waiting.count, 2, "queued, not dropped")
        XCTAssertEqual(waiting.map(\.event.attempts), [0, 0], "not counted as attempts")
    }

    /// A host whose one augmentation plugin (in a worker) never answers, under a 300 ms
    /// augmentation_timeout.
    private func hangingAugmentationHost() throws -> (HubHost, LogCapture) {
        let fixture = try TestSupport.faultyFixture("HANG", in: folder)
        return try host(
            events: "  collector_url: \(collector.url)\n  cache_size: 100\n  augmentation_timeout: 300ms",
            plugins: """
                  - id: slow
                    use: \(fixture)
                    isolation: process
                    call_timeout: 2s
                """)
    }

    /// A batch whose augmentation passes the timeout: every event of it comes back EXPIRED, in
    /// order, with its own attributes, and is stored; the warning names the batch (with the
    /// session start the batch began).
    func testAHangingAugmentationExpiresABatchAndItIsStored() throws {
        let (host, capture) = try hangingAugmentationHost()
        let engine = try host.events()
        let batch = (1...3).map { named("SLOW \($0)", [.init("Level", .int(Int64($0)))]) }
        let tracked = try engine.trackBatch(batch)
        XCTAssertEqual(tracked.map(\.id), batch.map(\.id), "the caller's events, in order")
        XCTAssertEqual(tracked.map(\.status), [.expired, .expired, .expired])
        XCTAssertEqual(tracked.map { $0[attribute: "Level"] }, [.int(1), .int(2), .int(3)])
        XCTAssertEqual(tracked.map { $0[attribute: "Fixture"] }, [nil, nil, nil])
        XCTAssertTrue(
            capture.messages.contains { $0.contains("augmentation of a batch of") && $0.contains("events did not finish within 0.3s") },
            "\(capture.messages)")
        for event in tracked { XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .expired) }
    }

    func testAHangingAugmentationExpiresTheEventAndItIsDelivered() throws {
        let (host, capture) = try hangingAugmentationHost()
        let engine = try host.events()
        let original = named("SLOW", [.init("Level", .int(1))])
        let tracked = try engine.track(original)
        XCTAssertEqual(tracked.status, .expired)
        XCTAssertNil(tracked[attribute: "Fixture"])
        XCTAssertEqual(tracked[attribute: "Level"], .int(1))
        XCTAssertTrue(
            capture.messages.contains { $0.contains("augmentation of event \(tracked.id) did not finish within 0.3s") }, "\(capture.messages)")
        XCTAssertEqual(engine.flush().posted, 2)
        XCTAssertEqual(try engine.store.event(id: tracked.id)?.event.status, .successfullyPosted)
    }

    func testAugmentationAddsDataAndAFailingPluginLosesNothing() throws {
        let good = try TestSupport.faultyFixture(nil, in: folder)
        let garbage = try TestSupport.faultyFixture("GARBAGE_STATUS", in: folder)
        let (host, capture) = try host(
            events: "  cache_size: 100",
            plugins: """
                  - id: good
                    use: \(good)
                  - id: broken
                    use: \(garbage)
                """)
        let tracked = try host.events().track(named("AUGMENT"))
        XCTAssertEqual(tracked.status, .notPosted)
        XCTAssertEqual(tracked[attribute: "Fixture"], .string("augmented"))
        XCTAssertTrue(
            capture.messages.contains {
                $0.hasPrefix("augmentation 'broken/faulty-augmentation' failed on event \(tracked.id) (unknown status 12345)")
            },
            "\(capture.messages)")
    }

    func testSessionsStartAndEndExcludingInactiveTime() throws {
        let (host, _) = try host(events: "  cache_size: 100\n  session_timeout: 60")
        let engine = try host.events()
        let t0: Int64 = 1_700_000_000_000
        _ = try engine.track(Event(type: .namedEvent, name: "A", timestampMs: t0))
        _ = try engine.track(Event(type: .namedEvent, name: "B", timestampMs: t0 + 30_000))
        _ = try engine.track(Event(type: .namedEvent, name: "C", timestampMs: t0 + 50_000))
        _ = try engine.track(Event(type: .namedEvent, name: "D", timestampMs: t0 + 50_000 + 3_600_000))  // an hour idle
        let events = try engine.store.list(limit: 100).map(\.event).reversed()
        XCTAssertEqual(events.map(\.type), [.sessionStarted, .namedEvent, .namedEvent, .namedEvent, .sessionEnded, .sessionStarted, .namedEvent])
        let ended = try XCTUnwrap(events.first { $0.type == .sessionEnded })
        XCTAssertEqual(ended[attribute: "Session Duration"], .int(50), "50 s of activity; the idle hour is excluded")
        XCTAssertEqual(ended.timestampMs, t0 + 50_000)
    }

    /// A batch that starts and ends sessions stores their events between the caller's, and answers
    /// the caller's alone, in order.
    func testABatchAnswersTheCallersEventsWithoutTheSessionsItStarted() throws {
        let (host, _) = try host(events: "  cache_size: 100\n  session_timeout: 60")
        let engine = try host.events()
        let t0: Int64 = 1_700_000_000_000
        let given = ["A", "B", "C"].enumerated().map { i, name in
            Event(id: "caller-\(i)", type: .namedEvent, name: name, timestampMs: t0 + Int64(i) * 3_600_000)  // an hour apart: a session each
        }
        let answered = try engine.trackBatch(given)
        XCTAssertEqual(answered.map(\.id), ["caller-0", "caller-1", "caller-2"])
        XCTAssertEqual(answered.map(\.name), ["A", "B", "C"])
        let stored = try engine.store.list(limit: 100).map(\.event)
        XCTAssertEqual(stored.filter { $0.type == .sessionStarted }.count, 3, "\(stored.map(\.type))")
        XCTAssertEqual(stored.filter { $0.type == .sessionEnded }.count, 2, "\(stored.map(\.type))")
    }

    /// Small batches (a group commit's) are encoded through one run kept from batch to batch:
    /// each stored event reads back with exactly the attributes it was tracked with, whether its
    /// attributes were the batch before's (the same String storage), changed, or went away, and
    /// after a batch with an event large enough that the kept run is let go.
    func testSmallBatchesStoreTheirOwnAttributesThoughTheRunIsKeptBetweenBatches() throws {
        let (host, _) = try host(events: "  cache_size: 100000")
        let engine = try host.events()
        let place = "Pike Place Market"
        let large = String(repeating: "x", count: 200_000)
        var tracked: [String: [Event.Attribute]] = [:]
        for batch in 0..<40 {
            let events = (0..<(1 + batch % 5)).map { k -> Event in
                var attributes: [Event.Attribute] = [.init("Location Name", .string(place)), .init("Latitude", .double(47.6097))]
                if batch % 3 == 0 { attributes.append(.init("Score", .int(Int64(batch * 10 + k)))) }
                if batch % 4 == 1 { attributes[0].value = .string("é \"quoted\" \(batch)") }
                if batch % 7 == 2 { attributes.removeFirst() }
                if batch == 20, k == 0 { attributes.append(.init("Large", .string(large))) }
                return Event(
                    id: "b\(batch)-\(k)", type: .namedEvent, name: "n", timestampMs: 1_700_000_000_000 + Int64(batch), attributes: attributes)
            }
            for event in try engine.trackBatch(events) { tracked[event.id] = event.attributes }
        }
        let stored = try engine.store.list(limit: 1_000).map(\.event).filter { $0.id.hasPrefix("b") }
        XCTAssertEqual(stored.count, tracked.count)
        for event in stored { XCTAssertEqual(event.attributes, tracked[event.id], event.id) }
    }

    /// The session state lives in memory between tracks while no other connection writes the store
    /// (EventStore.committedByAnotherConnection); a batch that is rolled back must not leave its
    /// session change there: the next event sees the session as stored, and the one that another
    /// process (another store on the same file) moves on is seen too.
    func testARolledBackBatchLeavesTheStoredSessionAndAnotherWriterIsSeen() throws {
        let (host, _) = try host(events: "  cache_size: 100\n  session_timeout: 60")
        let engine = try host.events()
        let t0: Int64 = 1_700_000_000_000
        _ = try engine.track(Event(id: "first", type: .namedEvent, name: "A", timestampMs: t0))
        // An hour later: this batch would end the session and start one, but its id is taken.
        XCTAssertThrowsError(
            try engine.trackBatch([
                Event(type: .namedEvent, name: "B", timestampMs: t0 + 3_600_000),
                Event(id: "first", type: .namedEvent, name: "C", timestampMs: t0 + 3_600_000)
            ]))
        _ = try engine.track(Event(type: .namedEvent, name: "D", timestampMs: t0 + 3_600_000))
        var events = try engine.store.list(limit: 100).map(\.event).reversed().map { $0.type == .namedEvent ? $0.name : $0.type.rawValue }
        XCTAssertEqual(
            events, [EventType.sessionStarted.rawValue, "A", EventType.sessionEnded.rawValue, EventType.sessionStarted.rawValue, "D"],
            "the rolled-back session change was not kept in memory")

        // Another writer on the same file stores a session that started later: the engine follows it.
        let other = try EventStore.open(path: folder + "/data/events.sqlite").store
        try other.pool.write { db in
            try KeyValueState.write(db, key: SessionTracker.key, json: #"{"startedMs":\#(t0 + 7_200_000),"lastActivityMs":\#(t0 + 7_200_000)}"#)
        }
        _ = try engine.track(Event(type: .namedEvent, name: "E", timestampMs: t0 + 7_230_000))
        events = try engine.store.list(limit: 100).map(\.event).reversed().map { $0.type == .namedEvent ? $0.name : $0.type.rawValue }
        XCTAssertEqual(events.last, "E")
        XCTAssertEqual(events.count, 6, "E continues the session the other writer stored (30 s later): no session events, \(events)")
    }

    /// After a commit the delivery service is woken when cache_size events wait and there is
    /// somewhere to deliver them; with no collector_url a wake would only run a round that sends
    /// nothing (and competes for the writer), so none is asked for.
    func testDeliveryIsWokenAtCacheSizeOnlyWhenItCanDeliver() async throws {
        final class Wakes: @unchecked Sendable {
            let lock = NSLock()
            var count = 0
        }
        for (collectorURL, expected) in [(collector.url, 1), ("", 0)] {
            folder = try TestSupport.temporaryFolder(self)
            let (host, _) = try host(events: "  collector_url: \"\(collectorURL)\"\n  cache_size: 3")
            let engine = try host.events()
            let wakes = Wakes()
            engine.onDeliveryDue = { wakes.lock.withLock { wakes.count += 1 } }
            _ = try await engine.trackGrouped([named("ONE")])  // + session started: 2 waiting, under cache_size
            XCTAssertEqual(wakes.lock.withLock { wakes.count }, 0, "collector '\(collectorURL)': 2 events wait")
            _ = try await engine.trackGrouped([named("TWO")])
            XCTAssertEqual(wakes.lock.withLock { wakes.count }, expected, "collector '\(collectorURL)': 3 events wait")
            engine.onDeliveryDue = nil
        }
    }

    func testCurrentCampaignFromAURLUntilItsEndAndLastCampaign() throws {
        let (host, _) = try host(events: "  cache_size: 100")
        let engine = try host.events()
        let future = Int(Date().timeIntervalSince1970) + 3600
        _ = try engine.openURL("myapp://open?CurrentCampaign=spring&CampaignEndTimeStamp=\(future)")
        XCTAssertEqual(try engine.track(named("LATER"))[attribute: "Campaign Name"], .string("spring"))
        _ = try engine.openURL("myapp://open?CurrentCampaign=summer")
        let after = try engine.track(named("AFTER"))
        XCTAssertEqual(after[attribute: "Campaign Name"], .string("summer"))
        XCTAssertEqual(after[attribute: "Last Campaign"], .string("spring"))
        let (_, note) = try engine.openURL("myapp://open?CurrentCampaign=winter&CampaignEndTimeStamp=1000")
        XCTAssertEqual(note, "campaign 'winter' ended at 1000, before now: not activated")
        XCTAssertEqual(try engine.track(named("STILL"))[attribute: "Campaign Name"], .string("summer"))
        // Past its end, the campaign is no longer added and becomes the last campaign.
        let expired = try engine.track(Event(type: .namedEvent, name: "NEXT DAY", timestampMs: Clock.wallMs() + 2 * 86_400_000))
        XCTAssertNil(expired[attribute: "Campaign Name"])
        XCTAssertEqual(expired[attribute: "Last Campaign"], .string("summer"))
        let notification = try engine.notification(opened: true, payload: ["CurrentCampaign": "push", "alert": "hi"])
        XCTAssertEqual(notification.type.code, 49)
        XCTAssertEqual(notification[attribute: "alert"], .string("hi"))
    }

    func testDeepLinkRoutesCaptureParametersAndUnmatchedURLsStillCount() throws {
        try TestSupport.write(
            """
            data_dir: data
            events: {cache_size: 100}
            deep_links:
              routes:
                - route: "test/:testId"
                  parameters:
                    testId: {required: true, regex: "[0-9]"}
                    utmSource: {required: false}
                - route: "campaign/:CurrentCampaign"
                  parameters:
                    CurrentCampaign: {required: true}
                    CampaignEndTimeStamp: {required: false}
            plugins: []
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        XCTAssertEqual(host.manifest.diagnostics, [])
        let engine = try host.events()
        let (campaign, _) = try engine.openURL("myapp://campaign/autumn%20sale?utmSource=mail")
        XCTAssertEqual(campaign[attribute: "Deep Link Route"], .string("campaign/:CurrentCampaign"))
        XCTAssertEqual(campaign[attribute: "CurrentCampaign"], .string("autumn sale"))
        XCTAssertEqual(campaign[attribute: "Campaign Name"], .string("autumn sale"), "the captured parameter starts the campaign")
        XCTAssertEqual(try engine.openURL("myapp://test/7").event[attribute: "testId"], .string("7"))
        let (refused, note) = try engine.openURL("myapp://test/77?x=1")
        XCTAssertNil(refused[attribute: "Deep Link Route"], "77 does not match [0-9] whole")
        XCTAssertEqual(refused[attribute: "x"], .string("1"), "an unmatched URL still produces its event")
        XCTAssertEqual(note, "route 'test/:testId': parameter 'testId'='77' does not match /[0-9]/")
        let (other, _) = try engine.openURL("https://example.com/landing?CurrentCampaign=web")
        XCTAssertEqual(other[attribute: "URL"], .string("https://example.com/landing?CurrentCampaign=web"))
        XCTAssertEqual(other[attribute: "Campaign Name"], .string("web"))
    }

    func testBadDeepLinkConfigIsReportedWithItsPlace() throws {
        try TestSupport.write(
            """
            deep_links:
              routes:
                - route: "a/:b"
                  parameters:
                    b: {requird: true, regex: "([0-9"}
                - parameters: {}
            """, to: folder + "/bad.yaml")
        let manifest = try HostManifest.load(path: folder + "/bad.yaml")
        XCTAssertEqual(
            manifest.diagnostics.map(\.key), ["deep_links.routes[0].parameters.b.requird", "deep_links.routes[0].route", "deep_links.routes[1].route"]
        )
        XCTAssertTrue(manifest.diagnostics[0].message.contains("did you mean 'required'?"))
        XCTAssertTrue(manifest.diagnostics[1].message.contains("regex '([0-9' of parameter 'b' does not compile"))
    }

    func testACorruptDatabaseIsMovedAsideNotOverwritten() throws {
        try FileManager.default.createDirectory(atPath: folder + "/data", withIntermediateDirectories: true)
        let garbage = String(repeating: "not a database ", count: 500)
        try garbage.write(toFile: folder + "/data/events.sqlite", atomically: true, encoding: .utf8)
        let (host, capture) = try host(events: "  cache_size: 100")
        let engine = try host.events()
        _ = try engine.track(named("FRESH"))
        let aside = try FileManager.default.contentsOfDirectory(atPath: folder + "/data").filter { $0.hasPrefix("events.sqlite.corrupt-") }
        XCTAssertEqual(aside.count, 1)
        XCTAssertEqual(try String(contentsOfFile: folder + "/data/" + aside[0], encoding: .utf8), garbage, "the old file is kept as it was")
        XCTAssertTrue(
            capture.messages.contains { $0.contains("\(folder)/data/events.sqlite was not a valid SQLite database; it was moved aside") },
            "\(capture.messages)")
    }

    func testPurgeRemovesOnlyOldPostedEvents() throws {
        let (host, _) = try host(events: "  collector_url: \(collector.url)\n  cache_size: 100\n  expire_local_events_after: 1 day")
        let engine = try host.events()
        _ = try engine.track(named("POSTED"))
        XCTAssertEqual(engine.flush().posted, 2)
        XCTAssertEqual(try engine.purge(), 0, "posted just now")
        XCTAssertEqual(try engine.purge(nowMs: Clock.wallMs() + 2 * 86_400_000), 2)
        XCTAssertEqual(try engine.store.stats().values.reduce(0, +), 0)
    }

    func testEventInputJSON() throws {
        let events = try EventInput.parse(
            Data(
                """
                {"events": [{"type": "app_start"}, {"type": 17, "name": "N", "timestamp": "2014-06-10T00:00:00.000Z",
                  "attributes": {"i": 1, "d": 2.5, "b": false, "s": "x", "t": {"type": "time", "value": 5}, "n": null}}]}
                """.utf8))
        XCTAssertEqual(events.map(\.type), [.appStart, .namedEvent])
        XCTAssertEqual(events[1].timestampMs, 1_402_358_400_000)
        XCTAssertEqual(events[1][attribute: "i"], .int(1))
        XCTAssertEqual(events[1][attribute: "d"], .double(2.5))
        XCTAssertEqual(events[1][attribute: "b"], .bool(false))
        XCTAssertEqual(events[1][attribute: "t"], .timeMs(5))
        XCTAssertEqual(events[1][attribute: "n"], .null)
        XCTAssertThrowsError(try EventInput.parse(Data("[{\"type\": \"app_strat\"}]".utf8))) { error in
            XCTAssertTrue("\(error)".contains("unknown event type 'app_strat' (did you mean 'app_start'?)"), "\(error)")
        }
        XCTAssertThrowsError(try EventInput.parse(Data("[{}, {\"nmae\": 1}]".utf8))) { error in
            XCTAssertTrue("\(error)".hasPrefix("event 2: unknown key 'nmae' (did you mean 'name'?)"), "\(error)")
        }
        XCTAssertThrowsError(try EventInput.parse(Data("{".utf8)))
    }
}

final class AttributeJSONTests: XCTestCase {
    func testTheHandWrittenEncodingReadsBackAsTheCodableForm() throws {
        let attributes: [Event.Attribute] = [
            .init("s", .string("quote \" backslash \\ newline \n tab \t bell \u{7} é 😀")), .init("i", .int(-42)), .init("d", .double(0.1)),
            .init("tiny", .double(1e-300)), .init("b", .bool(true)), .init("t", .timeMs(1_402_358_400_000)), .init("n", .null),
            .init("", .string("")),
            .init("min", .int(Int64.min)), .init("zero", .int(0)), .init("max", .timeMs(Int64.max)), .init("neg", .int(-7))
        ]
        let text = AttributeJSON.encode(attributes)
        let decoded = try JSONDecoder().decode([Event.Attribute].self, from: Data(text.utf8))
        XCTAssertEqual(decoded, attributes)
        XCTAssertEqual(AttributeJSON.encode([.init("nan", .double(.nan))]), #"[{"name":"nan","value":{"type":"null"}}]"#)
        // The longest values with the shortest names: the encoder's size bound must hold.
        let extremes: [Event.Attribute] = (0..<50).flatMap { i -> [Event.Attribute] in
            [
                .init("", .double(-1.7976931348623157e+308)), .init("", .double(-2.2250738585072014e-308)), .init("", .int(Int64.min)),
                .init("", .timeMs(Int64.min)), .init("", .string("\u{1}\u{2}\"\\")), .init("", .bool(false)), .init("", .null)
            ]
        }
        let extremeText = AttributeJSON.encode(extremes)
        XCTAssertEqual(try JSONDecoder().decode([Event.Attribute].self, from: Data(extremeText.utf8)), extremes)
        // Only the longest numbers: no other attribute's slack to borrow (each takes 71 bytes).
        let doubles = (0..<200).map { _ in Event.Attribute("", .double(-1.7976931348623157e+308)) }
        XCTAssertEqual(try JSONDecoder().decode([Event.Attribute].self, from: Data(AttributeJSON.encode(doubles).utf8)), doubles)
    }

    /// The escaping scan reads eight bytes at a time: each byte that must be escaped (and the bytes
    /// next to those that must not) at every offset of texts longer and shorter than a word gives
    /// what escaping byte by byte gives.
    func testEveryByteThatNeedsEscapingIsFoundAtEveryOffset() {
        func escapedByteByByte(_ text: String) -> String {
            var out: [UInt8] = [UInt8(ascii: "\"")]
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
                case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
                case UInt8(ascii: "\n"): out += Array(#"\n"#.utf8)
                case UInt8(ascii: "\r"): out += Array(#"\r"#.utf8)
                case UInt8(ascii: "\t"): out += Array(#"\t"#.utf8)
                case 0..<0x20: out += Array((#"\u00"# + String(format: "%02x", byte)).utf8)
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
            return String(decoding: out, as: UTF8.self)
        }
        let specials = ["\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{1f}", " ", "!", "#", "[", "]", "\u{7f}", "é", "😀"]
        for length in 0..<20 {
            for offset in 0...length {
                for special in specials {
                    var text = String(repeating: "a", count: length)
                    text.insert(contentsOf: special, at: text.index(text.startIndex, offsetBy: offset))
                    let expected =
                        #"[{"name":"# + escapedByteByByte(text) + #","value":{"type":"string","value":"#
                        + escapedByteByByte(text) + "}}]"
                    XCTAssertEqual(
                        AttributeJSON.encode([.init(text, .string(text))]), expected, "\(length) \(offset) \(special.unicodeScalars.first!.value)")
                }
            }
        }
    }

    /// Doubles formatted once and reused across a run of events (more distinct values than the
    /// reuse keeps, 0.0 beside -0.0) give the same bytes as each event encoded alone.
    func testReusedDoubleTextsGiveTheSameBytes() {
        let values: [Double] = [47.6097, -122.3422, 11.5, 52.7, 0.0, -0.0, 0.1, 1e-5, 1e300, -1.7976931348623157e+308, 5e-324, 3, 1.5, 2.25]
        var run: EncodingRun? = EncodingRun()
        for i in 0..<400 {
            let attributes: [Event.Attribute] = [
                .init("Score", .double(Double(i) * 1.5)), .init("a", .double(values[i % values.count])),
                .init("b", .double(values[(i * 7) % values.count])), .init("c", .double(values[(i / 3) % values.count])),
                .init("nan", .double(.nan)), .init("s", .string("x"))
            ]
            XCTAssertEqual(AttributeJSON.encodeUTF8(attributes, run: &run), Array(AttributeJSON.encode(attributes).utf8), "event \(i)")
        }
    }

    /// Attributes copied from the previous event's text when they are written the same give the
    /// same bytes as each event encoded alone: also for values Swift calls equal that are written
    /// differently (0.0 and -0.0, "é" precomposed and decomposed), NaN, and attributes that move,
    /// appear, change kind or go away from one event to the next.
    func testAttributesReusedFromThePreviousEventGiveTheSameBytes() {
        let values: [PluginValue] = [
            .string("Pike Place Market"), .string("é"), .string("e\u{301}"), .string("a\"b\\c\n"), .string(""), .double(0.0), .double(-0.0),
            .double(.nan), .double(47.6097), .int(3), .int(-3), .timeMs(3), .bool(true), .bool(false), .null
        ]
        let names = ["Location Name", "é", "e\u{301}", "Latitude", "x"]
        var run: EncodingRun? = EncodingRun()
        var generator = SystemRandomNumberGenerator()
        // One array for the run's texts, as a batch's runs are encoded: each event's bytes where
        // appendUTF8 says, none overwritten by the events after it.
        var output: [UInt8] = []
        var places: [(Range<Int>, [UInt8])] = []
        for i in 0..<600 {
            // Mostly the same attributes at the same places, as a batch's events are, with changes.
            var attributes: [Event.Attribute] = (0..<6).map { k in .init(names[(k + i / 50) % names.count], values[(k * 3 + i / 20) % values.count]) }
            if i % 7 == 0 { attributes.swapAt(1, 4) }
            if i % 11 == 0 { attributes.removeLast(Int.random(in: 0...6, using: &generator)) }
            if i % 13 == 0 { attributes.append(.init("Score", .double(Double(i) * 1.5))) }
            if i % 5 == 0, !attributes.isEmpty { attributes[0].value = values[Int.random(in: 0..<values.count, using: &generator)] }
            let place = AttributeJSON.appendUTF8(attributes, run: &run, to: &output)
            XCTAssertEqual(Array(output[place]), Array(AttributeJSON.encode(attributes).utf8), "event \(i): \(attributes)")
            places.append((place, Array(output[place])))
        }
        XCTAssertEqual(places.last?.0.upperBound, output.count, "appended one after the other")
        for (i, (place, bytes)) in places.enumerated() { XCTAssertEqual(Array(output[place]), bytes, "event \(i), after the run") }
        XCTAssertGreaterThan(run!.copied, 1000, "most attributes were copied from the event before")
        // The same text in another String's storage is written anew, never copied by mistake.
        var fresh: EncodingRun? = EncodingRun()
        let first = [Event.Attribute(String(repeating: "n", count: 20), .string(String(repeating: "v", count: 20)))]
        let second = [Event.Attribute(String(repeating: "n", count: 20), .string(String(repeating: "v", count: 20)))]
        XCTAssertEqual(AttributeJSON.encodeUTF8(first, run: &fresh), Array(AttributeJSON.encode(first).utf8))
        XCTAssertEqual(AttributeJSON.encodeUTF8(second, run: &fresh), Array(AttributeJSON.encode(second).utf8))
        XCTAssertEqual(AttributeJSON.encodeUTF8(second, run: &fresh), Array(AttributeJSON.encode(second).utf8))
        XCTAssertEqual(fresh!.copied, 1, "only the attribute that was the same storage")
    }
}

final class BackgroundTrackingTests: XCTestCase {
    func testEventsTrackedInTheBackgroundAreAllStoredOnceWrittenAndSurviveAReopen() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("data_dir: data\nevents: {cache_size: 1000000}\n", to: folder + "/plugins.yaml")
        var ids: [String] = []
        // The pipeline adds its own events (session started): compare the test's events only.
        func ours(_ engine: EventEngine) throws -> [String] {
            try engine.store.list(limit: 10_000).map(\.event).filter { $0.name.hasPrefix("bg ") }.map(\.id)
        }
        do {
            let host = try HubHost(manifestPath: folder + "/plugins.yaml")
            let engine = try host.events()
            for i in 0..<500 { ids.append(engine.trackInBackground(Event(type: .namedEvent, name: "bg \(i)")).id) }
            engine.waitForBackgroundWrites()
            let stored = try ours(engine)
            XCTAssertEqual(stored.count, 500, "every event once, after waiting")
            XCTAssertTrue(Set(stored) == Set(ids), "the stored ids are the tracked ones")
            for i in 0..<100 { ids.append(engine.trackInBackground(Event(type: .namedEvent, name: "bg late \(i)")).id) }
            host.shutdown()  // waits for what is still in memory
        }
        let reopened = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { reopened.shutdown() }
        let stored = try ours(try reopened.events())
        XCTAssertEqual(stored.count, 600)
        XCTAssertTrue(Set(stored) == Set(ids), "nothing lost at shutdown")
    }
}
