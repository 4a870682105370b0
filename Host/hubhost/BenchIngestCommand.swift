import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

extension BenchCommand {
    struct Ingest: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ingest",
            abstract:
                "POST /v1/events under `hubhost serve` driven by wrk, one event and many events per request, beside the in-process `bench events` rate.",
            discussion: """
                Runs the in-process `bench events` pipeline first (the yardstick), then starts `hubhost serve` on a \
                scratch copy of --manifest (the same plugins and settings, a new data directory, any free port) and runs \
                wrk with keep-alive connections: one event per request at each of --connections, then --batch-size events \
                per request at each of --batch-connections. Every request is acknowledged only once its events are on \
                disk. Then the same one-event loads run against the HTTP framework alone (`bench floor-server`: \
                Hummingbird answering 201 with the body, nothing parsed or stored), the rate no route of serve can pass. \
                Each server's CPU time per request is read from its threads' counters in /proc around each run. \
                Run from the repository root with a release build; needs wrk (apt-get install wrk).
                """)

        @OptionGroup var manifestOption: ManifestOption

        @Option(parsing: .unconditional, help: "Seconds of wrk load per measurement.")
        var seconds: Int = 5

        @Option(parsing: .unconditional, help: ArgumentHelp("Connection counts, one event per request (comma-separated).", valueName: "n,n,..."))
        var connections: String = "1,8,32,64"

        @Option(name: .customLong("batch-size"), parsing: .unconditional, help: "Events per request in the batched measurement.")
        var batchSize: Int = 100

        @Option(
            name: .customLong("batch-connections"), parsing: .unconditional,
            help: ArgumentHelp("Connection counts, --batch-size events per request (comma-separated).", valueName: "n,n,..."))
        var batchConnections: String = "8"

        @Option(parsing: .unconditional, help: "Events through the in-process pipeline (the yardstick), in batches of 1000.")
        var count: Int = 100_000

        @Option(help: ArgumentHelp("The folder of the bundled plugins' plugin.yaml files (for the yardstick).", valueName: "path"))
        var plugins: String = "Plugins"

        @Flag(help: "A short run: 2 s per measurement, 1 and 32 connections, 20,000 events in-process.")
        var quick = false

        @OptionGroup var output: JSONFlag

        static func counts(_ text: String) -> [Int]? {
            let parts = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard !parts.isEmpty, parts.allSatisfy({ $0.map { (1...1024).contains($0) } ?? false }) else { return nil }
            return parts.compactMap { $0 }
        }

        func validate() throws {
            guard (1...600).contains(seconds), (1...EventLimits.maxEventsPerRequest).contains(batchSize), (1...10_000_000).contains(count) else {
                throw ValidationError("--seconds is 1 to 600, --batch-size 1 to \(EventLimits.maxEventsPerRequest), --count 1 to 10000000")
            }
            guard Self.counts(connections) != nil, Self.counts(batchConnections) != nil else {
                throw ValidationError("--connections and --batch-connections are comma-separated counts from 1 to 1024")
            }
        }

        struct Report: Encodable {
            var manifest: String
            var inProcessEventsPerSecond: Double
            var runs: [IngestBenchmark.Run]
            /// The best batched run's events/s over the in-process rate.
            var batchedToInProcess: Double?
            /// The HTTP framework alone (`bench floor-server`: reads each body and answers 201 with
            /// it, nothing parsed or stored) under the same one-event load at each connection count:
            /// the rate no route of serve can pass on this machine.
            var floor: [IngestBenchmark.Run]
            /// One durable commit of one event row into a new event store in the same scratch
            /// folder (median of 200): the floor under every one-event request.
            var durableCommitMs: Double

            /// hubhost's CPU per request over the framework alone's under the same load; nil
            /// without both figures.
            static func cpuRatio(hubhost: PageServingBenchmark.CPUPerRequest?, framework: PageServingBenchmark.CPUPerRequest?) -> Double? {
                guard let hubhost, let framework, framework.microseconds > 0 else { return nil }
                return hubhost.microseconds / framework.microseconds
            }

            /// IngestBenchmark.durableBound at `connections`; nil without a framework figure there.
            func durableBound(connections: Int) -> Double? {
                floor.first { $0.connections == connections && $0.eventsPerRequest == 1 }.flatMap {
                    IngestBenchmark.durableBound(connections: connections, frameworkPerSecond: $0.requestsPerSecond, commitMs: durableCommitMs)
                }
            }
        }

        /// Measures and returns the report (also what `bench all` uses).
        func measure(say: @escaping (String) -> Void) throws -> Report {
            let folder = NSTemporaryDirectory() + "hubhost-bench-ingest-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }

            say("durable floor: 200 commits of one event row, as the event store makes them")
            let durableCommitMs = try IngestBenchmark.durableCommitMs(folder: folder)
            let pluginFolder = HostManifest.absolute(plugins, from: FileManager.default.currentDirectoryPath)
            say("in-process yardstick: bench events, \(quick ? 20_000 : count) events in batches of 1000")
            let inProcess = try EventBenchmark(
                count: quick ? 20_000 : count, batchSize: 1000, singleTrackCount: 10,
                pluginsFolder: pluginFolder
            ).run(progress: say)

            let manifestPath = HostManifest.absolute(manifestOption.manifest, from: FileManager.default.currentDirectoryPath)
            let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
            let scratch = IngestBenchmark.scratchManifest(
                from: text, folder: (manifestPath as NSString).deletingLastPathComponent,
                dataDirectory: folder + "/data")
            try scratch.write(toFile: folder + "/plugins.yaml", atomically: true, encoding: .utf8)
            say("starting hubhost serve on a scratch copy of \(manifestPath)")
            let server = try BenchServe.start(manifest: folder + "/plugins.yaml", folder: folder)
            defer { server.stop() }

            var benchmark = IngestBenchmark(baseURL: server.baseURL)
            benchmark.serverPID = server.process.processIdentifier
            benchmark.seconds = quick ? 2 : seconds
            benchmark.connections = quick ? [1, 32] : Self.counts(connections) ?? []
            benchmark.batchConnections = Self.counts(batchConnections) ?? []
            benchmark.eventsPerBatch = batchSize
            let runs = try benchmark.run(progress: say)
            server.stop()

            say("starting the HTTP framework alone (bench floor-server)")
            let floorServer = try BenchServe.startFloor(pages: nil, folder: folder)
            defer { floorServer.stop() }
            var floor = benchmark
            floor.baseURL = floorServer.baseURL
            floor.serverPID = floorServer.process.processIdentifier
            floor.batchConnections = []
            let floorRuns = try floor.run(progress: { say("floor: " + $0) })
            let bestBatched = runs.filter { $0.eventsPerRequest > 1 }.map(\.eventsPerSecond).max()
            return Report(
                manifest: manifestPath, inProcessEventsPerSecond: inProcess.eventsPerSecond, runs: runs,
                batchedToInProcess: bestBatched.map { $0 / inProcess.eventsPerSecond }, floor: floorRuns, durableCommitMs: durableCommitMs)
        }

        func run() throws {
            let report = try measure { step in if !output.json { Output.error("bench ingest: \(step)") } }
            if output.json {
                Output.json(report)
                return
            }
            print("POST /v1/events under hubhost serve (\(report.manifest), scratch data directory), wrk keep-alive connections:")
            Output.table(
                ["connections", "events/request", "requests/s", "events/s", "p50 ms", "p99 ms", "errors"],
                report.runs.map { run in
                    [
                        String(run.connections), String(run.eventsPerRequest), String(format: "%.0f", run.requestsPerSecond),
                        String(format: "%.0f", run.eventsPerSecond), String(format: "%.2f", run.p50Ms), String(format: "%.2f", run.p99Ms),
                        String(run.non2xx + run.socketErrors)
                    ]
                } + [["in-process bench events (yardstick)", "1000", "-", String(format: "%.0f", report.inProcessEventsPerSecond), "-", "-", "-"]])
            print("\nThe HTTP framework alone (Hummingbird answering 201 with the body, nothing parsed or stored), the same load:")
            Output.table(
                [
                    "connections", "events/request", "requests/s", "hubhost / framework alone", "durable bound", "p50 ms", "p99 ms", "errors",
                    "CPU µs/request", "hubhost's CPU / framework's"
                ],
                report.floor.map { run in
                    let hubhost = report.runs.first { $0.connections == run.connections && $0.eventsPerRequest == run.eventsPerRequest }
                    return [
                        String(run.connections), String(run.eventsPerRequest), String(format: "%.0f", run.requestsPerSecond),
                        hubhost.map { String(format: "%.2f", $0.requestsPerSecond / max(run.requestsPerSecond, 1e-9)) } ?? "-",
                        report.durableBound(connections: run.connections).map { String(format: "%.2f", $0) } ?? "-",
                        String(format: "%.2f", run.p50Ms), String(format: "%.2f", run.p99Ms), String(run.non2xx + run.socketErrors),
                        run.cpu.map { String(format: "%.1f", $0.microseconds) } ?? "-",
                        Report.cpuRatio(hubhost: hubhost?.cpu, framework: run.cpu).map { String(format: "%.2f", $0) } ?? "-"
                    ]
                })
            for run in report.runs {
                guard let cpu = run.cpu else { continue }
                print(
                    "hubhost's CPU per request at \(run.connections) connection\(run.connections == 1 ? "" : "s"), \(run.eventsPerRequest) event\(run.eventsPerRequest == 1 ? "" : "s") per request: \(cpu.summary)"
                )
            }
            print(
                String(
                    format:
                        "one durable commit of one event row (WAL, synchronous = FULL), median of 200: %.3f ms. Durable bound: the most a server that answers once the event is on disk could reach over the framework alone, (connections / framework rate + one commit) per cycle.",
                    report.durableCommitMs))
            if let ratio = report.batchedToInProcess {
                print(String(format: "batched requests / in-process: %.2f", ratio))
            }
        }
    }
}
