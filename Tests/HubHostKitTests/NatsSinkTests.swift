import Foundation
import XCTest

@testable import HubHostKit

/// The bundled NATS JetStream sink (Plugins/NatsSink, libnats) against a real `nats-server -js` on
/// 127.0.0.1 with a temporary store (NatsServerProcess): events tracked, published with their
/// idempotency key as Nats-Msg-Id and their type in the subject, read back from the stream; the
/// server killed with SIGKILL and restarted mid-stream (nothing lost, no duplicate in the stream);
/// the stream checked at start.
final class NatsSinkTests: FolderTestCase {
    private var server: NatsServerProcess!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try NatsServerProcess(storeDirectory: folder + "/nats-store")
        addTeardownBlock { [weak self] in self?.server = nil }
    }

    private func host(createStream: Bool = true) throws -> HubHost {
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: error}
            events:
              sink: nats
              cache_size: 10000
              retry_base_delay: 0
              max_num_retries: 5
              post_timeout: 2 sec
            plugins:
              - id: nats
                use: \(TestSupport.plugin("NatsSink"))
                config:
                  url: \(server.url)
                  subject: "app.events.{type}"
                  stream: EVENTS
                  create_stream: \(createStream)
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    private func track(_ engine: EventEngine, count: Int, tag: String) throws -> [Event] {
        try (0..<count).map { try engine.track(Event(type: .namedEvent, name: "\(tag)-\($0)"), autoFlush: false) }
    }

    func testEventsArePublishedWithTheirKeyAsMsgIDAndTheirTypeInTheSubject() throws {
        let host = try host()
        let engine = try host.events()
        let tracked = try track(engine, count: 100, tag: "N")
        let report = engine.flush()
        XCTAssertEqual(report.posted, 101, "\(report)")
        let stored = try server.read(stream: "EVENTS")
        XCTAssertEqual(stored.count, 101)
        XCTAssertEqual(Set(stored.map(\.msgID)), Set(try engine.store.list(status: .successfullyPosted, limit: 1000).map(\.event.id)))
        XCTAssertEqual(Array(stored.suffix(100)).map(\.msgID), tracked.map(\.id), "in tracked order")
        XCTAssertEqual(stored.first?.subject, "app.events.13", "the session-started event")
        XCTAssertEqual(stored.last?.subject, "app.events.17")
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(stored.last!.data.utf8)) as? [String: Any])
        XCTAssertEqual(json["idempotencyKey"] as? String, tracked.last?.id)
    }

    func testTheServerKilledAndRestartedMidStreamLosesNothingAndStoresNoDuplicate() throws {
        let host = try host()
        let engine = try host.events()
        engine.delivery.batchSize = 50
        var tracked = try track(engine, count: 400, tag: "K")
        // Deliver on another thread while the server is killed under it.
        let flushed = expectation(description: "flush")
        DispatchQueue.global().async {
            _ = engine.flush()
            flushed.fulfill()
        }
        usleep(5_000)
        server.kill()
        wait(for: [flushed], timeout: 30)
        tracked += try track(engine, count: 50, tag: "L")  // while the server is away
        let away = engine.delivery.flush(nowMs: Clock.wallMs() + 600_000)
        XCTAssertEqual(away.posted, 0)
        XCTAssertEqual(away.lastError, "nats: not connected (reconnecting)")
        // Not connected is a wait, not an attempt: more flushes than max_num_retries spend nothing.
        for round in 2...8 { _ = engine.delivery.flush(nowMs: Clock.wallMs() + Int64(round) * 600_000) }
        for event in tracked.suffix(50) {
            let stored = try XCTUnwrap(engine.store.event(id: event.id))
            XCTAssertEqual(stored.event.attempts, 0, "\(event.name): no attempt while the server is away")
            XCTAssertEqual(stored.event.status, .notPosted)
        }
        XCTAssertEqual(try engine.store.count(status: .failedPost), 0)
        try server.start()
        var left = -1
        for round in 1...30 {  // the client reconnects every 100 ms; bounded
            _ = engine.delivery.flush(nowMs: Clock.wallMs() + Int64(round) * 600_000)
            left = try engine.store.count(status: .notPosted)
            if left == 0 { break }
            usleep(200_000)
        }
        XCTAssertEqual(left, 0)
        XCTAssertEqual(try engine.store.count(status: .failedPost), 0)
        let stored = try server.read(stream: "EVENTS")
        let ids = stored.map(\.msgID)
        XCTAssertEqual(ids.count, Set(ids).count, "a retried publish is dropped by its Nats-Msg-Id: no duplicate")
        for event in tracked { XCTAssertTrue(ids.contains(event.id), "\(event.name) lost") }
    }

    func testAKeyTwiceInOneBatchHasEachPublishAnsweredByItsOwnAck() throws {
        let host = try host()
        let sink = try host.events().delivery.sink
        func event(_ key: String) -> SinkEvent {
            SinkEvent(idempotencyKey: key, typeCode: 17, timeMs: 0, json: Data(#"{"idempotencyKey":"\#(key)"}"#.utf8))
        }
        // JetStream acks the repeat as a duplicate: that ack answers the second copy (else it waited
        // for an ack of its own until the deadline and was answered "retry").
        let result = sink.deliver([event("twice"), event("once"), event("twice")], timeoutMs: 2000)
        XCTAssertEqual(result, .answered([.delivered, .delivered, .delivered]))
        XCTAssertEqual(try server.read(stream: "EVENTS").map(\.msgID), ["twice", "once"])
    }

    func testAMissingStreamIsReportedAtStart() throws {
        let host = try host(createStream: false)
        let entry = try XCTUnwrap(host.registry.entry(id: "nats"))
        guard case .failed(let error) = entry.state else { return XCTFail("\(entry.state)") }
        XCTAssertTrue("\(error)".contains("stream 'EVENTS' does not exist"), "\(error)")
        let engine = try host.events()
        _ = try engine.track(Event(type: .namedEvent, name: "WAITS"), autoFlush: false)
        let report = engine.flush()
        XCTAssertEqual(report.lastError, "events.sink: instance 'nats' cannot deliver events (it is failed)")
        XCTAssertEqual(try engine.store.count(status: .notPosted), 2)
    }
}
