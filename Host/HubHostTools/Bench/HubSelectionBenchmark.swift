import Foundation
import GRDB
import HubHostKit

/// `hubhost bench hub`, first part: hub selection time. A generated bundle of 1,000 hubs and
/// 100,000 articles is opened once; then each selection tailors it for a different user's tag
/// counts (the best hub, and every channel's articles in tailored order), as present does. The
/// baseline, in the same run, makes the same choice with one SQL query over the bundle file
/// (the hub whose tags score best, json_each over the tags), without ordering the articles.
public struct HubSelectionBenchmark {
    public struct Result: Encodable, Sendable {
        public var hubs: Int
        public var articles: Int
        public var selections: Int
        /// Opening the bundle (reading its structure, no bodies).
        public var openMs: Double
        public var selectionMicrosecondsP50: Double
        public var selectionMicrosecondsP99: Double
        public var sqlBaselineMicrosecondsP50: Double
        public var sqlBaselineMicrosecondsP99: Double
        /// How many selections chose the same hub as the SQL baseline (they must all agree).
        public var agreeing: Int
    }

    public var hubs: Int
    public var articles: Int
    public var selections: Int

    public init(hubs: Int = 1_000, articles: Int = 100_000, selections: Int = 200) {
        self.hubs = hubs
        self.articles = articles
        self.selections = selections
    }

    /// Writes the benchmark's bundle to `path` (for serving it) and returns `path`.
    public func writeBundle(to path: String) throws -> String {
        try SyntheticBundle(hubs: hubs, channelsPerHub: 5, articles: articles).write(to: path)
        return path
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let folder = NSTemporaryDirectory() + "hubhost-bench-hub-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let synthetic = SyntheticBundle(hubs: hubs, channelsPerHub: 5, articles: articles)
        progress("writing a bundle of \(hubs) hubs and \(articles) articles")
        try synthetic.write(to: folder + "/bundle.sqlite3")

        var start = Clock.monotonicNs()
        let bundle = try ContentBundle(path: folder + "/bundle.sqlite3")
        let openMs = Double(Clock.monotonicNs() - start) / 1e6

        // Users: 10 tags each with counts 1..5.
        var generator = SplitMix(seed: 99)
        let users: [[String: Int]] = (0..<selections).map { _ in
            Dictionary((0..<10).map { _ in (synthetic.tag(generator.next()), Int(generator.next() % 5) + 1) }, uniquingKeysWith: +)
        }

        progress("tailoring: \(selections) selections")
        var chosen: [String] = []
        var engineTimes: [Double] = []
        for counts in users {
            start = Clock.monotonicNs()
            guard let presentation = Presentation(bundle: bundle, counts: counts) else { throw CocoaError(.coderValueNotFound) }
            engineTimes.append(Double(Clock.monotonicNs() - start) / 1e3)
            chosen.append(presentation.hubID)
        }

        progress("SQL baseline: \(selections) selections")
        let queue = try DatabaseQueue(path: folder + "/bundle.sqlite3")
        var sqlTimes: [Double] = []
        var agreeing = 0
        try queue.read { db in
            let statement = try db.makeStatement(
                sql: """
                    SELECT hubs.id, COALESCE(SUM(counts.value), 0) AS score
                    FROM hubs LEFT JOIN json_each(hubs.tags) AS tag
                    LEFT JOIN json_each(?) AS counts ON counts.key = tag.value
                    GROUP BY hubs.id ORDER BY score DESC, hubs.position LIMIT 1
                    """)
            for (index, counts) in users.enumerated() {
                let json = String(data: try JSONSerialization.data(withJSONObject: counts), encoding: .utf8)!
                start = Clock.monotonicNs()
                let id = try String.fetchOne(statement, arguments: [json])
                sqlTimes.append(Double(Clock.monotonicNs() - start) / 1e3)
                if id == chosen[index] { agreeing += 1 }
            }
        }
        return Result(
            hubs: hubs, articles: articles, selections: selections, openMs: openMs,
            selectionMicrosecondsP50: percentile(engineTimes, 0.50), selectionMicrosecondsP99: percentile(engineTimes, 0.99),
            sqlBaselineMicrosecondsP50: percentile(sqlTimes, 0.50), sqlBaselineMicrosecondsP99: percentile(sqlTimes, 0.99),
            agreeing: agreeing)
    }
}
