import Foundation
import GRDB
import HubHostKit
import Synchronization

/// `hubhost bench prefetch`'s catalog figures: a catalog of `items` items (100
/// categories, 20 sources, a mix of states and flags) built offline through the engine
/// (applyCatalogPage), then
/// - filter-and-sort queries through the engine (`PrefetchEngine.items(filter)`: SQL, items decoded
///   with their files and categories) p50/p99, each beside the same answer through GRDB alone
///   (the same SQL's rows and their category links fetched, nothing decoded: the yardstick, in
///   the same run on the same file);
/// - the latency from a state change (download: discovered -> queued, then pause: queued ->
///   paused, alternately) to `listeners` live sets (`engine.watch`, one category sorted by title)
///   each seeing the item in `updated` of a didChange, p50/p99 over every listener and change,
///   beside the time 100 plain GRDB re-reads of that set take one after another (what any live set
///   that re-reads on a change costs at least).
/// The engine runs no downloads: its device_conditions instance is not loaded, so queued items
/// wait (`device_conditions_unavailable`).
public struct PrefetchCatalogBenchmark {
    public struct Query: Codable, Sendable {
        public var name: String
        public var rows: Int
        public var hubhostP50Ms: Double
        public var hubhostP99Ms: Double
        public var sqliteP50Ms: Double
        public var sqliteP99Ms: Double
    }

    public struct Result: Codable, Sendable {
        public var items: Int
        public var seedSeconds: Double
        public var queries: [Query]
        public var listeners: Int
        public var changes: Int
        public var setSize: Int
        public var listenerP50Ms: Double
        public var listenerP99Ms: Double
        /// The yardstick: `listeners` plain GRDB re-reads of the listened set, one after another (ms).
        public var rereadsMs: Double
    }

    public let items: Int
    public let listeners: Int
    public let runs: Int
    public let changes: Int

    public init(items: Int, listeners: Int, runs: Int, changes: Int) {
        self.items = items
        self.listeners = listeners
        self.runs = runs
        self.changes = changes
    }

