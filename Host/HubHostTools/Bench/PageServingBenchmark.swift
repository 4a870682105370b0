import Foundation
import HubHostKit

/// `hubhost bench hub`, second part: web Content Hub page serving over 127.0.0.1, measured with
/// wrk (Debian's package), beside nginx serving the very same pages exported as static files, in
/// the same run. The caller starts `hubhost serve` and names the pages; this fetches each page
/// once from hubhost, writes it under a static root, starts nginx on a free loopback port with a
/// private config (no root needed, no system nginx touched), and runs the same wrk load (the
/// paths in rotation) against both.
public struct PageServingBenchmark {
    public struct Figures: Encodable, Sendable {
        public var requestsPerSecond: Double
        public var p50Ms: Double
        public var p99Ms: Double
        public var non2xx: Int
    }

    public struct Result: Encodable, Sendable {
        public var pages: Int
        public var connections: Int
        public var threads: Int
        public var seconds: Int
        public var hubhost: Figures
        public var nginx: Figures
        /// hubhost / nginx requests per second.
        public var ratio: Double
        /// The HTTP framework alone serving the same pages from memory (`bench floor-server`), when
        /// the caller started it: the rate no page of `serve` can pass on this machine.
        public var floor: Figures?
        /// floor / nginx requests per second: the most the goal's ratio could reach.
        public var floorToNginx: Double?
        /// hubhost / floor requests per second.
        public var hubhostToFloor: Double?
        /// The CPU time serve spent per page during its wrk run, by kind of thread (when its
        /// process id was given): where a page's cost goes beside the framework's.
        public var hubhostCPU: CPUPerRequest?
        /// The same for the framework alone (when its process id was given).
        public var floorCPU: CPUPerRequest?
    }

    /// CPU time per request of a server process during a wrk run, from its threads' counters
    /// (`ThreadCPU`), in microseconds: in all, and by kind of thread (only kinds that spent any).
    public struct CPUPerRequest: Encodable, Sendable {
        public var microseconds: Double
        public var byThreads: [String: Double]

        /// `spent` CPU seconds by role over `requests` requests.
        init(_ spent: [ThreadCPU.Role: Double], requests: Double) {
            let perRequest = 1e6 / max(requests, 1)
            microseconds = spent.values.reduce(0, +) * perRequest
            byThreads = Dictionary(uniqueKeysWithValues: spent.map { ($0.key.rawValue, $0.value * perRequest) })
        }

        /// "59.1 µs: event loops 25.0, page views recorder 20.1, ..." (largest first).
        public var summary: String {
            let parts = ThreadCPU.Role.allCases.compactMap { role in byThreads[role.rawValue].map { (role.rawValue, $0) } }
                .sorted { $0.1 > $1.1 }.map { String(format: "%@ %.1f", $0.0, $0.1) }
            return String(format: "%.1f µs", microseconds) + (parts.isEmpty ? "" : ": " + parts.joined(separator: ", "))
        }
    }

    /// A server started on the exported pages' folder: its base URL and how to stop it.
    public struct StartedServer {
        public var baseURL: String
        public var stop: () -> Void
        /// Its process id, for the CPU it spends per page (`Result.floorCPU`); nil: not measured.
        public var pid: Int32?
        public init(baseURL: String, pid: Int32? = nil, stop: @escaping () -> Void) {
            self.baseURL = baseURL
            self.pid = pid
            self.stop = stop
        }
    }

    public enum Failure: Error, CustomStringConvertible {
        case missingTool(String)
        case failed(String)

        public var description: String {
            switch self {
            case .missingTool(let tool): return "\(tool) is not installed (apt-get install wrk nginx-light)"
            case .failed(let why): return why
            }
        }
    }

    public var baseURL: String
    public var paths: [String]
    public var connections = 16
    public var threads = 2
    public var seconds = 5
    /// Starts the HTTP framework alone on the folder of exported pages (`hubhost bench
    /// floor-server --pages`); nil: no floor row.
    public var startFloor: ((String) throws -> StartedServer)?
    /// The process id of the server at `baseURL`, for the CPU it spends per page
    /// (`Result.hubhostCPU`); nil: not measured.
    public var serverPID: Int32?

