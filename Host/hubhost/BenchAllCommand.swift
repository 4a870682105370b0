import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

extension BenchCommand {
    /// `hubhost bench all`: every benchmark, one after the other, summed up in one Markdown table
    /// (figure, hubhost, yardstick, ratio, goal, met). Each benchmark is an entry of `benchmarks`:
    /// a new one adds its entry there and nothing else.
    struct All: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "all",
            abstract: "Run every benchmark and print one Markdown table: figure, hubhost, yardstick, ratio, goal, met.",
            discussion: """
                Runs abi, isolation, wasm, events, ingest, campaigns, hub (selection and pages), bundle (build), bundle \
                verification, sinks and prefetch (downloads), each as its own command would with the defaults (--quick: smaller counts and shorter \
                loads, for a check that everything runs, not for figures). A benchmark that cannot run (a missing tool) \
                gets a row saying why; the others still run. Run from the repository root with a release build; \
                needs wrk, nginx, openssl, nats-server, aria2, and clang, lld and wasi-libc for the .wasm builds.
                """)

        @Flag(help: "Smaller counts and shorter loads (a minute or two instead of several).")
        var quick = false

        @OptionGroup var output: JSONFlag

        /// One line of the table. `ratio` is hubhost / yardstick as the figure reads it (for a time,
        /// how many times the yardstick's time); `met` is nil when the figure has no goal.
        struct Row: Encodable {
            var figure: String
            var hubhost: String
            var yardstick: String
            var ratio: Double?
            var goal: String
            var met: Bool?
        }

        /// A benchmark of the table: its name (in progress lines and the failure row) and how it
        /// measures (quick or not) into rows.
        struct Benchmark: Sendable {
            var name: String
            var measure: @Sendable (_ quick: Bool, _ say: @escaping (String) -> Void) throws -> [Row]
        }

        /// Every benchmark, in the table's order. A new benchmark adds its entry here.
        static let benchmarks: [Benchmark] = [
            Benchmark(name: "abi", measure: abi),
            Benchmark(name: "isolation", measure: isolation),
            Benchmark(name: "wasm", measure: wasm),
            Benchmark(name: "events", measure: events),
            Benchmark(name: "ingest", measure: ingest),
            Benchmark(name: "campaigns", measure: campaigns),
            Benchmark(name: "hub", measure: hub),
            Benchmark(name: "bundle", measure: bundle),
            Benchmark(name: "bundle verification", measure: bundleVerification),
            Benchmark(name: "sinks", measure: sinks),
            Benchmark(name: "prefetch", measure: prefetch)
        ]

        func run() throws {
            var rows: [Row] = []
            for benchmark in Self.benchmarks {
                let say: (String) -> Void = { step in if !output.json { Output.error("bench all: \(benchmark.name): \(step)") } }
                do {
                    rows += try benchmark.measure(quick, say)
                } catch {
                    rows.append(Row(figure: benchmark.name, hubhost: "did not run: \(error)", yardstick: "-", ratio: nil, goal: "-", met: nil))
                }
            }
            if output.json {
                Output.json(rows)
                return
            }
            print(Self.markdown(rows))
        }

        static func markdown(_ rows: [Row]) -> String {
            var lines = ["| figure | hubhost | yardstick | ratio | goal | met |", "| --- | --- | --- | --- | --- | --- |"]
            for row in rows {
                let cells = [
                    row.figure, row.hubhost, row.yardstick, row.ratio.map { String(format: "%.2fx", $0) } ?? "-", row.goal,
                    row.met.map { $0 ? "yes" : "**no**" } ?? "-"
                ]
                lines.append("| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |")
            }
            return lines.joined(separator: "\n")
        }

        /// `value` with `decimals` decimals and its whole part grouped by thousands (12,345.67).
        static func number(_ value: Double, _ decimals: Int = 0) -> String {
            guard value.isFinite else { return String(value) }
            let text = String(format: "%.\(decimals)f", abs(value))
            let parts = text.split(separator: ".", maxSplits: 1)
            var whole = String(parts[0])
            var grouped = ""
            while whole.count > 3 {
                grouped = "," + whole.suffix(3) + grouped
                whole = String(whole.dropLast(3))
            }
            return (value < 0 ? "-" : "") + whole + grouped + (parts.count > 1 ? "." + parts[1] : "")
        }

        // MARK: The benchmarks

        static func abi(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let result = try ABIBenchmark(iterations: quick ? 1_000_000 : 10_000_000, libraryPath: try BenchCommand.noopLibrary(nil))
                .run(rounds: quick ? 2 : 5, progress: say)
            return [
                Row(
                    figure: "ABI call into a no-op plugin (ns)", hubhost: number(result.abiNsPerCall, 2),
                    yardstick: "direct Swift call: \(number(result.swiftNsPerCall, 2))", ratio: result.ratio, goal: "-", met: nil)
            ]
        }

        static func isolation(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let result = try IsolationBenchmark(iterations: quick ? 10_000 : 100_000, libraryPath: try BenchCommand.noopLibrary(nil))
                .run(rounds: quick ? 1 : 3, progress: say)
            let microseconds = result.isolatedNsPerCall / 1000
            return [
                Row(
                    figure: "augmentation call, isolation: process (µs)", hubhost: number(microseconds, 2),
                    yardstick: "in-process: \(number(result.inProcessNsPerCall / 1000, 2))", ratio: result.ratio,
                    goal: "≤ 3 µs", met: microseconds <= 3)
            ]
        }

        static func wasm(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let result = try Wasm.benchmark(iterations: quick ? 10_000 : 100_000, repository: FileManager.default.currentDirectoryPath)
                .run(rounds: quick ? 1 : 3, progress: say)
            let microseconds = result.augmentWasmNs / 1000
            return [
                Row(
                    figure: "augmentation call into a .wasm plugin, WasmKit (µs)", hubhost: number(microseconds, 2),
                    yardstick: "in-process: \(number(result.augmentInProcessNs / 1000, 2)); isolated: \(number(result.augmentIsolatedNs / 1000, 2))",
                    ratio: result.augmentWasmNs / result.augmentInProcessNs, goal: "≤ 2 µs", met: microseconds <= 2),
                Row(
                    figure: "MATCHES_REGEX on \(number(Double(result.regexInputBytes))) bytes as .wasm, WasmKit (µs)",
                    hubhost: number(result.regexWasmNs / 1000, 1),
                    yardstick: "native .so: \(number(result.regexNativeNs / 1000, 1))"
                        + (result.regexWasmtimeNs.map { "; the module in wasmtime: \(number($0 / 1000, 1))" } ?? ""),
                    ratio: result.regexRatio, goal: "≤ 10x native", met: result.regexRatio <= 10)
            ]
        }

        static func events(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let folder = HostManifest.absolute("Plugins", from: FileManager.default.currentDirectoryPath)
            let result = try EventBenchmark(
                count: quick ? 20_000 : 100_000, batchSize: 5000, singleTrackCount: quick ? 20 : 200,
                pluginsFolder: folder
            ).run(progress: say)
            return [
                Row(
                    figure: "events in-process, batches of 5000 (events/s)", hubhost: number(result.eventsPerSecond),
                    yardstick: "plain SQLite insert: \(number(result.baselineRowsPerSecond))", ratio: result.ratio,
                    goal: "≥ 0.6x", met: result.ratio >= 0.6)
            ]
        }

        static func ingest(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let report = try Ingest.parse(quick ? ["--quick"] : []).measure(say: say)
            let inProcess = report.inProcessEventsPerSecond
            var rows: [Row] = []
            let single = report.runs.filter { $0.eventsPerRequest == 1 }
            for run in single {
                // The yardstick: the HTTP framework alone under the same load (it reads each body
                // and answers it), the most any route of serve could reach; the goal is a share of
                // what a server that answers only once each event is on disk could reach over it
                // (the durable bound: the framework's cycle plus one commit).
                let floor = report.floor.first { $0.connections == run.connections }
                let overFramework = floor.map { run.eventsPerSecond / max($0.eventsPerSecond, 1e-9) }
                let bound = report.durableBound(connections: run.connections)
                let ratio = overFramework.flatMap { share in bound.map { share / max($0, 1e-9) } }
                let clean = run.non2xx + run.socketErrors == 0
                rows.append(
                    Row(
                        figure: "POST /v1/events, 1 event/request, \(run.connections) connection\(run.connections == 1 ? "" : "s") (events/s)",
                        hubhost:
                            "\(number(run.eventsPerSecond)) (\(overFramework.map { number($0, 2) } ?? "-")x the framework), p99 \(number(run.p99Ms, 2)) ms",
                        yardstick: (floor.map { "Hummingbird alone: \(number($0.eventsPerSecond))" } ?? "-")
                            + (bound.map { "; durable bound \(number($0, 2))x" } ?? ""),
                        ratio: ratio, goal: "≥ 0.75x of the durable bound, p99 < 10 ms",
                        met: ratio.map { $0 >= 0.75 && clean && run.p99Ms < 10 }))
                if run.connections == 32, let cpu = run.cpu, let frameworkCPU = floor?.cpu {
                    let cpuRatio = Ingest.Report.cpuRatio(hubhost: cpu, framework: frameworkCPU)
                    rows.append(
                        Row(
                            figure: "CPU per request, 1 event/request, 32 connections (µs)", hubhost: number(cpu.microseconds, 1),
                            yardstick: "Hummingbird alone: \(number(frameworkCPU.microseconds, 1))", ratio: cpuRatio, goal: "≤ 1.8x",
                            met: cpuRatio.map { $0 <= 1.8 }))
                }
            }
            if let first = single.first, let last = single.last, single.count > 1 {
                rows.append(
                    Row(
                        figure: "the same, \(last.connections) vs \(first.connections) connection\(first.connections == 1 ? "" : "s")",
                        hubhost: number(last.eventsPerSecond), yardstick: "\(first.connections): \(number(first.eventsPerSecond))",
                        ratio: last.eventsPerSecond / first.eventsPerSecond, goal: "never falling as clients are added",
                        met: zip(single, single.dropFirst()).allSatisfy { $1.eventsPerSecond >= $0.eventsPerSecond * 0.95 }))
            }
            for run in report.runs where run.eventsPerRequest > 1 {
                let ratio = run.eventsPerSecond / inProcess
                rows.append(
                    Row(
                        figure: "POST /v1/events, \(run.eventsPerRequest) events/request, \(run.connections) connections (events/s)",
                        hubhost: "\(number(run.eventsPerSecond)), p99 \(number(run.p99Ms, 2)) ms",
                        yardstick: "in-process bench events: \(number(inProcess))", ratio: ratio, goal: "≥ 0.7x", met: ratio >= 0.7))
            }
            return rows
        }

        static func campaigns(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let library = try BenchCommand.bundledLibrary("libhubhost-standard-operators.so")
            let result = try CampaignBenchmark(campaigns: 10_000, events: quick ? 20_000 : 100_000, operatorsLibrary: library).run(progress: say)
            let same = result.engineMatches == result.naiveMatches
            return [
                Row(
                    figure: "campaign engine, 10,000 campaigns (events/s)", hubhost: number(result.engineEventsPerSecond),
                    yardstick: "naive scan: \(number(result.naiveEventsPerSecond))", ratio: result.ratio,
                    goal: "≥ 1,000,000/s with caps and buckets on, ≥ 100x, same matches",
                    met: result.engineEventsPerSecond >= 1_000_000 && result.ratio >= 100 && same && result.frequencyCaps && result.buckets)
            ]
        }

        static func hub(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let arguments = quick ? ["--hubs", "100", "--articles", "10000", "--selections", "50", "--seconds", "2"] : []
            let report = try Hub.parse(arguments).measure(say: say)
            let selection = report.selection
            var rows = [
                Row(
                    figure: "hub selection, p50 (µs)", hubhost: number(selection.selectionMicrosecondsP50, 1),
                    yardstick: "SQL query: \(number(selection.sqlBaselineMicrosecondsP50, 1))",
                    ratio: selection.selectionMicrosecondsP50 / selection.sqlBaselineMicrosecondsP50, goal: "-", met: nil)
            ]
            if let pages = report.pages {
                // The goal is against the HTTP framework alone serving the same pages from memory
                // (the most any route of serve could reach); nginx is shown beside both.
                let hubhost = "\(number(pages.hubhost.requestsPerSecond)), p99 \(number(pages.hubhost.p99Ms, 2)) ms"
                if let floor = pages.floor, let toFloor = pages.hubhostToFloor {
                    rows.append(
                        Row(
                            figure: "hub pages, wrk -c\(pages.connections) (requests/s)", hubhost: hubhost,
                            yardstick: "Hummingbird alone, same pages from memory: \(number(floor.requestsPerSecond))", ratio: toFloor,
                            goal: "≥ 0.8x, p99 ≤ 2 ms", met: toFloor >= 0.8 && pages.hubhost.p99Ms <= 2))
                }
                rows.append(
                    Row(
                        figure: "hub pages beside nginx, wrk -c\(pages.connections) (requests/s)", hubhost: hubhost,
                        yardstick: "nginx, same pages static: \(number(pages.nginx.requestsPerSecond))", ratio: pages.ratio,
                        goal: "-", met: nil))
            }
            return rows
        }

        static func bundle(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let result = try BundleBuildBenchmark(articles: quick ? 1_000 : 10_000, rounds: quick ? 1 : 3).run(progress: say)
            return [
                Row(
                    figure: "bundle build of Markdown articles (articles/s)", hubhost: number(result.buildArticlesPerSecond),
                    yardstick: "cmark-gfm alone: \(number(result.cmarkArticlesPerSecond))", ratio: result.buildToCmark, goal: "-", met: nil)
            ]
        }

        static func bundleVerification(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let result = try BundleVerifyBenchmark(megabytes: quick ? 32 : 256, rounds: quick ? 1 : 3).run(progress: say)
            return [
                Row(
                    figure: "bundle verification, \(result.megabytes) MB (MB/s)", hubhost: number(result.verifyMBPerSecond),
                    yardstick: "openssl dgst -sha256: \(number(result.opensslMBPerSecond))", ratio: result.ratio,
                    goal: "≥ 0.8x", met: result.ratio >= 0.8)
            ]
        }

        static func sinks(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let folder = HostManifest.absolute("Plugins", from: FileManager.default.currentDirectoryPath)
            // 200,000 events: each sink's run lasts over a second (the ceiling's a fifth of one).
            let result = try SinkBenchmark(count: quick ? 2_000 : 200_000, pluginsFolder: folder).run(progress: say)
            let ceiling = result.storeCeilingPerSecond
            // A sink can reach neither its raw client nor the store's own part of a durable delivery:
            // the goal is measured against the lower of the two, both measured in the run.
            let goal = "≥ 0.7x min(raw client, store ceiling)"
            var rows = result.rows.map { row in
                let bound = min(row.rawPerSecond, ceiling)
                return Row(
                    figure: "events through \(row.sink), store to SUCCESSFULLY_POSTED (events/s)", hubhost: number(row.eventsPerSecond),
                    yardstick: "raw client: \(number(row.rawPerSecond)); store ceiling: \(number(ceiling))",
                    ratio: row.eventsPerSecond / max(bound, 1e-9), goal: goal, met: row.eventsPerSecond >= 0.7 * bound)
            }
            // The ceiling itself beside the one with a status per delivered event (the store before the delivered cursor).
            rows.append(
                Row(
                    figure: "store ceiling: plain SQLite claim + delivered cursor per batch (events/s)", hubhost: number(ceiling),
                    yardstick: "a status per event (before): \(number(result.storeCeilingStatusPerEventPerSecond))",
                    ratio: ceiling / max(result.storeCeilingStatusPerEventPerSecond, 1e-9), goal: "-", met: nil))
            // The same sinks beside the store ceiling measured in the run (plain SQLite doing only the store's part).
            rows += result.rows.map { row in
                Row(
                    figure: "events through \(row.sink) beside the store ceiling (events/s)", hubhost: number(row.eventsPerSecond),
                    yardstick: "store ceiling (plain SQLite claim+cursor): \(number(ceiling))", ratio: row.ceilingRatio,
                    goal: "-", met: nil)
            }
            for (sink, why) in result.notMeasured.sorted(by: { $0.key < $1.key }) {
                rows.append(Row(figure: "events through \(sink)", hubhost: "not measured: \(why)", yardstick: "-", ratio: nil, goal: goal, met: nil))
            }
            return rows
        }

        static func prefetch(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let files = quick ? 20 : 200
            let result = try PrefetchDownloadBenchmark(files: files, size: 5 << 20, concurrency: 4, rounds: quick ? 1 : 3).run(progress: say)
            return [
                Row(
                    figure: "prefetch downloads, \(files) files of 5 MiB from nginx, 4 at once (MiB/s)",
                    hubhost: "\(number(result.hubhost.mebibytesPerSecond)), \(number(result.hubhost.cpuSecondsPerGiB, 2)) CPU s/GiB",
                    yardstick: "aria2c: \(number(result.aria2c.mebibytesPerSecond)), \(number(result.aria2c.cpuSecondsPerGiB, 2)) CPU s/GiB",
                    ratio: result.ratio, goal: "≥ 0.9x", met: result.ratio >= 0.9)
            ] + (try prefetchCatalog(quick: quick, say: say))
        }

        /// The catalog query and live-set rows: each query's p50 beside the same query in GRDB
        /// alone (goal: within 1.5x), every query's p99, and the listener latency beside the plain
        /// re-reads of the set (reported, no goal).
        static func prefetchCatalog(quick: Bool, say: @escaping (String) -> Void) throws -> [Row] {
            let items = quick ? 10_000 : 100_000
            let result = try PrefetchCatalogBenchmark(items: items, listeners: 100, runs: quick ? 20 : 200, changes: quick ? 4 : 20).run(
                progress: say)
            var rows = result.queries.map { query in
                Row(
                    figure: "prefetch query, \(number(Double(items))) items: \(query.name) (ms p50 / p99)",
                    hubhost: "\(number(query.hubhostP50Ms, 2)) / \(number(query.hubhostP99Ms, 2))",
                    yardstick: "GRDB alone, rows and category links: \(number(query.sqliteP50Ms, 2)) / \(number(query.sqliteP99Ms, 2))",
                    ratio: query.hubhostP50Ms / max(query.sqliteP50Ms, 1e-9), goal: "≤ 1.5x",
                    met: query.hubhostP50Ms / max(query.sqliteP50Ms, 1e-9) <= 1.5)
            }
            rows.append(
                Row(
                    figure: "prefetch state change to 100 live-set listeners, \(result.setSize)-item set (ms p50 / p99)",
                    hubhost: "\(number(result.listenerP50Ms, 1)) / \(number(result.listenerP99Ms, 1))",
                    yardstick: "100 plain re-reads: \(number(result.rereadsMs, 1))",
                    ratio: result.listenerP50Ms / max(result.rereadsMs, 1e-9), goal: "-", met: nil))
            return rows
        }
    }
}
