import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure hubhost, each figure beside a baseline measured in the same run.",
        discussion: "Build with `swift build -c release` for figures worth reporting.",
        subcommands: [
            ABI.self, Isolation.self, Wasm.self, Events.self, Ingest.self, Campaigns.self, Hub.self, BundleBuild.self, Sinks.self, Prefetch.self,
            All.self,
            FloorServer.self
        ])

    struct ABI: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "abi",
            abstract: "Cost of one call through the plugin ABI into a no-op plugin, beside a direct Swift call.")

        @Option(parsing: .unconditional, help: "Calls per round.")
        var iterations: Int = 10_000_000

        @Option(parsing: .unconditional, help: "Rounds; the best round of each loop is reported.")
        var rounds: Int = 5

        @Option(help: ArgumentHelp("The no-op plugin library (default: libhubhost-noop.so, found as plugins are).", valueName: "path"))
        var library: String?

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard iterations > 0, rounds > 0 else { throw ValidationError("--iterations and --rounds must be positive") }
        }

        func run() throws {
            let path = try BenchCommand.noopLibrary(library)
            let result = try ABIBenchmark(iterations: iterations, libraryPath: path).run(rounds: rounds) { step in
                if !output.json { Output.error("bench abi: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                print("library: \(result.library)")
                Output.table(
                    ["call", "ns/call", "calls/s"],
                    [
                        [
                            "through the ABI (noop trigger_operator.compare)", String(format: "%.2f", result.abiNsPerCall),
                            String(format: "%.0f", result.abiCallsPerSecond)
                        ],
                        [
                            "direct Swift function (baseline)", String(format: "%.2f", result.swiftNsPerCall),
                            String(format: "%.0f", 1e9 / result.swiftNsPerCall)
                        ]
                    ])
                print(String(format: "ratio: %.2fx the baseline", result.ratio))
            }
        }
    }

    /// The no-op plugin library the benchmarks call: `--library`, or libhubhost-noop.so found as plugins are.
    static func noopLibrary(_ given: String?) throws -> String {
        try given ?? bundledLibrary("libhubhost-noop.so")
    }

    /// A bundled plugin library, found as plugins are; when it is not found, the reason on stderr and exit 1.
    static func bundledLibrary(_ name: String) throws -> String {
        switch LibraryLocator().locate(library: name, manifestFolder: nil) {
        case .success(let found): return found
        case .failure(let error):
            Output.error("\(error)")
            throw ExitCode.failed
        }
    }

    struct Isolation: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "isolation",
            abstract: "Round trip of one augmentation call in-process and through process isolation, same run.")

        @Option(parsing: .unconditional, help: "Calls per round.")
        var iterations: Int = 100_000

        @Option(parsing: .unconditional, help: "Rounds; the best round of each is reported.")
        var rounds: Int = 3

        @Option(help: ArgumentHelp("The no-op plugin library (default: libhubhost-noop.so, found as plugins are).", valueName: "path"))
        var library: String?

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard iterations > 0, rounds > 0 else { throw ValidationError("--iterations and --rounds must be positive") }
        }

        func run() throws {
            let result = try IsolationBenchmark(iterations: iterations, libraryPath: try BenchCommand.noopLibrary(library)).run(rounds: rounds) {
                step in
                if !output.json { Output.error("bench isolation: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                print("library: \(result.library)")
                Output.table(
                    ["augmentation call", "µs/call", "calls/s"],
                    [
                        [
                            "in-process (baseline)", String(format: "%.3f", result.inProcessNsPerCall / 1000),
                            String(format: "%.0f", result.inProcessCallsPerSecond)
                        ],
                        [
                            "isolation: process (worker, shared slot)", String(format: "%.3f", result.isolatedNsPerCall / 1000),
                            String(format: "%.0f", result.isolatedCallsPerSecond)
                        ],
                        [
                            "isolation: process, socket alone (no slot)", String(format: "%.3f", result.socketOnlyNsPerCall / 1000),
                            String(format: "%.0f", 1e9 / result.socketOnlyNsPerCall)
                        ],
                        [
                            "yardstick: socketpair round trip, 1 byte (threads)", String(format: "%.3f", result.socketpairRoundTripNs / 1000),
                            String(format: "%.0f", 1e9 / result.socketpairRoundTripNs)
                        ],
                        [
                            "yardstick: shared-memory round trip (spinning threads)", String(format: "%.3f", result.sharedMemoryRoundTripNs / 1000),
                            String(format: "%.0f", 1e9 / result.sharedMemoryRoundTripNs)
                        ]
                    ])
                print(String(format: "ratio: %.1fx the in-process call", result.ratio))
            }
        }
    }

    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events",
            abstract: "Events per second and track latency through location and weather augmentation into the store, beside a plain SQLite insert.",
            discussion: "Run from the repository root (it loads Plugins/*/plugin.yaml); the weather endpoint is a local server on 127.0.0.1.")

        @Option(parsing: .unconditional, help: "Events through the pipeline (and rows in the baseline).")
        var count: Int = 100_000

        @Option(name: .customLong("batch-size"), parsing: .unconditional, help: "Events per commit.")
        var batchSize: Int = 1000

        @Option(help: ArgumentHelp("The folder of the bundled plugins' plugin.yaml files.", valueName: "path"))
        var plugins: String = "Plugins"

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard count > 0, batchSize > 0 else { throw ValidationError("--count and --batch-size must be positive") }
        }

        func run() throws {
            let folder = HostManifest.absolute(plugins, from: FileManager.default.currentDirectoryPath)
            let result = try EventBenchmark(count: count, batchSize: batchSize, pluginsFolder: folder).run { step in
                if !output.json { Output.error("bench events: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                Output.table(
                    ["", "events/s", "p50 ms", "p99 ms"],
                    [
                        [
                            "track -> location + weather (warm) -> store, batches of \(result.batchSize)",
                            String(format: "%.0f", result.eventsPerSecond),
                            String(format: "%.2f", result.p50Ms), String(format: "%.2f", result.p99Ms)
                        ],
                        ["plain SQLite insert, same rows and settings (baseline)", String(format: "%.0f", result.baselineRowsPerSecond), "-", "-"],
                        [
                            "track, one durable commit per event (\(result.singleTrackCount) events)", "-",
                            String(format: "%.2f", result.singleTrackP50Ms), String(format: "%.2f", result.singleTrackP99Ms)
                        ]
                    ])
                print(String(format: "pipeline / baseline: %.2f", result.ratio))
            }
        }
    }

    struct Campaigns: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "campaigns",
            abstract: "Event evaluations per second through the campaign engine, beside a naive every-campaign check.")

        @Option(parsing: .unconditional, help: "Campaigns loaded (ten per event name).")
        var campaigns: Int = 10_000

        @Option(parsing: .unconditional, help: "Events evaluated.")
        var events: Int = 100_000

        @Flag(help: "Without frequency caps and without rollout or holdout on any campaign (the engine as before they existed).")
        var withoutCapsAndBuckets = false

        @Option(parsing: .unconditional, help: "Rounds of the engine's evaluation, each on a new engine; the fastest is reported.")
        var rounds: Int = 5

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard campaigns > 0, events > 0, (1...100).contains(rounds) else {
                throw ValidationError("--campaigns and --events must be positive, --rounds 1 to 100")
            }
        }

        func run() throws {
            let library = try BenchCommand.bundledLibrary("libhubhost-standard-operators.so")
            let result = try CampaignBenchmark(
                campaigns: campaigns, events: events, operatorsLibrary: library, capsAndBuckets: !withoutCapsAndBuckets, rounds: rounds
            ).run { step in
                if !output.json { Output.error("bench campaigns: \(step)") }
            }
            if output.json {
                Output.json(result)
            } else {
                Output.table(
                    ["evaluation", "events/s", "trigger matches"],
                    [
                        [
                            "campaign engine (indexed by event type and name)", String(format: "%.0f", result.engineEventsPerSecond),
                            String(result.engineMatches)
                        ],
                        [
                            "naive: every campaign's triggers per event", String(format: "%.0f", result.naiveEventsPerSecond),
                            String(result.naiveMatches)
                        ]
                    ])
                print(String(format: "ratio: %.0fx (the engine's fastest of %d rounds)", result.ratio, result.rounds))
                print(
                    "frequency caps: \(result.frequencyCaps ? "on \(CampaignBenchmark.frequencyCapsYAML)" : "off"); rollout/holdout buckets: "
                        + (result.buckets ? "on (\(result.bucketedCampaigns) of \(result.campaigns) campaigns)" : "off")
                        + "; queued: \(result.queued)")
            }
        }
    }

    struct Prefetch: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prefetch",
            abstract: "Content prefetch: downloads beside aria2c, catalog queries beside plain SQLite, live-set listener latency.",
            discussion: """
                Writes --files files of --size bytes, serves them with nginx (a private config on a free port), and downloads \
                them all through the prefetch queue (streamed to disk, size-checked), then with aria2c (-j CONCURRENCY, one \
                connection per file), best of --rounds. Prints throughput and CPU seconds per GiB for both, and the ratio. \
                Needs nginx and aria2 (apt-get install nginx-light aria2). \
                Then a catalog of --catalog-items items (100 categories, 20 sources, mixed states) built offline through the \
                engine: five filter-and-sort queries through the engine, --query-runs times each, p50/p99 beside the same answer \
                through GRDB alone (the same SQL's rows and their category links, nothing decoded); and --listeners live sets (one category sorted by title) hearing --changes state changes \
                (download, pause): p50/p99 from the change to each listener's didChange, beside --listeners plain re-reads of \
                that set. --catalog-items 0 skips this part.
                """)

        @Option(parsing: .unconditional, help: "Files downloaded.") var files: Int = 200
        @Option(parsing: .unconditional, help: "Bytes per file.") var size: Int = 5 << 20
        @Option(parsing: .unconditional, help: "Downloads at once (max_concurrent_downloads, aria2c -j).") var concurrency: Int = 4
        @Option(parsing: .unconditional, help: "Rounds; the best is reported.") var rounds: Int = 3
        @Option(name: .customLong("catalog-items"), parsing: .unconditional, help: "Items in the query catalog (0: skip the catalog figures).")
        var catalogItems: Int = 100_000
        @Option(name: .customLong("query-runs"), parsing: .unconditional, help: "Runs of each catalog query.") var queryRuns: Int = 200
        @Option(parsing: .unconditional, help: "Live-set listeners.") var listeners: Int = 100
        @Option(parsing: .unconditional, help: "State changes the listeners hear.") var changes: Int = 20
        @OptionGroup var output: JSONFlag

        /// The download figures with the catalog figures beside them under "catalog".
        struct Report: Encodable {
            var downloads: PrefetchDownloadBenchmark.Result
            var catalog: PrefetchCatalogBenchmark.Result?
            enum Key: String, CodingKey { case catalog }
            func encode(to encoder: Encoder) throws {
                try downloads.encode(to: encoder)
                var container = encoder.container(keyedBy: Key.self)
                try container.encodeIfPresent(catalog, forKey: .catalog)
            }
        }

        func validate() throws {
            guard (1...10_000).contains(files), (1...(1 << 30)).contains(size), (1...64).contains(concurrency), (1...20).contains(rounds) else {
                throw ValidationError("--files 1...10000, --size 1...1073741824, --concurrency 1...64, --rounds 1...20")
            }
            guard (0...10_000_000).contains(catalogItems), (1...100_000).contains(queryRuns), (1...10_000).contains(listeners),
                (1...10_000).contains(changes)
            else {
                throw ValidationError("--catalog-items 0...10000000, --query-runs 1...100000, --listeners 1...10000, --changes 1...10000")
            }
            if catalogItems > 0 && catalogItems < 1_000 {
                throw ValidationError("--catalog-items: 0 (skip) or at least 1000 (every category needs items)")
            }
        }

        func run() throws {
            let say: (String) -> Void = { step in if !output.json { Output.error("bench prefetch: \(step)") } }
            let result = try PrefetchDownloadBenchmark(files: files, size: size, concurrency: concurrency, rounds: rounds).run(progress: say)
            let catalog =
                catalogItems == 0
                ? nil
                : try PrefetchCatalogBenchmark(items: catalogItems, listeners: listeners, runs: queryRuns, changes: changes).run(progress: say)
            if output.json {
                Output.json(Report(downloads: result, catalog: catalog))
                return
            }
            print("\(result.files) files of \(result.size) bytes, \(result.concurrency) at once (best of \(rounds)):")
            Output.table(
                ["", "seconds", "MiB/s", "CPU s/GiB"],
                [
                    [
                        "hubhost prefetch", String(format: "%.2f", result.hubhost.seconds), String(format: "%.0f", result.hubhost.mebibytesPerSecond),
                        String(format: "%.2f", result.hubhost.cpuSecondsPerGiB)
                    ],
                    [
                        "aria2c", String(format: "%.2f", result.aria2c.seconds), String(format: "%.0f", result.aria2c.mebibytesPerSecond),
                        String(format: "%.2f", result.aria2c.cpuSecondsPerGiB)
                    ]
                ])
            print(String(format: "hubhost / aria2c throughput: %.2fx", result.ratio))
            guard let catalog else { return }
            print("")
            print("catalog of \(catalog.items) items (built in \(String(format: "%.1f", catalog.seedSeconds)) s), \(queryRuns) runs per query (ms):")
            Output.table(
                ["query", "rows", "hubhost p50", "p99", "GRDB alone p50", "p99"],
                catalog.queries.map { query in
                    [
                        query.name, "\(query.rows)", String(format: "%.2f", query.hubhostP50Ms), String(format: "%.2f", query.hubhostP99Ms),
                        String(format: "%.2f", query.sqliteP50Ms), String(format: "%.2f", query.sqliteP99Ms)
                    ]
                })
            print(
                String(
                    format:
                        "state change to %d live-set listeners (a set of %d items, %d changes): p50 %.1f ms, p99 %.1f ms; %d plain re-reads of the set: %.1f ms",
                    catalog.listeners, catalog.setSize, catalog.changes, catalog.listenerP50Ms, catalog.listenerP99Ms, catalog.listeners,
                    catalog.rereadsMs))
        }
    }

    struct Hub: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hub",
            abstract: "Content Hub: hub selection time on a large bundle, and web hub page serving beside nginx (wrk).",
            discussion: """
                Selection: a generated bundle of --hubs hubs and --articles articles; each selection tailors it for a \
                different user (best hub, every channel's articles in order), beside the same choice made by one SQL \
                query over the bundle. Pages: starts `hubhost serve` on that bundle (hub.preloaded_bundle), exports the \
                presented hub's pages as static files, serves them with nginx on 127.0.0.1, and runs the same wrk load \
                against both, and against the HTTP framework alone serving the same pages from memory (`bench \
                floor-server`: the most any route of serve could reach). Needs wrk and nginx (apt-get install wrk nginx-light); --skip-pages measures selection only.
                """)

        @Option(parsing: .unconditional, help: "Hubs in the generated bundle.")
        var hubs: Int = 1_000

        @Option(parsing: .unconditional, help: "Articles in the generated bundle (spread over 5 channels per hub).")
        var articles: Int = 100_000

        @Option(parsing: .unconditional, help: "Selections measured (one user each).")
        var selections: Int = 200

        @Option(parsing: .unconditional, help: "Seconds of wrk load per server.")
        var seconds: Int = 5

        @Option(parsing: .unconditional, help: "wrk connections.")
        var connections: Int = 16

        @Flag(help: "Measure hub selection only (no hubhost serve, nginx or wrk).")
        var skipPages = false

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard hubs > 0, articles >= hubs * 5, selections > 0, seconds > 0, connections > 0 else {
                throw ValidationError("--hubs, --selections, --seconds and --connections must be positive, --articles at least 5 per hub")
            }
        }

        struct Report: Encodable {
            var selection: HubSelectionBenchmark.Result
            var pages: PageServingBenchmark.Result?
        }

        func run() throws {
            let report = try measure { step in if !output.json { Output.error("bench hub: \(step)") } }
            if output.json {
                Output.json(report)
                return
            }
            show(report)
        }

        /// Measures and returns the report (also what `bench all` uses).
        func measure(say: @escaping (String) -> Void) throws -> Report {
            let selection = try HubSelectionBenchmark(hubs: hubs, articles: articles, selections: selections).run(progress: say)
            var pages: PageServingBenchmark.Result?
            if !skipPages {
                let folder = NSTemporaryDirectory() + "hubhost-bench-hub-serve-" + UUID().uuidString
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: folder) }
                say("writing the bundle for hubhost serve")
                let bundlePath = try HubSelectionBenchmark(hubs: hubs, articles: articles).writeBundle(to: folder + "/bundle.sqlite3")
                let server = try BenchServe.start(folder: folder, bundle: bundlePath)
                defer { server.stop() }
                let bundle = try ContentBundle(path: bundlePath)
                guard let presented = Presentation(bundle: bundle, counts: [:]) else { throw ValidationError("the bundle has no hub") }
                let paths =
                    ["/hub"] + presented.channels.map { "/hub/channel/\($0.id)" }
                    + presented.channels.flatMap { $0.articles.map { "/hub/article/\($0.id)" } }
                var benchmark = PageServingBenchmark(baseURL: server.baseURL, paths: paths)
                benchmark.seconds = seconds
                benchmark.connections = connections
                benchmark.serverPID = server.process.processIdentifier
                benchmark.startFloor = { root in
                    let floor = try BenchServe.startFloor(pages: root, folder: folder)
                    return .init(baseURL: floor.baseURL, pid: floor.process.processIdentifier, stop: floor.stop)
                }
                pages = try benchmark.run(progress: say)
            }
            return Report(selection: selection, pages: pages)
        }

        private func show(_ report: Report) {
            let selection = report.selection
            print(
                "Hub selection (\(selection.hubs) hubs, \(selection.articles) articles; bundle opened in \(String(format: "%.0f", selection.openMs)) ms):"
            )
            Output.table(
                ["selection", "p50 µs", "p99 µs"],
                [
                    [
                        "tailoring (best hub + every channel's articles ordered)", String(format: "%.1f", selection.selectionMicrosecondsP50),
                        String(format: "%.1f", selection.selectionMicrosecondsP99)
                    ],
                    [
                        "SQL query over the bundle (best hub only; baseline)", String(format: "%.1f", selection.sqlBaselineMicrosecondsP50),
                        String(format: "%.1f", selection.sqlBaselineMicrosecondsP99)
                    ]
                ])
            print("same hub chosen: \(selection.agreeing) of \(selection.selections)")
            if let pages = report.pages {
                print(
                    "\nPage serving over 127.0.0.1 (\(pages.pages) pages in rotation, wrk -t\(pages.threads) -c\(pages.connections) -d\(pages.seconds)s):"
                )
                Output.table(
                    ["server", "requests/s", "p50 ms", "p99 ms", "non-2xx"],
                    [
                        [
                            "hubhost serve (web Content Hub)", String(format: "%.0f", pages.hubhost.requestsPerSecond),
                            String(format: "%.2f", pages.hubhost.p50Ms),
                            String(format: "%.2f", pages.hubhost.p99Ms), String(pages.hubhost.non2xx)
                        ]
                    ]
                        + (pages.floor.map { floor in
                            [
                                [
                                    "Hummingbird alone, the same pages from memory (floor)", String(format: "%.0f", floor.requestsPerSecond),
                                    String(format: "%.2f", floor.p50Ms), String(format: "%.2f", floor.p99Ms), String(floor.non2xx)
                                ]
                            ]
                        } ?? []) + [
                            [
                                "nginx, the same pages as static files (baseline)", String(format: "%.0f", pages.nginx.requestsPerSecond),
                                String(format: "%.2f", pages.nginx.p50Ms), String(format: "%.2f", pages.nginx.p99Ms), String(pages.nginx.non2xx)
                            ]
                        ])
                print(String(format: "hubhost / nginx: %.2f", pages.ratio))
                if let floorToNginx = pages.floorToNginx, let hubhostToFloor = pages.hubhostToFloor {
                    print(
                        String(
                            format: "Hummingbird alone / nginx: %.2f (the most hubhost / nginx could reach); hubhost / Hummingbird alone: %.2f",
                            floorToNginx, hubhostToFloor))
                }
                if let cpu = pages.hubhostCPU {
                    print("CPU per page, by thread (from /proc): hubhost serve \(cpu.summary)")
                    if let floor = pages.floorCPU { print("  Hummingbird alone \(floor.summary)") }
                }
            }
        }
    }
}

