import Foundation
import GRDB
import HubHostKit

/// `hubhost bench events`: events per second and track latency for track -> location and weather
/// augmentation (caches warm) -> durable store, with batched commits; and, in the same run, the rate
/// of a plain SQLite insert of the same rows with the same settings (WAL, synchronous = FULL, same
/// batch size) as the baseline.
public struct EventBenchmark {
    public struct Result: Encodable, Sendable {
        public var count: Int
        public var batchSize: Int
        /// Events per second through the whole pipeline, batched commits.
        public var eventsPerSecond: Double
        /// Per-event latency from the start of its batch to the batch's commit, ms.
        public var p50Ms: Double
        public var p99Ms: Double
        /// Rows per second of a plain SQLite insert of the same rows, same settings and batches.
        public var baselineRowsPerSecond: Double
        /// eventsPerSecond / baselineRowsPerSecond.
        public var ratio: Double
        /// `track` of one event at a time (one durable commit each): latency, ms.
        public var singleTrackP50Ms: Double
        public var singleTrackP99Ms: Double
        public var singleTrackCount: Int
    }

    public var count: Int
    public var batchSize: Int
    public var singleTrackCount: Int
    /// The folder with the bundled plugins' plugin.yaml files (Plugins/ of the repository).
    public var pluginsFolder: String

    public init(count: Int, batchSize: Int = 1000, singleTrackCount: Int = 200, pluginsFolder: String) {
        self.count = count
        self.batchSize = batchSize
        self.singleTrackCount = singleTrackCount
        self.pluginsFolder = pluginsFolder
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let folder = NSTemporaryDirectory() + "hubhost-bench-events-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let weather = try LoopbackHTTPServer()
        weather.startKeepAlive(
            .init(headers: ["Content-Type": "application/json"], body: Data(#"{"current":{"temperature_2m":11.5,"weather_code":3}}"#.utf8)))
        defer { weather.stop() }
        try """
        data_dir: data
        logging: {severity: error}
        events: {cache_size: 1000000, session_timeout: 1 day}
        plugins:
          - id: place
            use: \(pluginsFolder)/FixedLocation/plugin.yaml
            config: {latitude: 47.6097, longitude: -122.3422, name: Pike Place Market, address: 85 Pike St}
          - id: location
            use: \(pluginsFolder)/LocationAugmentation/plugin.yaml
          - id: weather
            use: \(pluginsFolder)/WeatherAugmentation/plugin.yaml
            http_allow: [127.0.0.1]
            config: {endpoint: "http://127.0.0.1:\(weather.port)/v1/forecast"}
        """.write(toFile: folder + "/plugins.yaml", atomically: true, encoding: .utf8)
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        if let failed = host.registry.entries.first(where: { $0.state != .loaded }) {
            throw PluginLoadError.manifestMismatch(
                path: failed.configuration.use, reason: "bench plugin '\(failed.id)' did not load: \(failed.state)")
        }
        let engine = try host.events()
        func event(_ i: Int) -> Event {
            Event(
                type: .namedEvent, name: "PLAYER LOADED", timestampMs: 1_700_000_000_000 + Int64(i),
                attributes: [.init("Level", .int(Int64(i % 50))), .init("Mode", .string("arcade")), .init("Score", .double(Double(i) * 1.5))])
        }
        // Warm the caches (location, weather) and check the pipeline does what it should.
        let warm = try engine.track(event(0), autoFlush: false)
        guard warm[attribute: "Temperature C"] == .double(11.5), warm[attribute: "Latitude"] == .double(47.6097) else {
            throw PluginLoadError.manifestMismatch(path: folder, reason: "the warm-up event was not augmented: \(warm.attributes)")
        }

        progress("single-event track: \(singleTrackCount) events, one durable commit each")
        var single: [Double] = []
        for i in 0..<singleTrackCount {
            let start = Clock.monotonicNs()
            _ = try engine.track(event(i), autoFlush: false)
            single.append(Double(Clock.monotonicNs() - start) / 1e6)
        }

        progress("pipeline: \(count) events in batches of \(batchSize)")
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        let pipelineStart = Clock.monotonicNs()
        var done = 0
        while done < count {
            let n = min(batchSize, count - done)
            let batch = (done..<done + n).map(event)
            let start = Clock.monotonicNs()
            try engine.trackBatch(batch)
            let ms = Double(Clock.monotonicNs() - start) / 1e6
            latencies.append(contentsOf: repeatElement(ms, count: n))
            done += n
        }
        let pipelineSeconds = Double(Clock.monotonicNs() - pipelineStart) / 1e9

        progress("baseline: plain SQLite insert of \(count) rows in batches of \(batchSize)")
        let rows = (0..<count).map { i -> EventRowWriter.Row in
            var e = event(i)
            e.attributes = warm.attributes  // the same augmented rows
            return EventRowWriter.Row(e, attributes: AttributeJSON.encodeUTF8(e.attributes))  // a new id, NOT_POSTED, no attempts
        }
        let baseline = try EventStore.open(path: folder + "/baseline.sqlite").store
        let baselineStart = Clock.monotonicNs()
        var offset = 0
        while offset < rows.count {
            let slice = rows[offset..<min(offset + batchSize, rows.count)]
            try baseline.pool.write { db in
                var writer = try EventRowWriter(db)
                for row in slice { try writer.insert(row, nowMs: row.timestampMs) }
            }
            offset += slice.count
        }
        let baselineSeconds = Double(Clock.monotonicNs() - baselineStart) / 1e9

        let rate = Double(count) / pipelineSeconds
        let baseRate = Double(count) / baselineSeconds
        return Result(
            count: count, batchSize: batchSize, eventsPerSecond: rate, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99),
            baselineRowsPerSecond: baseRate, ratio: rate / baseRate,
            singleTrackP50Ms: percentile(single, 0.5), singleTrackP99Ms: percentile(single, 0.99), singleTrackCount: singleTrackCount)
    }
}
