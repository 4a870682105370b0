import Foundation
import HubHostKit

/// `hubhost bench ingest`: `POST /v1/events` over 127.0.0.1 as users drive it. The caller starts
/// `hubhost serve` (on a scratch data directory) and gives its address; this writes two wrk Lua
/// scripts to a temporary folder (one event per request, and `eventsPerBatch` events per request)
/// and runs wrk with keep-alive connections at each count in `connections`, reading requests/s,
/// p50/p99 and the non-2xx answers. The yardstick, measured by the caller in the same run, is the
/// in-process `bench events` rate.
public struct IngestBenchmark {
    public struct Run: Encodable, Sendable {
        public var connections: Int
        public var eventsPerRequest: Int
        public var requestsPerSecond: Double
        public var eventsPerSecond: Double
        public var p50Ms: Double
        public var p99Ms: Double
        /// Answers other than 201, and socket errors (timeouts, resets): each one is a failure.
        public var non2xx: Int
        public var socketErrors: Int
        /// The server's CPU time per request during the run, by kind of thread (when
        /// `serverPID` was given).
        public var cpu: PageServingBenchmark.CPUPerRequest?
    }

    public var baseURL: String
    /// Connection counts measured, one event per request, in order.
    public var connections: [Int] = [1, 8, 32, 64]
    /// Connection counts measured with `eventsPerBatch` events per request.
    public var batchConnections: [Int] = [8]
    public var eventsPerBatch = 100
    public var seconds = 5
    /// The server's process id, to read the CPU its threads spend per request (`Run.cpu`); nil: not measured.
    public var serverPID: Int32?

    public init(baseURL: String) {
        self.baseURL = baseURL
    }

    /// The event every request carries: a named event with three attributes, no id (the host gives
    /// each one a new id, so every request stores new events).
    static let eventJSON = #"{"type":"named_event","name":"PLAYER LOADED","attributes":{"Level":3,"Mode":"arcade","Score":12.5}}"#

    public func run(progress: (String) -> Void = { _ in }) throws -> [Run] {
        let wrk = try PageServingBenchmark.tool("wrk", in: ["/usr/bin/wrk", "/usr/local/bin/wrk"])
        let folder = NSTemporaryDirectory() + "hubhost-bench-ingest-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let single = folder + "/single.lua"
        let batched = folder + "/batched.lua"
        try Self.script(body: Self.eventJSON).write(toFile: single, atomically: true, encoding: .utf8)
        let list = "[" + Array(repeating: Self.eventJSON, count: eventsPerBatch).joined(separator: ",") + "]"
        try Self.script(body: list).write(toFile: batched, atomically: true, encoding: .utf8)

        // Warm-up, not reported: the first requests acquire the location and fill the plugins'
        // caches (the first one can take most of a second).
        progress("wrk: warm-up, 4 connections, 1 s")
        _ = try measure(wrk, script: single, connections: 4, eventsPerRequest: 1, seconds: 1)
        var runs: [Run] = []
        for count in connections {
            progress("wrk: \(count) connection\(count == 1 ? "" : "s"), one event per request, \(seconds) s")
            runs.append(try measure(wrk, script: single, connections: count, eventsPerRequest: 1))
        }
        for count in batchConnections {
            progress("wrk: \(count) connection\(count == 1 ? "" : "s"), \(eventsPerBatch) events per request, \(seconds) s")
            runs.append(try measure(wrk, script: batched, connections: count, eventsPerRequest: eventsPerBatch))
        }
        return runs
    }

    /// A wrk script that POSTs `body` as JSON on every request.
    /// The durable floor under a one-event request: the median time of one durable commit of one
    /// event row into a new event store in `folder` (the store's own file settings: WAL,
    /// synchronous = FULL), `commits` times. A request is answered only once its event is on disk,
    /// so at one connection no server on this disk answers faster than the HTTP round trip plus
    /// this; at N connections, N requests can share one commit at best.
    public static func durableCommitMs(folder: String, commits: Int = 200) throws -> Double {
        let store = try EventStore.open(path: folder + "/durable-commit.sqlite").store
        var times: [Double] = []
        times.reserveCapacity(commits)
        for i in 0..<max(1, commits) {
            let event = Event(
                type: .namedEvent, name: "PLAYER LOADED", timestampMs: 1_700_000_000_000 + Int64(i), attributes: [.init("Level", .int(3))])
            let start = Clock.monotonicNs()
            try store.insert([event])
            times.append(Double(Clock.monotonicNs() - start) / 1e6)
        }
        return percentile(times, 0.5)
    }