    public init(baseURL: String, paths: [String]) {
        self.baseURL = baseURL
        self.paths = paths
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let wrk = try Self.tool("wrk", in: ["/usr/bin/wrk", "/usr/local/bin/wrk"])
        let nginx = try Self.tool("nginx", in: ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"])
        let folder = NSTemporaryDirectory() + "hubhost-bench-pages-" + UUID().uuidString
        let root = folder + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        progress("exporting \(paths.count) pages as static files")
        let http = HTTPFetcher()
        for path in paths {
            let response = try http.fetch("GET", baseURL + path, timeoutSeconds: 10).get()
            guard response.status == 200 else { throw Failure.failed("GET \(path) answered \(response.status)") }
            // /hub is both a page and a folder of pages: every page is written as <path>/index.html.
            let target = root + path + "/index.html"
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try response.body.write(to: URL(fileURLWithPath: target))
        }

        // The same conditions as hubhost's: wrk's connections stay open for the whole run (nginx
        // would close each after 1,000 requests by default; hubhost never does).
        let nginxServer = try LocalNginx.start(
            nginx, folder: folder, httpDirectives: "default_type text/html;\n    keepalive_requests 1000000;",
            serverDirectives: "root \(root);\n        location / { try_files $uri/index.html =404; }")
        defer { nginxServer.stop() }
        let server = nginxServer.process
        let nginxURL = nginxServer.baseURL
        try Self.waitForPage(http: http, url: nginxURL + paths[0], process: server)

        let script = folder + "/paths.lua"
        let list = paths.map { "\"\($0.replacingOccurrences(of: "\"", with: "\\\""))\"" }.joined(separator: ",\n")
        try """
        local paths = {\(list)}
        local i = 0
        request = function()
            i = i % #paths + 1
            return wrk.format("GET", paths[i])
        end
        """.write(toFile: script, atomically: true, encoding: .utf8)

        progress("wrk: hubhost, \(seconds) s, \(connections) connections")
        let (hubhost, hubhostCPU) = try runWrk(wrk, url: baseURL, script: script, pid: serverPID)
        var floor: Figures?
        var floorCPU: CPUPerRequest?
        if let startFloor {
            progress("wrk: the HTTP framework alone (the same pages from memory), \(seconds) s, \(connections) connections")
            let floorServer = try startFloor(root)
            defer { floorServer.stop() }
            (floor, floorCPU) = try runWrk(wrk, url: floorServer.baseURL, script: script, pid: floorServer.pid)
        }
        progress("wrk: nginx (static export of the same pages), \(seconds) s, \(connections) connections")
        let nginxFigures = try runWrk(wrk, url: nginxURL, script: script, pid: nil).figures
        let nginxRate = max(nginxFigures.requestsPerSecond, 1e-9)
        return Result(
            pages: paths.count, connections: connections, threads: threads, seconds: seconds, hubhost: hubhost,
            nginx: nginxFigures, ratio: hubhost.requestsPerSecond / nginxRate, floor: floor,
            floorToNginx: floor.map { $0.requestsPerSecond / nginxRate },
            hubhostToFloor: floor.map { hubhost.requestsPerSecond / max($0.requestsPerSecond, 1e-9) }, hubhostCPU: hubhostCPU,
            floorCPU: floorCPU)
    }

    /// wrk's figures against `url`, and the CPU the server of `pid` spent per request meanwhile.
    private func runWrk(_ wrk: String, url: String, script: String, pid: Int32?) throws -> (figures: Figures, cpu: CPUPerRequest?) {
        let (figures, spent) = try ThreadCPU.spent(by: pid) {
            try Self.parseWrk(
                try BenchTool.run(wrk, ["-t", String(threads), "-c", String(connections), "-d", "\(seconds)s", "--latency", "-s", script, url]))
        }
        return (figures, spent.map { CPUPerRequest($0, requests: figures.requestsPerSecond * Double(seconds)) })
    }

    /// Reads "Requests/sec:", the --latency distribution's 50% and 99% lines and "Non-2xx".
    static func parseWrk(_ output: String) throws -> Figures {
        var figures = Figures(requestsPerSecond: 0, p50Ms: 0, p99Ms: 0, non2xx: 0)
        var sawRate = false
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let first = fields.first else { continue }
            if first == "Requests/sec:", fields.count > 1, let rate = Double(fields[1]) {
                figures.requestsPerSecond = rate
                sawRate = true
            } else if first == "50%", fields.count > 1 {
                figures.p50Ms = milliseconds(fields[1]) ?? 0
            } else if first == "99%", fields.count > 1 {
                figures.p99Ms = milliseconds(fields[1]) ?? 0
            } else if first == "Non-2xx", fields.count > 4, let count = Int(fields[4]) {
                figures.non2xx = count
            }
        }
        guard sawRate else { throw Failure.failed("cannot read wrk's output: \(output)") }
        return figures
    }

    /// "512.00us", "1.25ms", "2.00s" -> milliseconds.
    static func milliseconds(_ text: String) -> Double? {
        for (suffix, factor) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * factor }
        }
        return nil
    }

    static func tool(_ name: String, in candidates: [String]) throws -> String {
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { throw Failure.missingTool(name) }
        return found
    }

    /// A free TCP port on 127.0.0.1 (bound to port 0, read back, released).
    static func freePort() throws -> Int {
        guard let bound = LoopbackSocket.open() else { throw Failure.failed("cannot bind a port on 127.0.0.1") }
        close(bound.fd)
        return Int(bound.port)
    }

    /// Waits (at most 5 s) until `url` answers 200.
    static func waitForPage(http: HTTPFetcher, url: String, process: Process) throws {
        for _ in 0..<100 {
            if case .success(let response) = http.fetch("GET", url, timeoutSeconds: 1), response.status == 200 { return }
            guard process.isRunning else { throw Failure.failed("\(url): the server exited (\(process.terminationStatus))") }
            usleep(50_000)
        }
        throw Failure.failed("\(url) did not answer within 5 s")
    }
}
