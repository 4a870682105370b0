import Foundation
import HubHostTools
import XCTest

@testable import HubHostKit

/// The event_sink kind (ABI 1.1) through the event engine: a C sink (Tests/Fixtures/test_sink.c)
/// answers per event; the host marks each event by its answer, keeps every event it was not told
/// was delivered, and survives a sink that crashes, hangs or answers garbage.
final class EventSinkTests: FolderTestCase {
    /// Builds the test sink into `folder`/sink with a plugin.yaml whose `mode` defaults to `mode`.
    static func sinkFixture(in folder: String, mode: String = "deliver") throws -> String {
        let dir = folder + "/sink-\(mode)"
        _ = try TestSupport.compileFixture("test_sink.c", into: dir, name: "libtestsink.so")
        let yaml = TestSupport.pluginManifest(
            id: "test-sink", name: "Test sink", library: "libtestsink.so", abi: "1.1", exports: [("test-sink", "event_sink")],
            extra: "config:\n  - {key: mode, type: string, default: \(mode)}\n  - {key: record_file, type: string}")
        try TestSupport.write(yaml, to: dir + "/plugin.yaml")
        return dir + "/plugin.yaml"
    }

    private var recordFile: String { folder + "/delivered.txt" }

    private func host(mode: String, events: String = "", instance: String = "") throws -> (HubHost, LogCapture) {
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: info}
            events:
              sink: out
              cache_size: 1000
              retry_base_delay: 0
              max_num_retries: 3
            \(events)
            plugins:
              - id: out
                use: \(try Self.sinkFixture(in: folder))
                config: {mode: \(mode), record_file: \(recordFile)}
            \(instance)
            """, to: folder + "/plugins.yaml")
        let capture = LogCapture()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml", extraDestinations: [capture])
        addTeardownBlock { host.shutdown() }
        return (host, capture)
    }

    private func delivered() -> [String] {
        ((try? String(contentsOfFile: recordFile, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func testEachEventIsMarkedByTheSinksAnswer() throws {
        let (host, _) = try host(mode: "deliver", events: "  mobile_user_id: user-7")
        let engine = try host.events()
        let good = try engine.track(Event(type: .namedEvent, name: "GOOD"), autoFlush: false)
        let rejected = try engine.track(Event(type: .namedEvent, name: "reject-me"), autoFlush: false)
        let retried = try engine.track(Event(type: .namedEvent, name: "retry-me"), autoFlush: false)
        let report = engine.flush()
        let all = try engine.store.list(limit: 100)
        XCTAssertEqual(all.count, 4, "with the session-started event")
        let session = try XCTUnwrap(all.first { $0.event.type == .sessionStarted })
        XCTAssertEqual(report.posted, 2, "\(report)")
        XCTAssertEqual(report.failed, 1)
        XCTAssertEqual(report.retrying, 1)
        XCTAssertEqual(Set(delivered()), [good.id, session.event.id], "exactly the delivered events reached the sink's record")
        XCTAssertEqual(try engine.store.event(id: good.id)?.event.status, .successfullyPosted)
        let rejectedNow = try XCTUnwrap(engine.store.event(id: rejected.id))
        XCTAssertEqual(rejectedNow.event.status, .failedPost, "a rejection is final at once")
        XCTAssertEqual(rejectedNow.lastError, "refused: reject-me")
        let retriedNow = try XCTUnwrap(engine.store.event(id: retried.id))
        XCTAssertEqual(retriedNow.event.status, .notPosted)
        XCTAssertEqual(retriedNow.event.attempts, 1)
        XCTAssertEqual(retriedNow.lastError, "asked to retry: retry-me")
        // The retried event keeps being retried until max_num_retries, then FAILED_POST; the rest is left alone.
        for _ in 0..<2 { _ = engine.delivery.flush(nowMs: Clock.wallMs() + 60_000) }
        XCTAssertEqual(try engine.store.event(id: retried.id)?.event.status, .failedPost)
        XCTAssertEqual(try engine.store.event(id: retried.id)?.event.attempts, 3)
        XCTAssertEqual(delivered().count, 2, "nothing delivered twice")
    }

    func testTheSinkGetsTheCollectorJSONAndTheUserIDs() throws {
        let (host, _) = try host(mode: "deliver", events: "  mobile_user_id: user-7\n  device_id: device-9")
        let engine = try host.events()
        let event = try engine.track(Event(type: .namedEvent, name: "PLAYER LOADED", attributes: [.init("Level", .int(3))]), autoFlush: false)
        let sinkEvent = EventDelivery.sinkEvent(try XCTUnwrap(engine.store.event(id: event.id)).event, nameField: "Event Name")
        XCTAssertEqual(sinkEvent.mobileUserID, "user-7")
        XCTAssertEqual(sinkEvent.anonymousID, "device-9")
        XCTAssertEqual(sinkEvent.idempotencyKey, event.id)
        XCTAssertEqual(sinkEvent.typeCode, 17)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: sinkEvent.json) as? [String: Any])
        XCTAssertEqual(object["idempotencyKey"] as? String, event.id)
        XCTAssertEqual(object["eventTypeCode"] as? String, "17")
        // The HTTP collector's body is these objects in one array, as before sinks existed.
        let body = try XCTUnwrap(JSONSerialization.jsonObject(with: HTTPCollectorSink.body([sinkEvent.json, sinkEvent.json])) as? [String: Any])
        XCTAssertEqual((body["events"] as? [[String: Any]])?.count, 2)
    }

    func testGarbageOutcomesAreRetriedThenFailedNeverLost() throws {
        let (host, capture) = try host(mode: "garbage")
        let engine = try host.events()
        let event = try engine.track(Event(type: .namedEvent, name: "E"), autoFlush: false)
        let report = engine.flush()
        XCTAssertEqual(report.posted, 0)
        XCTAssertEqual(report.retrying, 2, "\(report)")
        XCTAssertTrue(report.lastError?.contains("outcome 12345, which the ABI does not define") ?? false, "\(report)")
        XCTAssertTrue(
            capture.messages.contains { $0.contains("event sink 'out' answered outcome codes the ABI does not define (12345)") },
            "\(capture.messages)")
        for _ in 0..<2 { _ = engine.delivery.flush(nowMs: Clock.wallMs() + 60_000) }
        XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .failedPost, "FAILED_POST only after max_num_retries")
    }

    func testAFailingCallRetriesTheWholeBatchWithTheSinksMessage() throws {
        let (host, _) = try host(mode: "broken")
        let engine = try host.events()
        let event = try engine.track(Event(type: .namedEvent, name: "E"), autoFlush: false)
        let report = engine.flush()
        XCTAssertEqual(report.retrying, 2)
        XCTAssertEqual(report.lastError, "connection broken")
        XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .notPosted)
        XCTAssertEqual(try engine.store.event(id: event.id)?.event.attempts, 1)
    }

    /// An in-process sink that never returns: the flush gives its call up after post_timeout and a
    /// margin (the batch is a retry), the next flush sends nothing while that call runs, and the
    /// sink is reported stuck. In a child process, whose looping thread ends with it.
    func testAnInProcessSinkThatNeverReturnsDoesNotHoldTheFlush() throws {
        let (host, _) = try host(mode: "hang", events: "  post_timeout: 1 sec")
        host.shutdown()
        _ = try TestSupport.hubhost(["track", "STUCK", "--no-flush"], manifest: folder + "/plugins.yaml", in: folder)
        let started = Date()
        let flush = try TestSupport.hubhost(
            ["events", "flush", "--json"], manifest: folder + "/plugins.yaml", in: folder, timeout: 60)
        let seconds = Date().timeIntervalSince(started)
        XCTAssertLessThan(seconds, 1 + PendingSinkDelivery.marginSeconds + 10, "bounded by post_timeout and the margin")
        XCTAssertTrue(flush.stdout.contains("did not return within events.post_timeout"), flush.description)
        let stats = try TestSupport.hubhost(["events", "list", "--json"], manifest: folder + "/plugins.yaml", in: folder)
        let events = try TestSupport.json(stats.stdout, as: [[String: Any]].self)
        let stuck = try XCTUnwrap(events.first { $0["name"] as? String == "STUCK" })
        XCTAssertEqual(stuck["status"] as? String, "NOT_POSTED", "a retry: nothing is lost")
        XCTAssertEqual(stuck["attempts"] as? Int, 1)
    }

    /// HH_ERR_UNAVAILABLE says nothing was sent (not connected): a wait, however many flushes.
    func testANotConnectedSinkIsAWaitNotAnAttempt() throws {
        let (host, _) = try host(mode: "fail")
        let engine = try host.events()
        let event = try engine.track(Event(type: .namedEvent, name: "E"), autoFlush: false)
        for round in 1...6 {  // more than max_num_retries
            let report = engine.delivery.flush(nowMs: Clock.wallMs() + Int64(round) * 600_000)
            XCTAssertEqual(report.retrying, 0, "\(report)")
            XCTAssertEqual(report.failed, 0)
            XCTAssertEqual(report.lastError, "not connected")
        }
        let stored = try XCTUnwrap(engine.store.event(id: event.id))
        XCTAssertEqual(stored.event.status, .notPosted)
        XCTAssertEqual(stored.event.attempts, 0)
    }

    func testAnIsolatedSinkThatCrashesOrHangsLeavesTheHostUpAndLosesNothing() throws {
        for mode in ["crash", "hang"] {
            let (host, _) = try host(mode: mode, instance: "    isolation: process\n    call_timeout: 500ms")
            let engine = try host.events()
            let event = try engine.track(Event(type: .namedEvent, name: "E-\(mode)"), autoFlush: false)
            let report = engine.flush()
            XCTAssertEqual(report.posted, 0, mode)
            XCTAssertEqual(report.retrying, 2, "\(mode): \(report)")
            XCTAssertNotNil(report.lastError, mode)
            XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .notPosted, mode)
            XCTAssertEqual(try engine.store.event(id: event.id)?.event.attempts, 1, mode)
            host.shutdown()
            try? FileManager.default.removeItem(atPath: folder + "/data")
        }
    }

    func testAnIsolatedSinkDeliversLikeAnInProcessOne() throws {
        let (host, _) = try host(mode: "deliver", instance: "    isolation: process")
        let engine = try host.events()
        let rejected = try engine.track(Event(type: .namedEvent, name: "reject-me"), autoFlush: false)
        let good = try engine.track(Event(type: .namedEvent, name: "GOOD"), autoFlush: false)
        let report = engine.flush()
        XCTAssertEqual(report.posted, 2, "\(report)")
        XCTAssertEqual(report.failed, 1)
        XCTAssertTrue(delivered().contains(good.id))
        XCTAssertEqual(try engine.store.event(id: rejected.id)?.lastError, "refused: reject-me")
    }

    func testASinkThatIsNotLoadedKeepsEventsNotPosted() throws {
        try TestSupport.write("data_dir: data\nevents:\n  sink: nowhere\nplugins: []\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        let engine = try host.events()
        let event = try engine.track(Event(type: .namedEvent, name: "E"), autoFlush: false)
        let report = engine.flush()
        XCTAssertTrue(report.noCollector)
        XCTAssertEqual(report.lastError, "events.sink: no plugin instance 'nowhere' in plugins.yaml")
        XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .notPosted)
        XCTAssertEqual(try engine.store.event(id: event.id)?.event.attempts, 0, "not an attempt")
    }

    func testHTTPCollectorByNameIsTheDefaultSink() throws {
        let collector = try TestCollector()
        addTeardownBlock { collector.stop() }
        try TestSupport.write(
            "data_dir: data\nevents:\n  sink: http-collector\n  collector_url: \(collector.url)\n  cache_size: 100\nplugins: []\n",
            to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        let engine = try host.events()
        XCTAssertTrue(engine.delivery.sink is HTTPCollectorSink)
        let event = try engine.track(Event(type: .namedEvent, name: "E"), autoFlush: false)
        XCTAssertEqual(engine.flush().posted, 2)
        XCTAssertTrue(collector.acceptedKeys.contains(event.id))
    }

    func testAnABI10PluginStillLoadsOnThisABI12Host() throws {
        let manifest = try TestSupport.faultyFixture(nil, in: folder)
        let library = try PluginLibrary.open(path: (manifest as NSString).deletingLastPathComponent + "/libfaulty.so")
        XCTAssertEqual(library.abiVersion, ABIVersion(major: 1, minor: 0, patch: 0))
        XCTAssertEqual(ABIVersion.host, ABIVersion(major: 1, minor: 2, patch: 0))
        XCTAssertEqual(library.descriptors.map(\.kind), [.augmentation, .triggerOperator])
    }

    func testASinkGetsTheOAuthTokenFromTheHost() throws {
        let collector = try TestCollector()
        addTeardownBlock { collector.stop() }
        let (host, _) = try host(
            mode: "token",
            events: """
                  auth_token_url: \(collector.tokenURL)
                  auth_client_id: id
                  auth_client_secret: secret
                  auth_refresh_token: refresh
                """)
        let engine = try host.events()
        _ = try engine.track(Event(type: .namedEvent, name: "E"), autoFlush: false)
        XCTAssertEqual(engine.flush().lastError, "token: token-1", "the token the host got from the endpoint")
        XCTAssertEqual(engine.delivery.flush(nowMs: Clock.wallMs() + 600_000).lastError, "token: token-1", "cached")
        XCTAssertEqual(collector.tokenRequests, 1)
    }

    func testWithoutOAuthTheExtensionIsNotOffered() throws {
        let (host, _) = try host(mode: "token")
        let engine = try host.events()
        _ = try engine.track(Event(type: .namedEvent, name: "E"), autoFlush: false)
        XCTAssertEqual(engine.flush().lastError, "no event_auth extension")
    }
}
