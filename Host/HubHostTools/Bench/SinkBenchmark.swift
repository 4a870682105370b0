import Foundation
import HubHostKit
import SinkBenchClients

/// `hubhost bench sinks`: events per second from the durable store to SUCCESSFULLY_POSTED through
/// each event sink (the HTTP collector on loopback, Kafka on librdkafka's mock cluster, NATS
/// JetStream on a local nats-server), and in the same run the raw client's rate for the same
/// messages (one POST per batch of the same bodies; librdkafka producing directly; libnats
/// publishing directly). The store keeps its durability (WAL, synchronous = FULL): every status
/// change the delivery makes is committed as in production. Also in the same run, the store
/// ceiling (SinkStoreCeiling): plain SQLite doing only the store's part of the delivery, the rate
/// no sink can pass with this durability on this machine; and the same with a status written per
/// delivered event, as the store did before the delivered cursor.
public struct SinkBenchmark {
    public struct Row: Encodable, Sendable {
        public var sink: String
        public var destination: String
        /// Store -> sink -> SUCCESSFULLY_POSTED, events/s.
        public var eventsPerSecond: Double
        /// The raw client sending the same messages, messages/s.
        public var rawPerSecond: Double
        /// eventsPerSecond / rawPerSecond.
        public var ratio: Double
        /// eventsPerSecond / Result.storeCeilingPerSecond.
        public var ceilingRatio: Double
        public var rawClient: String
        /// Where the timed delivery went (EventDelivery.Times): the run's wall time, the time in the
        /// sink's deliver calls, in the store's transactions, and the flush waiting on the sink with
        /// its own part done (the pipeline then ran at the sink's pace).
        public var seconds: Double
        public var sinkSeconds: Double
        public var storeSeconds: Double
        public var waitingForSinkSeconds: Double
    }

    public struct Result: Encodable, Sendable {
        public var count: Int
        public var batchSize: Int
        /// Plain SQLite's claim + delivered cursor per batch on the store's schema (SinkStoreCeiling), events/s.
        public var storeCeilingPerSecond: Double
        /// The same with a status UPDATE per delivered event instead of the cursor (the store before it), events/s.
        public var storeCeilingStatusPerEventPerSecond: Double
        public var rows: [Row]
        /// Sinks not measured, and why (e.g. no nats-server on this machine).
        public var notMeasured: [String: String]
    }

    public var count: Int
    public var batchSize: Int
    public var pluginsFolder: String
    public var natsServer: String
    /// The sinks to time (nil: every one); the store ceiling is measured in every run.
    public var sinks: Set<String>?
    public static let sinkNames = ["http-collector", "kafka-sink", "nats-sink"]

    public init(
        count: Int, batchSize: Int = 1000, pluginsFolder: String, natsServer: String = "/usr/sbin/nats-server", sinks: Set<String>? = nil
    ) {
        self.count = count
        self.batchSize = batchSize
        self.pluginsFolder = pluginsFolder
        self.natsServer = natsServer
        self.sinks = sinks
    }

    private func includes(_ sink: String) -> Bool { sinks?.contains(sink) ?? true }

    struct Failure: Error, CustomStringConvertible { var description: String }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let folder = NSTemporaryDirectory() + "hubhost-bench-sinks-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var rows: [Row] = []
        var notMeasured: [String: String] = [:]

        progress("http-collector: a collector on 127.0.0.1")
        let server = try LoopbackHTTPServer()
        server.startKeepAlive(.init(headers: ["Content-Type": "application/json"], body: Data("{}".utf8)))
        let collector = (url: server.url("/events"), stop: server.stop)
        defer { collector.stop() }
        // The ceiling runs on the events the HTTP collector's store held, so they are tracked (and
        // delivered) in every run; the row is shown only when asked for.
        let http = try measure(
            name: "http-collector", destination: "collector on 127.0.0.1", folder: folder + "/http",
            events: "  collector_url: \(collector.url)\n", plugins: "", rawClient: "one POST per batch, same bodies"
        ) { messages in
            let fetcher = HTTPFetcher()
            let start = Clock.monotonicNs()
            for batch in stride(from: 0, to: messages.count, by: batchSize) {
                let body = HTTPCollectorSink.body(messages[batch..<min(batch + batchSize, messages.count)].map(\.json))
                guard
                    case .success(let response) = fetcher.fetch(
                        "POST", collector.url, headers: ["Content-Type": "application/json"], body: body,
                        timeoutSeconds: 30), response.status == 200
                else {
                    throw Failure(description: "the raw POST failed")
                }
            }
            return Double(Clock.monotonicNs() - start) / 1e9
        }
        if includes("http-collector") { rows.append(http.row) }

