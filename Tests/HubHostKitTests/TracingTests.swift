import Foundation
import XCTest

@testable import HubHostKit

/// Traces (docs/operating.md, "Traces"): `hubhost serve` with `tracing.endpoint` exports over
/// OTLP/HTTP to a loopback receiver that decodes the real protobuf (Tests/Fixtures/otlp_receiver.py,
/// PyPI opentelemetry-proto): the HTTP request's span, the group commit's, the sink delivery's and
/// the sink plugin call's all share the trace id of the POST's traceparent. The traceparent is
/// kept with the event and sent on by the http-collector (HTTP header), Kafka and NATS (message
/// headers); an invalid one is ignored.
final class TracingTests: XCTestCase {
    private var folder = ""
    /// The caller's trace, sampled.
    private let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    private var callerTraceparent: String { "00-\(traceID)-00f067aa0ba902b7-01" }

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
    }

    // MARK: The loopback receiver

    /// The receiver as a child process; its lines (spans, collector requests) are read from `output`.
    /// Safe to share: every field is a `let` set in init; `lines` only reads the output file.
    private final class Receiver: @unchecked Sendable {
        struct DidNotStart: Error, CustomStringConvertible {
            var description: String
        }

        let process = Process()
        let input = Pipe()
        let output: String
        let port: Int

        init(output: String) throws {
            self.output = output
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", TestSupport.repository + "/Tests/Fixtures/otlp_receiver.py", output, "240"]
            process.standardInput = input
            let banner = try TestSupport.startReadingFirstLine(process)
            guard banner.hasPrefix("port "), let port = Int(banner.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                process.terminate()
                // Never skipped: scripts/bootstrap (which .ci/run runs) installs opentelemetry-proto.
                throw DidNotStart(description: "the OTLP receiver did not start (is opentelemetry-proto installed? scripts/bootstrap): \(banner)")
            }
            self.port = port
        }

        /// Every line written so far, decoded.
        func lines() -> [[String: Any]] {
            guard let text = try? String(contentsOfFile: output, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        /// The lines once `done` holds for them, polling every 200 ms for `seconds` at most.
        func lines(within seconds: Double, until done: ([[String: Any]]) -> Bool) -> [[String: Any]] {
            let start = Date()
            var seen = lines()
            while !done(seen), Date().timeIntervalSince(start) < seconds {
                usleep(200_000)
                seen = lines()
            }
            return seen
        }

        deinit {
            try? input.fileHandleForWriting.close()  // the receiver ends when its stdin closes
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    private static func post(_ serve: any JSONCalls, _ body: String, traceparent: String?) throws -> Int {
        var headers = ["Content-Type": "application/json"]
        if let traceparent { headers["traceparent"] = traceparent }
        return try serve.http.fetch("POST", serve.base + "/v1/events", headers: headers, body: Data(body.utf8), timeoutSeconds: 10).get()
            .status
    }

    /// Ends `serve` with SIGTERM (its exporter sends the spans it still holds) and waits 30 s at most.
    private func stop(_ serve: ServeProcess) {
        kill(serve.process.processIdentifier, SIGTERM)
        let start = Date()
        while serve.process.isRunning, Date().timeIntervalSince(start) < 30 { usleep(100_000) }
    }

    // MARK: Spans, exported

    /// One event posted with the caller's traceparent, delivered through the Kafka sink (librdkafka's
    /// mock cluster): the receiver gets the request's span (named for its route), the group
    /// commit's, the delivery's and the sink plugin call's (with its instance), all in the caller's
    /// trace; the Kafka message's `traceparent` header carries that trace too.
    func testSpansOfAPostAndItsDeliveryShareTheCallersTraceAndKafkaCarriesIt() throws {
        let receiver = try Receiver(output: folder + "/spans.jsonl")
        let cluster = try KafkaMockCluster(folder: NSTemporaryDirectory() + "hubhost-kafka-helper-\(getuid())")
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: error}
            server: {host: 127.0.0.1, port: 0}
            tracing:
              endpoint: http://127.0.0.1:\(receiver.port)
              sample_ratio: 1
            events:
              sink: kafka
              cache_size: 1
              flush_interval: 200 ms
              retry_base_delay: 0
              post_timeout: 3 sec
            plugins:
            \(cluster.sinkInstance(clientSettings: "linger.ms=2"))
              - id: tagger
                use: \(try TestSupport.faultyFixture(nil, in: folder + "/tagger"))
            """, to: folder + "/plugins.yaml")
        let serve = try ServeProcess(manifest: folder + "/plugins.yaml")
        let body = #"{"id":"traced-1","type":"named_event","name":"T","attributes":{"Mobile User Id":"u1"}}"#
        XCTAssertEqual(try Self.post(serve, body, traceparent: callerTraceparent), 201)
        // Delivered within a few flushes (every 200 ms): at most 20 s.
        var delivered = false
        for _ in 0..<100 where !delivered {
            let counts = try serve.call("GET", "/v1/events/stats").1 as? [String: Any]
            delivered = (counts?["SUCCESSFULLY_POSTED"] as? Int ?? 0) >= 1 && (counts?["NOT_POSTED"] as? Int ?? 0) == 0
            if !delivered { usleep(200_000) }
        }
        XCTAssertTrue(delivered, "the event was delivered to Kafka")
        stop(serve)

        let wanted: (([[String: Any]]) -> Bool) = { lines in
            let names = Set(lines.filter { $0["trace_id"] as? String == self.traceID }.compactMap { $0["name"] as? String })
            return ["/v1/events", "events.group_commit", "events.sink.deliver", "plugin event_sink", "plugin augmentation"].allSatisfy(names.contains)
        }
        let spans = receiver.lines(within: 30, until: wanted).filter { $0["name"] != nil }
        let traced = spans.filter { $0["trace_id"] as? String == traceID }
        let names = traced.compactMap { $0["name"] as? String }
        XCTAssertTrue(names.contains("/v1/events"), "the request's span, named for its route: \(spans)")
        XCTAssertTrue(names.contains("events.group_commit"), "\(names)")
        XCTAssertTrue(names.contains("events.sink.deliver"), "\(names)")
        let request = try XCTUnwrap(traced.first { $0["name"] as? String == "/v1/events" })
        XCTAssertEqual(request["parent_span_id"] as? String, "00f067aa0ba902b7", "a child of the caller's span")
        XCTAssertEqual((request["attributes"] as? [String: Any])?["http.route"] as? String, "/v1/events")
        let augmented = try XCTUnwrap(traced.first { $0["name"] as? String == "plugin augmentation" }, "the augmentation call: \(names)")
        XCTAssertEqual(augmented["parent_span_id"] as? String, request["span_id"] as? String, "a child of the request's span")
        XCTAssertEqual((augmented["attributes"] as? [String: Any])?["hubhost.plugin.instance"] as? String, "tagger")
        XCTAssertEqual((augmented["attributes"] as? [String: Any])?["hubhost.plugin.outcome"] as? String, "ok")
        let call = try XCTUnwrap(traced.first { $0["name"] as? String == "plugin event_sink" }, "the sink's plugin call: \(names)")
        let attributes = try XCTUnwrap(call["attributes"] as? [String: Any])
        XCTAssertEqual(attributes["hubhost.plugin.instance"] as? String, "kafka")
        XCTAssertEqual(attributes["hubhost.plugin.kind"] as? String, "event_sink")
        XCTAssertEqual(attributes["hubhost.plugin.outcome"] as? String, "ok")
        XCTAssertNotNil(attributes["hubhost.plugin.duration_ms"] as? Double)
        let delivery = try XCTUnwrap(traced.first { $0["name"] as? String == "events.sink.deliver" })
        XCTAssertEqual(call["parent_span_id"] as? String, delivery["span_id"] as? String, "the call is the delivery's child")
        XCTAssertEqual((delivery["attributes"] as? [String: Any])?["hubhost.sink"] as? String, "kafka")

        // The message's traceparent header: the caller's trace (read with kcat, an independent client).
        let kcat = try TestSupport.run(
            "/usr/bin/env", ["kcat", "-b", cluster.bootstrap, "-C", "-t", cluster.topic, "-o", "beginning", "-e", "-q", "-f", "%h\n"],
            timeout: 60)
        XCTAssertEqual(kcat.status, 0, kcat.stderr)
        let headers = kcat.stdout.split(separator: "\n").first { $0.contains("idempotency-key=traced-1") }.map(String.init) ?? ""
        let traceparent = headers.split(separator: ",").first { $0.hasPrefix("traceparent=") }.map { String($0.dropFirst("traceparent=".count)) }
        XCTAssertEqual(traceparent.flatMap(HubTracing.traceID(ofTraceparent:)), traceID, "headers: \(headers)")
    }

    // MARK: Off by default; the traceparent kept either way

    /// Tracing off (no tracing: section): the POST's traceparent is still kept with the event and
    /// sent on by the http-collector as the request's `traceparent` header, exactly as given; an
    /// invalid one is ignored (the event is accepted, no header goes out); no span is exported.
    func testWithTracingOffTheHTTPCollectorSendsTheEventsTraceparentAndAnInvalidOneIsIgnored() async throws {
        let (traceID, callerTraceparent) = (self.traceID, self.callerTraceparent)  // for the closure below
        let receiver = try Receiver(output: folder + "/collector.jsonl")
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: error}
            server: {host: 127.0.0.1, port: 0}
            events:
              collector_url: http://127.0.0.1:\(receiver.port)/collect
              cache_size: 1
              flush_interval: 200 ms
              retry_base_delay: 0
            """, to: folder + "/plugins.yaml")
        // serve in this process, on a loopback port, its services (event delivery) running; it
        // stops when the closure returns.
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                XCTAssertEqual(try Self.post(serve, #"{"id":"a","type":"named_event","name":"A"}"#, traceparent: callerTraceparent), 201)
                let first = receiver.lines(within: 20) { $0.contains { $0["traceparent"] as? String != nil } }
                XCTAssertEqual(first.compactMap { $0["traceparent"] as? String }, [callerTraceparent], "the collector's request header: \(first)")

                for invalid in ["00-\(traceID)-00f067aa0ba902b7", "zz-\(traceID)-00f067aa0ba902b7-01", String(repeating: "0", count: 5000)] {
                    XCTAssertEqual(try Self.post(serve, #"{"type":"named_event","name":"B"}"#, traceparent: invalid), 201, "ignored, never an error")
                }
                // Delivered within a few flushes (every 200 ms): at most 20 s.
                var waiting = -1
                for _ in 0..<100 where waiting != 0 {
                    let counts = try serve.call("GET", "/v1/events/stats").1 as? [String: Any]
                    waiting = (counts?["NOT_POSTED"] as? Int ?? 0) + (counts?["EXPIRED"] as? Int ?? 0)
                    if waiting != 0 { usleep(200_000) }
                }
                XCTAssertEqual(waiting, 0)
                let all = receiver.lines()
                XCTAssertGreaterThanOrEqual(all.filter { $0["collector_path"] as? String == "/collect" }.count, 2, "\(all)")
                XCTAssertEqual(all.compactMap { $0["traceparent"] as? String }, [callerTraceparent], "no header for an ignored traceparent: \(all)")
                XCTAssertFalse(all.contains { $0["name"] != nil }, "no span without tracing.endpoint")
                let listed = try serve.call("GET", "/v1/events?limit=10").1 as? [[String: Any]]
                XCTAssertEqual(listed?.count, 5, "the four posted and the session start")
            }
        }
    }

    // MARK: NATS, the store, the header's rules

    /// The NATS sink sends each event's traceparent as the message's `traceparent` header; an event
    /// without one gets none. The same in a worker process (`isolation: process`), where the
    /// traceparents travel with the batch.
    func testNATSMessagesCarryTheEventsTraceparent() throws {
        let server = try NatsServerProcess(storeDirectory: folder + "/nats-store")
        for isolation in ["in_process", "process"] {
            try natsMessagesCarryTheTraceparent(server, isolation: isolation)
        }
    }

    private func natsMessagesCarryTheTraceparent(_ server: NatsServerProcess, isolation: String) throws {
        try TestSupport.write(
            """
            data_dir: data-\(isolation)
            logging: {severity: error}
            events:
              sink: nats
              cache_size: 10000
              retry_base_delay: 0
              post_timeout: 2 sec
            plugins:
              - id: nats
                use: \(TestSupport.plugin("NatsSink"))
                isolation: \(isolation)
                config:
                  url: \(server.url)
                  subject: "app.events.{type}"
                  stream: EVENTS
                  create_stream: true
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let engine = try host.events()
        let traced = try engine.track(Event(type: .namedEvent, name: "N", traceparent: callerTraceparent), autoFlush: false)
        let plain = try engine.track(Event(type: .namedEvent, name: "P"), autoFlush: false)
        let report = engine.flush()
        XCTAssertNil(report.lastError, "\(report)")
        let messages = try server.read(stream: "EVENTS", traceparents: true)
        XCTAssertEqual(messages.first { $0.msgID == traced.id }?.traceparent, callerTraceparent, isolation)
        XCTAssertEqual(messages.first { $0.msgID == plain.id }?.traceparent, "", isolation)
    }

    /// The traceparent is a column of the store: read back with the event, NULL (nil) for an event without one.
    func testTheStoreKeepsTheTraceparent() throws {
        let store = try EventStore.open(path: folder + "/events.sqlite").store
        try store.insert([
            Event(id: "with", type: .namedEvent, traceparent: callerTraceparent), Event(id: "without", type: .namedEvent)
        ])
        XCTAssertEqual(try store.event(id: "with")?.event.traceparent, callerTraceparent)
        XCTAssertNil(try store.event(id: "without")?.event.traceparent)
    }

    /// W3C Trace Context's rules for the header: normalized to version 00, lowercase hex; anything
    /// else ignored, a long value without being parsed.
    func testTraceparentValidation() {
        XCTAssertEqual(HubTracing.validTraceparent(callerTraceparent), callerTraceparent)
        XCTAssertEqual(HubTracing.validTraceparent(" \(callerTraceparent)\t"), callerTraceparent, "surrounding blanks")
        XCTAssertEqual(HubTracing.validTraceparent("01-\(traceID)-00f067aa0ba902b7-01-later"), callerTraceparent, "a later version read as 00")
        for invalid in [
            "", "00-\(traceID)-00f067aa0ba902b7", "00-\(traceID.uppercased())-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-\(traceID)-0000000000000000-01",
            "ff-\(traceID)-00f067aa0ba902b7-01", "00-\(traceID)-00f067aa0ba902b7-01-extra", "01-\(traceID)-00f067aa0ba902b7-01x",
            String(repeating: "a", count: 100_000)
        ] {
            XCTAssertNil(HubTracing.validTraceparent(invalid), invalid.prefix(80).description)
        }
        XCTAssertEqual(HubTracing.traceID(ofTraceparent: callerTraceparent), traceID)
    }

    /// `tracing:` in plugins.yaml: off by default; the endpoint gets /v1/traces; a ratio outside 0...1 is refused.
    func testTracingSettings() throws {
        XCTAssertFalse(TracingSettings().isEnabled)
        var settings = TracingSettings()
        settings.endpoint = "http://127.0.0.1:4318"
        XCTAssertEqual(settings.tracesURL, "http://127.0.0.1:4318/v1/traces")
        settings.endpoint = "http://127.0.0.1:4318/"
        XCTAssertEqual(settings.tracesURL, "http://127.0.0.1:4318/v1/traces")
        try TestSupport.write(
            """
            data_dir: data
            tracing:
              endpoint: http://127.0.0.1:4318
              sample_ratio: 1.5
            """, to: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(manifest.tracing.endpoint, "http://127.0.0.1:4318")
        XCTAssertEqual(manifest.tracing.sampleRatio, 1, "refused: the default stays")
        XCTAssertTrue(manifest.diagnostics.contains { $0.key == "tracing.sample_ratio" }, "\(manifest.diagnostics)")
    }
}
