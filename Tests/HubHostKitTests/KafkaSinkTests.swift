import Foundation
import XCTest

@testable import HubHostKit

/// The bundled Kafka sink (Plugins/KafkaSink, librdkafka) against librdkafka's mock cluster of 3
/// brokers on 127.0.0.1 (KafkaMockCluster): events tracked, delivered, consumed back and compared
/// (exactly the acknowledged events, in per-key order), also read with kcat; a broker down and
/// back, failing produce requests, the whole cluster down for longer than
/// the retries (events wait, none fails), and hubhost killed with SIGKILL mid-delivery.
final class KafkaSinkTests: XCTestCase {
    private var folder = ""
    private var cluster: KafkaMockCluster!

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
        cluster = try KafkaMockCluster(folder: NSTemporaryDirectory() + "hubhost-kafka-helper-\(getuid())")
        addTeardownBlock { [weak self] in self?.cluster = nil }
    }

    /// The plugins.yaml of a host delivering to the mock cluster.
    private func manifest(dataDir: String = "data", cacheSize: Int = 10_000, events: String = "", server: String = "") -> String {
        """
        data_dir: \(dataDir)
        logging: {severity: error}
        \(server)
        events:
          sink: kafka
          cache_size: \(cacheSize)
          retry_base_delay: 0
          max_num_retries: 3
          post_timeout: 3 sec
        \(events)
        plugins:
        \(cluster.sinkInstance(clientSettings: "linger.ms=2; retry.backoff.ms=50; reconnect.backoff.max.ms=500"))
        """
    }

    private func host(events: String = "") throws -> HubHost {
        try TestSupport.write(manifest(events: events), to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    /// Tracks `count` events spread over `users` mobile user ids (one more without a user id).
    private func track(_ engine: EventEngine, count: Int, users: Int = 3, tag: String = "E") throws -> [Event] {
        try (0..<count).map { n in
            let user: [Event.Attribute] = n % (users + 1) == users ? [] : [.init("Mobile User Id", .string("user-\(n % (users + 1))"))]
            return try engine.track(Event(type: .namedEvent, name: "\(tag)-\(n)", attributes: user), autoFlush: false)
        }
    }

    /// Flushes until nothing waits (each round as if the backoff had passed, a pause between rounds
    /// while the producer reconnects), at most `rounds` times; returns the last report.
    @discardableResult
    private func deliverAll(_ engine: EventEngine, rounds: Int = 30) throws -> DeliveryReport? {
        var last: DeliveryReport?
        for round in 0..<rounds {
            last = engine.delivery.flush(nowMs: Clock.wallMs() + Int64(round) * 600_000)
            if try engine.store.count(status: .notPosted) == 0 && engine.store.count(status: .expired) == 0 { break }
            usleep(200_000)
        }
        return last
    }

    func testEventsAreProducedKeyedByUserAndReadBackInOrderExactlyOnce() throws {
        let host = try host()
        let engine = try host.events()
        let tracked = try track(engine, count: 200)
        let report = engine.flush()
        XCTAssertEqual(report.posted, 201, "200 and the session-started event: \(report)")
        XCTAssertNil(report.lastError)
        let records = try cluster.consume()
        let posted = try engine.store.list(status: .successfullyPosted, limit: 1000).map(\.event)
        // Exactly the acknowledged events, each once.
        XCTAssertEqual(records.count, posted.count)
        XCTAssertEqual(Set(records.map(\.idempotencyKey)), Set(posted.map(\.id)))
        // Per key, in tracked order, and in one partition.
        for user in ["user-0", "user-1", "user-2"] {
            let mine = records.filter { $0.key == user }
            XCTAssertEqual(Set(mine.map(\.partition)).count, 1, "\(user)'s events in one partition")
            XCTAssertEqual(
                mine.sorted { $0.offset < $1.offset }.map(\.idempotencyKey),
                tracked.filter { $0[attribute: "Mobile User Id"] == .string(user) }.map(\.id), user)
        }
        // The value is the collector JSON; the type code is a header.
        let one = try XCTUnwrap(records.first { $0.idempotencyKey == tracked[0].id })
        XCTAssertEqual(one.typeCode, "17")
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(one.value.utf8)) as? [String: Any])
        XCTAssertEqual(json["idempotencyKey"] as? String, tracked[0].id)
        XCTAssertEqual(records.first { $0.typeCode == "13" }.map { _ in true }, true, "the session-started event, type 13")

        // kcat, an independent client, reads the same messages.
        let kcat = try TestSupport.run(
            "/usr/bin/env",
            [
                "kcat", "-b", cluster.bootstrap, "-C", "-t", cluster.topic, "-o", "beginning", "-e", "-q",
                "-f", "%k\t%h\n"
            ], timeout: 60)
        XCTAssertEqual(kcat.status, 0, kcat.stderr)
        let lines = kcat.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, posted.count)
        let kcatKeys = Set(
            lines.compactMap { line in
                line.split(separator: "\t").last?.split(separator: ",").first { $0.hasPrefix("idempotency-key=") }.map {
                    String($0.dropFirst("idempotency-key=".count))
                }
            })
        XCTAssertEqual(kcatKeys, Set(posted.map(\.id)))
    }

    func testFailingProduceRequestsAndABrokerDownThenBackLoseNothing() throws {
        let host = try host()
        let engine = try host.events()
        try cluster.command("produce-errors 5")  // retried inside the idempotent producer
        let first = try track(engine, count: 50, tag: "A")
        try deliverAll(engine)
        try cluster.setDown(2)
        let second = try track(engine, count: 50, tag: "B")
        _ = engine.flush()  // the partitions led by broker 2 time out: those events are retries
        try cluster.setUp(2)
        let last = try deliverAll(engine)
        XCTAssertEqual(try engine.store.count(status: .notPosted), 0, "\(String(describing: last))")
        XCTAssertEqual(try engine.store.count(status: .failedPost), 0)
        let keys = try cluster.consume().map(\.idempotencyKey)
        for event in first + second { XCTAssertTrue(keys.contains(event.id), "\(event.name) not in the topic") }
        // At least once: a repeat is possible only for a retried event, and a reader drops it by its key.
        XCTAssertEqual(Set(keys).count, try engine.store.count(status: .successfullyPosted))
    }

    /// Events tracked while the cluster is down wait out their backoff; events of the same users
    /// tracked after it is back wait behind them (only events without a user id go first), so each
    /// user's events reach the topic in tracked order.
    func testOneUsersEventsStayInTrackedOrderAcrossAnOutage() throws {
        try TestSupport.write(manifest().replacingOccurrences(of: "retry_base_delay: 0", with: "retry_base_delay: 60"), to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        let engine = try host.events()
        try deliverAll(engine)  // the session-started event
        for broker in 1...3 { try cluster.setDown(broker) }
        let before = try track(engine, count: 12, tag: "BEFORE")
        let failed = engine.delivery.flush(nowMs: Clock.wallMs())
        XCTAssertEqual(failed.posted, 0, "\(failed)")
        XCTAssertGreaterThan(failed.retrying, 0, "\(failed)")
        for broker in 1...3 { try cluster.setUp(broker) }
        let after = try track(engine, count: 12, tag: "AFTER")
        let anonymous = after.filter { $0[attribute: "Mobile User Id"] == nil }
        // At the real time (the backoff not over): the anonymous events go once the producer is back.
        for _ in 0..<50 {  // bounded: about 10 s
            let pending = try anonymous.filter { try engine.store.event(id: $0.id)?.event.status != .successfullyPosted }
            if pending.isEmpty { break }
            _ = engine.delivery.flush(nowMs: Clock.wallMs())
            usleep(200_000)
        }
        for event in anonymous { XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .successfullyPosted, event.name) }
        for event in after where event[attribute: "Mobile User Id"] != nil {
            XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .notPosted, "\(event.name) waits behind its user's earlier events")
        }
        try deliverAll(engine)
        XCTAssertEqual(try engine.store.count(status: .notPosted), 0)
        let records = try cluster.consume()
        for user in ["user-0", "user-1", "user-2"] {
            var seen = Set<String>()
            let order = records.filter { $0.key == user }.sorted { $0.offset < $1.offset }.map(\.idempotencyKey).filter { seen.insert($0).inserted }
            XCTAssertEqual(order, (before + after).filter { $0[attribute: "Mobile User Id"] == .string(user) }.map(\.id), user)
        }
    }

    /// The whole cluster gone through more flushes than max_num_retries: once librdkafka has said
    /// every broker is down the sink answers "unavailable" (a wait, not an attempt), so the events
    /// keep their retry count, none ends FAILED_POST, and all are delivered when it is back.
    func testTheClusterGoneLongerThanTheRetriesEventsWaitAndAreDeliveredAfter() throws {
        let host = try host()
        let engine = try host.events()
        try deliverAll(engine)  // the session-started event
        for broker in 1...3 { try cluster.setDown(broker) }
        let waiting = try track(engine, count: 5, tag: "W")
        var reports: [DeliveryReport] = []
        for round in 1...6 {  // twice max_num_retries, each as if the backoff had passed
            reports.append(engine.delivery.flush(nowMs: Clock.wallMs() + Int64(round) * 600_000))
        }
        XCTAssertEqual(reports.map(\.posted), [0, 0, 0, 0, 0, 0])
        XCTAssertEqual(reports.map(\.failed), [0, 0, 0, 0, 0, 0], "no FAILED_POST while the cluster is away: \(reports)")
        XCTAssertTrue(reports.last?.lastError?.contains("kafka: all brokers are down") ?? false, "\(reports)")
        for event in waiting {
            let stored = try XCTUnwrap(engine.store.event(id: event.id)?.event)
            XCTAssertEqual(stored.status, .notPosted, event.name)
            XCTAssertLessThanOrEqual(stored.attempts, 1, "\(event.name): only a call that produced is an attempt")
        }
        for broker in 1...3 { try cluster.setUp(broker) }
        try deliverAll(engine)
        XCTAssertEqual(try engine.store.count(status: .failedPost), 0)
        XCTAssertEqual(try engine.store.count(status: .notPosted), 0)
        let keys = Set(try cluster.consume().map(\.idempotencyKey))
        for event in waiting { XCTAssertTrue(keys.contains(event.id), "\(event.name) not in the topic") }
    }

    func testSIGKILLMidDeliveryLosesNothing() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try TestSupport.write(
            manifest(cacheSize: 50, events: "  flush_interval: 200 ms", server: "server: {host: 127.0.0.1, port: 0}"),
            to: folder + "/plugins.yaml")
        // serve as a child process, so that it can be killed with SIGKILL.
        let tracked: [String] = try await TestSupport.offPool {
            var tracked: [String] = []
            let serve = try ServeProcess(manifest: folder + "/plugins.yaml")
            for batch in 0..<20 {
                let events = (0..<25).map { n -> String in
                    let id = "kill-\(batch)-\(n)"
                    tracked.append(id)
                    return #"{"id":"\#(id)","type":"named_event","name":"K","attributes":{"Mobile User Id":"u\#(n % 5)"}}"#
                }
                let (status, _) = try serve.call("POST", "/v1/events", "[" + events.joined(separator: ",") + "]")
                XCTAssertEqual(status, 201)
            }
            kill(serve.process.processIdentifier, SIGKILL)  // delivery is under way: a flush every 200 ms, a batch every 50
            serve.process.waitUntilExit()
            return tracked
        }
        // Restarted: serve's API and services in this process, on the killed one's data directory.
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let restarted = ListeningAPI(port: port)
                var waiting = -1
                // The killed process's claims end with their lease (2 x post_timeout + 10 s): at most 40 s.
                for _ in 0..<200 {
                    let (_, stats) = try restarted.call("GET", "/v1/events/stats")
                    let counts = stats as? [String: Any]
                    waiting = ((counts?["NOT_POSTED"] as? Int) ?? 0) + ((counts?["EXPIRED"] as? Int) ?? 0)
                    if waiting == 0 { break }
                    usleep(200_000)
                }
                XCTAssertEqual(waiting, 0, "everything delivered after the restart")
            }
        }
        let keys = Set(try cluster.consume().map(\.idempotencyKey))
        let missing = tracked.filter { !keys.contains($0) }
        XCTAssertTrue(missing.isEmpty, "\(missing.count) events not in the topic: \(missing.prefix(5))")
    }

    /// README, "Running many instances": two `hubhost serve` on two ports, each with its own data
    /// directory (store, sessions, caches), feeding one topic of one cluster. Both run in this
    /// process (InProcessAPI, their services delivering), each on a loopback port of its own.
    func testTwoServeInstancesOnTwoPortsFeedOneTopic() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        for name in ["a", "b"] {
            try TestSupport.write(
                manifest(
                    dataDir: "data-\(name)", cacheSize: 10, events: "  flush_interval: 200 ms",
                    server: "server: {host: 127.0.0.1, port: 0}"),
                to: folder + "/\(name).yaml")
        }
        let tracked: [String] = try await InProcessAPI.listening(manifestPath: folder + "/a.yaml", services: true) { a, _ in
            try await InProcessAPI.listening(manifestPath: folder + "/b.yaml", services: true) { b, _ in
                try await TestSupport.offPool { () throws -> [String] in
                    var ids: [String] = []
                    let instances = [ListeningAPI(port: a), ListeningAPI(port: b)]
                    XCTAssertNotEqual(instances[0].port, instances[1].port)
                    for (index, serve) in instances.enumerated() {
                        let events = (0..<40).map { n -> String in
                            let id = "instance-\(index)-\(n)"
                            ids.append(id)
                            return #"{"id":"\#(id)","type":"named_event","name":"I","attributes":{"Mobile User Id":"shared-\#(n % 4)"}}"#
                        }
                        XCTAssertEqual(try serve.call("POST", "/v1/events", "[" + events.joined(separator: ",") + "]").0, 201)
                    }
                    for serve in instances {
                        var waiting = -1
                        for _ in 0..<100 {  // at most 20 s
                            let counts = try serve.call("GET", "/v1/events/stats").1 as? [String: Any]
                            waiting = ((counts?["NOT_POSTED"] as? Int) ?? 0) + ((counts?["EXPIRED"] as? Int) ?? 0)
                            if waiting == 0 { break }
                            usleep(200_000)
                        }
                        XCTAssertEqual(waiting, 0)
                    }
                    return ids
                }
            }
        }
        let records = try cluster.consume()
        let keys = Set(records.map(\.idempotencyKey))
        XCTAssertTrue(Set(tracked).isSubset(of: keys), "both instances' events in the one topic")
        // One user's events share a partition whichever instance tracked them.
        for user in (0..<4).map({ "shared-\($0)" }) {
            XCTAssertEqual(Set(records.filter { $0.key == user }.map(\.partition)).count, 1, user)
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/data-a/events.sqlite"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/data-b/events.sqlite"), "a store per instance")
    }
}