        // The events as the first sink's store held them: the ceiling's rows are the sinks' rows.
        let ceilingEvents = http.stored
        progress("store ceiling: plain SQLite claim + delivered cursor per batch, \(ceilingEvents.count) events")
        let ceiling = try SinkStoreCeiling(batchSize: batchSize).run(events: ceilingEvents, path: folder + "/ceiling.sqlite")
        progress("store ceiling, a status per event (before the cursor): plain SQLite claim + status update per batch")
        let ceilingBefore = try SinkStoreCeiling(batchSize: batchSize, recording: .statusPerEvent).run(
            events: ceilingEvents, path: folder + "/ceiling-status-per-event.sqlite")

        if includes("kafka-sink") {
            progress("kafka-sink: a mock cluster of 3 brokers")
            guard let bootstrapPointer = sink_bench_kafka_mock_start(3, "bench-events", 8) else {
                throw Failure(description: "the mock cluster did not start")
            }
            defer { sink_bench_kafka_mock_stop() }
            let bootstrap = String(cString: bootstrapPointer)
            rows.append(
                try measure(
                    name: "kafka-sink", destination: "librdkafka mock cluster, 3 brokers, 8 partitions", folder: folder + "/kafka",
                    events: "  sink: kafka\n",
                    plugins: """
                          - id: kafka
                            use: \(pluginsFolder)/KafkaSink/plugin.yaml
                            config: {bootstrap_servers: "\(bootstrap)", topic: bench-events}
                        """, rawClient: "librdkafka producing directly (idempotent, acks=all, lz4)"
                ) { messages in
                    try Self.raw(messages) { pointer, count, error in
                        sink_bench_kafka_produce(bootstrap, "bench-events", pointer, count, 120_000, error, 512)
                    }
                }.row)
        }

