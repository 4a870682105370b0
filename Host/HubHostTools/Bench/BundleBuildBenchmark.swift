import Foundation
import HubHostKit

/// `hubhost bench bundle`: `bundle build` of a generated content folder of Markdown articles
/// (10,000 by default: 10 hubs of 10 channels), in articles per second. In the same run, over the
/// same article texts: MarkdownRenderer alone (hazard scan, cmark-gfm, hubhost's pass over the
/// tree), and the yardstick, cmark-gfm's own parse and render with the same options and
/// extensions. The best of `rounds` rounds of each is reported.
public struct BundleBuildBenchmark {
    public struct Result: Encodable, Sendable {
        public var articles: Int
        /// The articles' Markdown (front matter included), in bytes.
        public var markdownBytes: Int
        public var rounds: Int
        /// `BundleBuilder.build`: reading the folder, front matter, rendering, writing the SQLite bundle.
        public var buildSeconds: Double
        public var buildArticlesPerSecond: Double
        public var rendererArticlesPerSecond: Double
        public var cmarkArticlesPerSecond: Double
        /// buildArticlesPerSecond / cmarkArticlesPerSecond.
        public var buildToCmark: Double
    }

    public var articles: Int
    public var rounds: Int

    public init(articles: Int = 10_000, rounds: Int = 3) {
        self.articles = articles
        self.rounds = rounds
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let folder = NSTemporaryDirectory() + "hubhost-bench-bundle-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        progress("writing \(articles) Markdown articles")
        let bodies = try writeFolder(folder + "/content")
        let markdownBytes = bodies.reduce(0) { $0 + $1.file.utf8.count }

        var build = Double.infinity
        var renderer = Double.infinity
        var cmark = Double.infinity
        for round in 1...rounds {
            progress("round \(round) of \(rounds): bundle build")
            var start = Clock.monotonicNs()
            let summary = try BundleBuilder.build(from: folder + "/content", to: folder + "/bundle.sqlite3", version: "bench")
            build = min(build, Double(Clock.monotonicNs() - start) / 1e9)
            guard summary.articles == articles else { throw CocoaError(.coderValueNotFound) }

            progress("round \(round) of \(rounds): MarkdownRenderer, then cmark-gfm alone")
            var bytes = 0
            start = Clock.monotonicNs()
            for body in bodies { bytes &+= MarkdownRenderer.renderArticle(body.body).html.utf8.count }
            renderer = min(renderer, Double(Clock.monotonicNs() - start) / 1e9)
            start = Clock.monotonicNs()
            for body in bodies { bytes &+= MarkdownRenderer.cmarkOnlyHTML(body.body).utf8.count }
            cmark = min(cmark, Double(Clock.monotonicNs() - start) / 1e9)
            if bytes == 0 { throw CocoaError(.coderValueNotFound) }
        }
        let n = Double(articles)
        return Result(
            articles: articles, markdownBytes: markdownBytes, rounds: rounds, buildSeconds: build,
            buildArticlesPerSecond: n / build, rendererArticlesPerSecond: n / renderer, cmarkArticlesPerSecond: n / cmark,
            buildToCmark: (n / build) / (n / cmark))
    }

    /// Writes DIR/hub<h>/channel<c>/article<a>.md (10 hubs of 10 channels) and returns each file and its body.
    func writeFolder(_ root: String) throws -> [(file: String, body: String)] {
        var generator = SplitMix(seed: 14)
        var written: [(file: String, body: String)] = []
        written.reserveCapacity(articles)
        try "version: bench\ncontent_source: hubhost bench bundle\n".write(
            toFile: root + "/bundle.yaml", atomically: false, encoding: .utf8, createIfNeeded: true)
        for index in 0..<articles {
            let hub = index % 10
            let channel = (index / 10) % 10
            let folder = "\(root)/hub\(hub)/channel\(channel)"
            if index < 100 { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
            let body = Self.article(index, &generator)
            let file =
                "---\ntitle: Article \(index)\ntags: [tag\(generator.next() % 50), tag\(generator.next() % 50)]\norder: \(index / 100)\n"
                + "source_url: https://example.com/articles/\(index)\n---\n" + body
            try file.write(toFile: "\(folder)/article\(index).md", atomically: false, encoding: .utf8)
            written.append((file, body))
        }
        return written
    }

    /// About 2.5 KB of what authors write: headings, wrapped paragraphs with emphasis, code, inline
    /// and reference links, a list, a task list, a table, a fenced code block, a quote, an image.
    static func article(_ index: Int, _ generator: inout SplitMix) -> String {
        let words = [
            "market", "square", "*fresh*", "bread", "**local**", "farmers", "`code`", "season", "~~old~~", "town", "weather",
            "match", "team", "goal", "recipe", "soup", "tomato", "[the site][site]", "[a link](https://example.com/a?b=1&c=2)", "www.example.org"
        ]
        func sentence(_ count: Int) -> String {
            (0..<count).map { _ in words[Int(generator.next() % UInt64(words.count))] }.joined(separator: " ")
        }
        var out = "# Article \(index): \(sentence(3))\n\n"
        for paragraph in 0..<4 {
            out += (0..<4).map { _ in sentence(12) + "." }.joined(separator: "\n") + "\n\n"
            if paragraph == 1 {
                out += "## Details\n\n- \(sentence(6))\n- \(sentence(5))\n  - \(sentence(4))\n- [x] \(sentence(3))\n- [ ] \(sentence(3))\n\n"
            }
            if paragraph == 2 {
                out +=
                    "| item | count | note |\n| :-- | --: | --- |\n| \(sentence(2)) | \(index) | \(sentence(3)) |\n| \(sentence(2)) | 7 | \(sentence(2)) |\n\n"
            }
        }
        out +=
            "```swift\nlet total = \(index) * 2 // \(sentence(2))\n```\n\n> \(sentence(10))\n\n![photo \(index)](resources/images/photo\(index % 20).png \"Photo\")\n\n"
        out += "[site]: https://example.com/site \"The site\"\n"
        return out
    }
}

extension String {
    fileprivate func write(toFile path: String, atomically: Bool, encoding: String.Encoding, createIfNeeded: Bool) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try write(toFile: path, atomically: atomically, encoding: encoding)
    }
}