    static let categories = 100
    static let sources = 20
    static let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
        "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey"
    ]

    /// A benchmark query: the engine's filter and the same SQL by hand.
    struct Case {
        var name: String
        var filter: PrefetchItemFilter
        var sql: String
        var arguments: StatementArguments
    }

    func cases() -> [Case] {
        // Items i, i % 20 == 0 are source s0's.
        let contentIds = (0..<20).map { "k\($0 * 20)" }
        return [
            Case(
                name: "one category by title (category c7, sort title)",
                filter: PrefetchItemFilter(category: "c7", sort: [.init(field: .title)]),
                sql:
                    "SELECT * FROM item WHERE state <> 'deleted' AND unique_id IN (SELECT item_id FROM item_category WHERE category_id = ?) ORDER BY title COLLATE NOCASE ASC, discovered_ms, unique_id",
                arguments: ["c7"]),
            Case(
                name: "downloaded not viewed, newest first, 50 (state cached, not viewed, sort discovered:desc, limit 50)",
                filter: PrefetchItemFilter(states: [.cached], notViewed: true, sort: [.init(field: .discovered, descending: true)], limit: 50),
                sql: "SELECT * FROM item WHERE state IN ('cached') AND viewed = 0 ORDER BY discovered_ms DESC, discovered_ms, unique_id LIMIT 50",
                arguments: []),
            Case(
                name: "queued or downloading by size, 100 (states queued+downloading, sort size:desc, limit 100)",
                filter: PrefetchItemFilter(states: [.queued, .downloading], sort: [.init(field: .size, descending: true)], limit: 100),
                sql: "SELECT * FROM item WHERE state IN ('queued', 'downloading') ORDER BY size DESC, discovered_ms, unique_id LIMIT 100",
                arguments: []),
            Case(
                name: "20 contentIds of one source (content_id x20, source s0)",
                filter: PrefetchItemFilter(contentIds: contentIds, source: "s0"),
                sql:
                    "SELECT * FROM item WHERE state <> 'deleted' AND content_id IN (\(contentIds.map { _ in "?" }.joined(separator: ", "))) AND source_name = ? ORDER BY discovered_ms, unique_id",
                arguments: StatementArguments(contentIds + ["s0"])),
            Case(
                name: "saved items by title, first 100 (saved, sort title, limit 100)",
                filter: PrefetchItemFilter(saved: true, sort: [.init(field: .title)], limit: 100),
                sql:
                    "SELECT * FROM item WHERE state <> 'deleted' AND saved = ? ORDER BY title COLLATE NOCASE ASC, discovered_ms, unique_id LIMIT 100",
                arguments: [true])
        ]
    }

    /// The yardstick's answer to `query` in GRDB alone: what the engine's answer holds, as raw
    /// rows, nothing decoded: the rows the SQL selects, then their category links (an item's
    /// categories are part of every answer), fetched by id in chunks of 500 as the engine does.
    /// Returns the row count.
    static func plainAnswer(_ db: Database, _ query: Case) throws -> Int {
        let rows = try Row.fetchAll(db, sql: query.sql, arguments: query.arguments)
        let ids: [String] = rows.map { $0["unique_id"] }
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = Array(ids[start..<min(ids.count, start + 500)])
            _ = try Row.fetchAll(
                db, sql: "SELECT item_id, category_id FROM item_category WHERE item_id IN (\(chunk.map { _ in "?" }.joined(separator: ", ")))",
                arguments: StatementArguments(chunk)
            )
        }
        return rows.count
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let folder = NSTemporaryDirectory() + "hubhost-bench-prefetch-catalog-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try """
        data_dir: data
        logging: {severity: warning}
        prefetch: {enabled: true, item_download_behavior: none, enable_auto_purge: false, device_conditions: not-loaded}
        plugins: []
        """.write(toFile: folder + "/plugins.yaml", atomically: true, encoding: .utf8)
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        guard let engine = try host.prefetch() else { throw PageServingBenchmark.Failure.failed("prefetch did not open") }
        let database = folder + "/data/prefetch/prefetch.sqlite"

        progress("seeding a catalog of \(items) items")
        let seedStart = Clock.monotonicNs()
        try seed(engine, database: database)
        let seedSeconds = Double(Clock.monotonicNs() - seedStart) / 1e9
        var configuration = Configuration()
        configuration.readonly = true
        let plain = try DatabaseQueue(path: database, configuration: configuration)

        var queries: [Query] = []
        for query in cases() {
            progress("query: \(query.name), \(runs) runs each")
            var ours: [Double] = []
            var theirs: [Double] = []
            var rows = 0
            for _ in 0..<runs {
                var start = Clock.monotonicNs()
                rows = try engine.items(query.filter).count
                ours.append(Double(Clock.monotonicNs() - start) / 1e6)
                start = Clock.monotonicNs()
                let plainRows = try plain.read { db in try Self.plainAnswer(db, query) }
                theirs.append(Double(Clock.monotonicNs() - start) / 1e6)
                guard plainRows == rows else {
                    throw PageServingBenchmark.Failure.failed("\(query.name): the engine found \(rows) items, SQLite \(plainRows)")
                }
            }
            queries.append(
                Query(
                    name: query.name, rows: rows, hubhostP50Ms: percentile(ours, 0.5), hubhostP99Ms: percentile(ours, 0.99),
                    sqliteP50Ms: percentile(theirs, 0.5), sqliteP99Ms: percentile(theirs, 0.99)))
        }

        progress("live sets: \(listeners) listeners, \(changes) state changes")
        let listened = cases()[0]
        let setSize = try engine.items(listened.filter).count
        let latencies = try measureListeners(engine, filter: listened.filter)
        let rereadStart = Clock.monotonicNs()
        for _ in 0..<listeners { _ = try plain.read { db in try Row.fetchAll(db, sql: listened.sql, arguments: listened.arguments) } }
        let rereadsMs = Double(Clock.monotonicNs() - rereadStart) / 1e6
        return Result(
            items: items, seedSeconds: seedSeconds, queries: queries, listeners: listeners, changes: changes, setSize: setSize,
            listenerP50Ms: percentile(latencies, 0.5), listenerP99Ms: percentile(latencies, 0.99), rereadsMs: rereadsMs)
    }

    /// The catalog, in pages of 5,000 items through the engine, then a mix of states and flags
    /// written straight to the file (what downloads, consumption and saving would have left).
    private func seed(_ engine: PrefetchEngine, database: String) throws {
        var generator = SplitMix(seed: 7)
        let sources = (0..<Self.sources).map { #"{"name": "s\#($0)", "display_name": "Source \#($0)"}"# }.joined(separator: ",")
        let categories = (0..<Self.categories).map { #"{"id": "c\#($0)", "name": "Category \#($0)"}"# }.joined(separator: ",")
        var index = 0
        while index < items {
            let end = min(items, index + 5_000)
            var entries: [String] = []
            entries.reserveCapacity(end - index)
            for item in index..<end {
                let title = (0..<3).map { _ in Self.words[Int(generator.next() % UInt64(Self.words.count))] }.joined(separator: " ")
                let size = 1_000_000 + Int(generator.next() % 100_000_000)
                entries.append(
                    """
                    {"unique_id": "i\(item)", "content_id": "k\(item)", "source": "s\(item % Self.sources)", "categories": ["c\(item % Self.categories)"], \
                    "title": "\(title) \(item)", "summary": "", "type": "video", "expiry": null, \
                    "files": [{"role": "main", "url": "http://127.0.0.1:9/i\(item).mp4", "size": \(size)}, \
                    {"role": "thumbnail", "url": "http://127.0.0.1:9/i\(item).jpg"}]}
                    """)
            }
            let page = #"{"sources": [\#(sources)], "categories": [\#(categories)], "items": [\#(entries.joined(separator: ","))]}"#
            try engine.applyCatalogPage(Data(page.utf8))
            index = end
        }
        let queue = try DatabaseQueue(path: database)
        try queue.write { db in
            try db.execute(
                sql: """
                    UPDATE item SET
                        state = CASE rowid % 10 WHEN 0 THEN 'cached' WHEN 1 THEN 'cached' WHEN 2 THEN 'queued' WHEN 3 THEN 'idle'
                                                 WHEN 4 THEN 'failed' WHEN 5 THEN 'paused' WHEN 6 THEN 'partially_cached' ELSE 'discovered' END,
                        viewed = (rowid % 3 = 0), saved = (rowid % 50 = 0), discovered_ms = discovered_ms + rowid
                    WHERE unique_id NOT LIKE 'i%7'
                    """)
        }
        try queue.close()
    }

    /// Collects, per change, when each listener saw it.
    private struct Arrivals {
        var target: String?
        var startNs: UInt64 = 0
        var seen: Set<Int> = []
        var latencies: [Double] = []
        var ready = 0
    }
    private final class SharedArrivals: Sendable {
        let state = Mutex(Arrivals())
    }

    private func measureListeners(_ engine: PrefetchEngine, filter: PrefetchItemFilter) throws -> [Double] {
        // Items of the listened category still discovered: each change moves one of them.
        let candidates = try engine.items(PrefetchItemFilter(states: [.discovered], category: filter.category)).map(\.uniqueId)
        guard !candidates.isEmpty else { throw PageServingBenchmark.Failure.failed("no discovered item in category \(filter.category ?? "")") }
        let arrivals = SharedArrivals()
        var tasks: [Task<Void, Never>] = []
        for listener in 0..<listeners {
            // A long poll interval: only the change's notification wakes the sets.
            let stream = engine.watch(filter, pollInterval: 3600)
            tasks.append(
                Task {
                    for await change in stream {
                        let now = Clock.monotonicNs()
                        arrivals.state.withLock { arrivals in
                            if change.phase == .initial {
                                arrivals.ready += 1
                                return
                            }
                            guard change.phase == .didChange, let target = arrivals.target, change.updated.contains(target),
                                !arrivals.seen.contains(listener)
                            else { return }
                            arrivals.seen.insert(listener)
                            arrivals.latencies.append(Double(now - arrivals.startNs) / 1e6)
                        }
                    }
                })
        }
        defer { tasks.forEach { $0.cancel() } }
        try wait(60, "\(listeners) live sets to start") { arrivals.state.withLock { $0.ready } >= listeners }
        for change in 0..<changes {
            let id = candidates[(change / 2) % candidates.count]
            arrivals.state.withLock { arrivals in
                arrivals.target = id
                arrivals.seen = []
                arrivals.startNs = Clock.monotonicNs()
            }
            let answers = change % 2 == 0 ? try engine.download([id]) : try engine.pause([id])
            guard answers.first?.accepted == true else { throw PageServingBenchmark.Failure.failed("state change of \(id) refused: \(answers)") }
            try wait(120, "change \(change + 1) to reach \(listeners) listeners") { arrivals.state.withLock { $0.seen.count } >= listeners }
        }
        return arrivals.state.withLock { $0.latencies }
    }

    private func wait(_ seconds: Double, _ what: String, _ done: () -> Bool) throws {
        let deadline = Clock.monotonicNs() &+ UInt64(seconds * 1e9)
        while !done() {
            guard Clock.monotonicNs() < deadline else { throw PageServingBenchmark.Failure.failed("timed out waiting for \(what)") }
            usleep(500)
        }
    }
}