        if !includes("nats-sink") {
            // not asked for
        } else if FileManager.default.isExecutableFile(atPath: natsServer) {
            progress("nats-sink: nats-server -js on 127.0.0.1")
            let server = try LocalNatsServer(executable: natsServer, storeDirectory: folder + "/nats-store")
            defer { server.stop() }
            rows.append(
                try measure(
                    name: "nats-sink", destination: "nats-server -js on 127.0.0.1 (file store)", folder: folder + "/nats",
                    events: "  sink: nats\n",
                    plugins: """
                          - id: nats
                            use: \(pluginsFolder)/NatsSink/plugin.yaml
                            config: {url: "\(server.url)", subject: "bench.{type}", stream: BENCH, create_stream: true}
                        """, rawClient: "libnats publishing to JetStream directly (async, Nats-Msg-Id)"
                ) { messages in
                    try Self.raw(messages) { pointer, count, error in
                        sink_bench_nats_publish(server.url, "bench.17", pointer, count, 120_000, error, 512)
                    }
                }.row)
        } else {
            notMeasured["nats-sink"] = "no nats-server at \(natsServer) (Debian: apt-get install nats-server)"
        }
        for index in rows.indices { rows[index].ceilingRatio = rows[index].eventsPerSecond / ceiling }
        return Result(
            count: count, batchSize: batchSize, storeCeilingPerSecond: ceiling, storeCeilingStatusPerEventPerSecond: ceilingBefore, rows: rows,
            notMeasured: notMeasured)
    }

    /// Tracks `count` events into a host delivering through the sink, then times the delivery of all
    /// of them; then times `raw` on the same messages (their idempotency keys suffixed, so a
    /// deduplicating destination takes them as new). Returns the row and the events as stored.
    private func measure(
        name: String, destination: String, folder: String, events: String, plugins: String, rawClient: String,
        raw: ([SinkEvent]) throws -> Double
    ) throws -> (row: Row, stored: [Event]) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try """
        data_dir: data
        logging: {severity: error}
        events:
          cache_size: 1000000
          session_timeout: 1 day
          post_timeout: 60 sec
        \(events)
        plugins:
        \(plugins.isEmpty ? "  []" : plugins)
        """.write(toFile: folder + "/plugins.yaml", atomically: true, encoding: .utf8)
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let engine = try host.events()
        engine.delivery.batchSize = batchSize
        for start in stride(from: 0, to: count, by: 1000) {
            try engine.trackBatch(
                (start..<min(start + 1000, count)).map { n in
                    Event(
                        type: .namedEvent, name: "BENCH \(n)",
                        attributes: [.init("Mobile User Id", .string("user-\(n % 64)")), .init("Level", .int(Int64(n)))])
                })
        }
        let stored = try engine.store.deliverable(limit: count + 10)
        let messages = stored.map { event -> SinkEvent in
            var message = EventDelivery.sinkEvent(event, nameField: engine.settings.eventNameField)
            message.idempotencyKey += "-raw"
            return message
        }
        let start = Clock.monotonicNs()
        var report: DeliveryReport?
        for _ in 0..<1000 {  // bounded; each flush delivers everything due unless a batch has retries
            report = engine.flush()
            if try engine.store.count(status: .notPosted) == 0 { break }
        }
        let seconds = Double(Clock.monotonicNs() - start) / 1e9
        let times = engine.delivery.times  // a fresh host: only the timed flushes
        let posted = try engine.store.count(status: .successfullyPosted)
        guard posted == stored.count else {
            throw Failure(description: "\(name): \(posted) of \(stored.count) events delivered (\(report?.lastError ?? "no error"))")
        }
        let rawSeconds = try raw(messages)
        let sinkRate = Double(posted) / max(seconds, 1e-9)
        let rawRate = Double(messages.count) / max(rawSeconds, 1e-9)
        let row = Row(
            sink: name, destination: destination, eventsPerSecond: sinkRate, rawPerSecond: rawRate, ratio: sinkRate / rawRate,
            ceilingRatio: 0, rawClient: rawClient, seconds: seconds, sinkSeconds: times.sinkSeconds, storeSeconds: times.storeSeconds,
            waitingForSinkSeconds: times.waitingForSinkSeconds)  // ceilingRatio: set by run once the ceiling is measured
        return (row, stored)
    }

    /// Lays the messages out as C structs over one block of bytes the call borrows, runs a raw client.
    static func raw(
        _ messages: [SinkEvent],
        _ client: (UnsafePointer<sink_bench_message_t>, Int, UnsafeMutablePointer<CChar>) -> Double
    ) throws -> Double {
        var block = [UInt8]()
        var spans: [(key: Range<Int>, id: Range<Int>, value: Range<Int>)] = []
        func append(_ bytes: [UInt8]) -> Range<Int> {
            let start = block.count
            block += bytes
            block.append(0)  // NUL-terminated, for the clients that want C strings
            return start..<(start + bytes.count)
        }
        for message in messages {
            let key = message.mobileUserID.isEmpty ? message.anonymousID : message.mobileUserID
            spans.append((append(Array(key.utf8)), append(Array(message.idempotencyKey.utf8)), append([UInt8](message.json))))
        }
        var error = [CChar](repeating: 0, count: 512)
        let seconds = block.withUnsafeBufferPointer { bytes -> Double in
            let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            let structs = zip(messages, spans).map { message, span in
                sink_bench_message_t(
                    key: base + span.key.lowerBound, key_length: span.key.count, idempotency_key: base + span.id.lowerBound,
                    value: base + span.value.lowerBound, value_length: span.value.count, type_code: message.typeCode)
            }
            return structs.withUnsafeBufferPointer { buffer in
                error.withUnsafeMutableBufferPointer { client(buffer.baseAddress!, messages.count, $0.baseAddress!) }
            }
        }
        guard seconds > 0 else {
            throw Failure(description: "raw client: \(String(filledBuffer: error))")
        }
        return seconds
    }
}