/// `hubhost serve` as a child process, for `bench hub` and `bench ingest`: this executable, its
/// output in a file of the scratch folder (a pipe nobody reads would stop a server that logs much).
struct BenchServe {
    let process: Process
    let baseURL: String

    /// On a generated bundle (`bench hub`).
    static func start(folder: String, bundle: String) throws -> BenchServe {
        let manifest = folder + "/plugins.yaml"
        try """
        data_dir: data
        logging: {severity: none}
        server: {host: 127.0.0.1, port: 0}
        hub:
          preloaded_bundle: \(bundle)
        """.write(toFile: manifest, atomically: true, encoding: .utf8)
        return try start(manifest: manifest, folder: folder)
    }

    /// On `manifest`, on any free loopback port; waits (30 s at most) for the address it prints.
    static func start(manifest: String, folder: String) throws -> BenchServe {
        try start(["serve", "--manifest", manifest, "--port", "0"], folder: folder, output: "serve-output.txt")
    }

    /// `bench floor-server` (the HTTP framework alone) on any free loopback port, serving the pages
    /// exported to `pages` when given.
    static func startFloor(pages: String?, folder: String) throws -> BenchServe {
        try start(["bench", "floor-server", "--port", "0"] + (pages.map { ["--pages", $0] } ?? []), folder: folder, output: "floor-output.txt")
    }

    /// This executable with `arguments`, its output in `folder/output`; waits (30 s at most) for
    /// the "serving on URL" line that serve and floor-server print once they listen.
    private static func start(_ arguments: [String], folder: String, output name: String) throws -> BenchServe {
        let outputPath = folder + "/" + name
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // serve prints "hubhost serving on http://127.0.0.1:PORT" once it listens.
        var text = ""
        for _ in 0..<600 where process.isRunning {  // 600 x 50 ms
            text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let range = text.range(of: "serving on "), let end = text[range.upperBound...].firstIndex(of: "\n") {
                return BenchServe(process: process, baseURL: String(text[range.upperBound..<end]))
            }
            usleep(50_000)
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        throw ValidationError("hubhost \(arguments.prefix(2).joined(separator: " ")) did not start: \(text)")
    }

    /// Ends the server (SIGTERM) and waits for it; a second call does nothing more.
    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