    /// The most a server that answers each one-event request only once its event is durable
    /// could reach at `connections`, as a fraction of the framework alone's rate there
    /// (`frameworkPerSecond`): each cycle costs the framework's own (connections / its rate) plus
    /// at least one commit of `commitMs`, which the requests of all connections may share. Nil
    /// when a figure is not a positive finite number.
    public static func durableBound(connections: Int, frameworkPerSecond: Double, commitMs: Double) -> Double? {
        guard connections > 0, frameworkPerSecond.isFinite, frameworkPerSecond > 0, commitMs.isFinite, commitMs >= 0 else { return nil }
        let cycleSeconds = Double(connections) / frameworkPerSecond + commitMs / 1000
        return Double(connections) / cycleSeconds / frameworkPerSecond
    }

    static func script(body: String) -> String {
        """
        wrk.method = "POST"
        wrk.headers["Content-Type"] = "application/json"
        wrk.body = [==[\(body)]==]
        """
    }

    private func measure(_ wrk: String, script: String, connections: Int, eventsPerRequest: Int, seconds: Int? = nil) throws -> Run {
        let threads = min(2, connections)  // wrk needs at least one connection per thread
        let duration = seconds ?? self.seconds
        let (output, spent) = try ThreadCPU.spent(by: serverPID) {
            try BenchTool.run(
                wrk,
                [
                    "-t", String(threads), "-c", String(connections), "-d", "\(duration)s", "--timeout", "5s",
                    "--latency", "-s", script, baseURL + "/v1/events"
                ])
        }
        let figures = try PageServingBenchmark.parseWrk(output)
        return Run(
            connections: connections, eventsPerRequest: eventsPerRequest, requestsPerSecond: figures.requestsPerSecond,
            eventsPerSecond: figures.requestsPerSecond * Double(eventsPerRequest), p50Ms: figures.p50Ms, p99Ms: figures.p99Ms,
            non2xx: figures.non2xx, socketErrors: Self.socketErrors(output),
            cpu: spent.map { PageServingBenchmark.CPUPerRequest($0, requests: figures.requestsPerSecond * Double(duration)) })
    }

    /// wrk's "Socket errors: connect 0, read 0, write 0, timeout 3" line, summed (0 when absent).
    static func socketErrors(_ output: String) -> Int {
        guard let line = output.split(separator: "\n").first(where: { $0.contains("Socket errors:") }) else { return 0 }
        return line.split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Int($0) }.reduce(0, +)
    }

    /// A scratch copy of a host manifest for the benchmark's server: the same plugins and settings,
    /// with `data_dir` set to `dataDirectory` and every relative `use:` and `preloaded_bundle:`
    /// made absolute (they are relative to the original file's folder). Line by line, so the
    /// manifest's comments and order stay as they are.
    public static func scratchManifest(from text: String, folder: String, dataDirectory: String) -> String {
        var sawDataDir = false
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let trimmed = line.drop(while: { $0 == " " || $0 == "-" })
            let indent = String(line.prefix(line.count - trimmed.count))
            if line.hasPrefix("data_dir:") {
                sawDataDir = true
                return "data_dir: \(dataDirectory)"
            }
            for key in ["use:", "preloaded_bundle:"] where trimmed.hasPrefix(key) {
                var value = String(trimmed.dropFirst(key.count))
                if let comment = value.range(of: " #") { value = String(value[..<comment.lowerBound]) }
                value = value.trimmingCharacters(in: .whitespaces)
                guard !value.isEmpty, !value.hasPrefix("#") else { return String(line) }
                return "\(indent)\(key) \(HostManifest.absolute(value, from: folder))"
            }
            return String(line)
        }
        if !sawDataDir { lines.insert("data_dir: \(dataDirectory)", at: 0) }
        return lines.joined(separator: "\n")
    }
}
