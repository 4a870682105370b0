import Foundation
import XCTest

@testable import HubHostKit

/// cmark's pathological inputs, and the ones Debian's cmark-gfm 0.29.0.gfm.6 is quadratic on, through
/// the article renderer the bundle builder uses: the work is linear in the input's length.
///
/// Work is counted, not timed: a child process (this test binary without its debug info) renders
/// every case at two sizes, the second four times the first, under valgrind's callgrind, which
/// writes the instructions each render executed (a dump after each call of `hubhost_markdown_work_mark`).
/// Linear work grows about 4 times; quadratic work about 16 times.
final class MarkdownPathologicalTests: XCTestCase {
    /// Each case makes its input for a repeat count; `sizes` are the two counts (about 6 KB and 24 KB).
    struct Case: Sendable {
        var name: String
        var sizes: (Int, Int)
        var refused: Bool  // MarkdownHazards finds it: not parsed, a build problem
        var make: @Sendable (Int) -> String
    }

    static let cases: [Case] = [
        // cmark's pathological_tests.py
        Case(name: "nested strong emph", sizes: (430, 1720), refused: false) { n in
            String(repeating: "*a **a ", count: n) + "b" + String(repeating: " a** a*", count: n)
        },
        Case(name: "many emph closers with no openers", sizes: (2000, 8000), refused: false) { String(repeating: "a_ ", count: $0) },
        Case(name: "many emph openers with no closers", sizes: (2000, 8000), refused: false) { String(repeating: "_a ", count: $0) },
        Case(name: "many link closers with no openers", sizes: (3000, 12000), refused: false) { String(repeating: "a]", count: $0) },
        Case(name: "many link openers with no closers", sizes: (3000, 12000), refused: false) { String(repeating: "[a", count: $0) },
        Case(name: "mismatched openers and closers", sizes: (1500, 6000), refused: false) { String(repeating: "*a_ ", count: $0) },
        Case(name: "openers and closers multiple of 3", sizes: (2000, 8000), refused: false) { "a**b" + String(repeating: "c* ", count: $0) },
        Case(name: "link openers and emph closers", sizes: (1500, 6000), refused: false) { String(repeating: "[ a_", count: $0) },
        Case(name: "pattern [ (]( repeated", sizes: (1200, 4800), refused: false) { String(repeating: "[ (](", count: $0) },
        Case(name: "nested brackets", sizes: (3000, 12000), refused: false) {
            String(repeating: "[", count: $0) + "a" + String(repeating: "]", count: $0)
        },
        Case(name: "nested block quotes", sizes: (3000, 12000), refused: false) { String(repeating: "> ", count: $0) + "a" },
        Case(name: "deeply nested lists", sizes: (80, 160), refused: false) { n in
            (0..<n).map { String(repeating: "  ", count: $0) + "* a\n" }.joined()
        },
        Case(name: "U+0000 in input", sizes: (800, 3200), refused: false) { String(repeating: "abc\u{0}de\u{0}", count: $0) },
        Case(name: "backticks", sizes: (110, 220), refused: false) { n in (1..<n).map { "e" + String(repeating: "`", count: $0) }.joined() },
        Case(name: "unclosed links A", sizes: (1000, 4000), refused: false) { String(repeating: "[a](<b", count: $0) },
        Case(name: "unclosed links B", sizes: (1200, 4800), refused: false) { String(repeating: "[a](b", count: $0) },
        Case(name: "unclosed <!--", sizes: (1500, 6000), refused: false) { "</" + String(repeating: "<!--", count: $0) },
        Case(name: "runs of *a **a (a quadratic case)", sizes: (850, 3400), refused: false) { String(repeating: "*a **a ", count: $0) },
        // GitHub's extensions: linear in 0.29.0.gfm.6
        Case(name: "email autolinks", sizes: (3000, 12000), refused: false) { String(repeating: "a@", count: $0) },
        Case(name: "single-tilde strikethrough", sizes: (3000, 12000), refused: false) { String(repeating: "~a", count: $0) },
        Case(name: "task lists", sizes: (750, 3000), refused: false) { String(repeating: "- [ ] a\n", count: $0) },
        Case(name: "200-column tables", sizes: (15, 60), refused: false) { n in
            String(repeating: "|a", count: 200) + "\n" + String(repeating: "|-", count: 200) + "\n"
                + String(repeating: String(repeating: "|b", count: 200) + "\n", count: n)
        },
        // Quadratic in 0.29.0.gfm.6, bounded by MarkdownHazards: under its limits they render, linearly ...
        Case(name: "![[]() 300 to a paragraph", sizes: (3, 12), refused: false) {
            String(repeating: String(repeating: "![[]()", count: 300) + "\n\n", count: $0)
        },
        Case(name: "www.a_ 16 to a word", sizes: (60, 240), refused: false) {
            String(repeating: String(repeating: "www.a_", count: 16) + " ", count: $0)
        },
        // ... and above them they are refused (found by the scan, not parsed).
        Case(name: "pattern ![[]() repeated", sizes: (1000, 4000), refused: true) { String(repeating: "![[]()", count: $0) },
        Case(name: "www. after _ in one word", sizes: (1000, 4000), refused: true) { String(repeating: "www.a_", count: $0) },
        Case(name: "table row with many cells", sizes: (6000, 24000), refused: true) { "| a |\n| - |\n" + String(repeating: "|", count: $0) + "\n" },
        Case(name: "table header with many columns", sizes: (3000, 12000), refused: true) {
            String(repeating: "|a", count: $0) + "\n" + String(repeating: "|-", count: $0) + "\n"
        },
        Case(name: "wide header over short rows", sizes: (3000, 12000), refused: true) {
            String(repeating: "|a", count: 100) + "\n" + String(repeating: "|-", count: 100) + "\n" + String(repeating: "x\n", count: $0)
        }
    ]

    func testTheHazardScanFindsExactlyTheCasesItRefuses() {
        for c in Self.cases {
            for n in [c.sizes.0, c.sizes.1] {
                let article = MarkdownRenderer.renderArticle(c.make(n))
                XCTAssertEqual(!article.hazards.isEmpty, c.refused, "\(c.name) at \(n): \(article.hazards)")
                XCTAssertNil(SafeHTML.problem(in: article.html), c.name)
            }
        }
        // The limits, just under and just over; fenced code is not scanned.
        XCTAssertTrue(MarkdownHazards.scan("| a |\n| - |\n" + String(repeating: "|", count: 256)).isEmpty)
        XCTAssertEqual(MarkdownHazards.scan("| a |\n| - |\n" + String(repeating: "|", count: 257)).map(\.line), [3])
        XCTAssertEqual(
            MarkdownHazards.scan("```\n" + String(repeating: "|", count: 5000) + "\n```\n" + String(repeating: "www.a_", count: 18)).map(\.line), [4])
        XCTAssertTrue(
            MarkdownHazards.scan("```\n" + String(repeating: "|", count: 5000) + String(repeating: "![[]()", count: 5000) + "\n```\n").isEmpty)
        XCTAssertTrue(MarkdownHazards.scan("x " + String(repeating: "www.a_", count: 17)).isEmpty, "16 'www.' after '_', the first has none")
        XCTAssertEqual(MarkdownHazards.scan("a\n\nx " + String(repeating: "www.a_", count: 18)).map(\.line), [3])
        XCTAssertTrue(
            MarkdownHazards.scan(String(repeating: "- [link](https://example.com/a_b) and ![i](p.png)\n", count: 5000)).isEmpty,
            "a long tight list of links is fine")
        XCTAssertTrue(
            MarkdownHazards.scan(String(repeating: "| a | b | c |\n", count: 1) + "| - | - | - |\n" + String(repeating: "| 1 |\n", count: 5000))
                .isEmpty,
            "a 3-column table with short rows is fine")
        let refused = MarkdownRenderer.renderArticle("# T\n\n" + String(repeating: "![[]()", count: 2000) + "<script>\u{0}")
        XCTAssertEqual(refused.hazards.map(\.line), [3])
        XCTAssertTrue(refused.html.hasPrefix("<pre># T\n\n![[]()") && refused.html.hasSuffix("&lt;script&gt;\u{FFFD}</pre>\n"), "its text, escaped")
    }

    func testEveryPathologicalInputTakesLinearWork() throws {
        let folder = try TestSupport.temporaryFolder(self)
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind") else {
            return XCTFail("valgrind is not installed (apt-get install valgrind)")
        }
        // valgrind cannot read the test binary's debug info; a copy without it runs.
        let binary = folder + "/tests"
        let stripped = try TestSupport.run("/usr/bin/objcopy", ["--strip-debug", LibraryLocator.runningExecutablePath(), binary])
        XCTAssertEqual(stripped.status, 0, stripped.stderr)
        let run = try TestSupport.run(
            "/usr/bin/valgrind",
            [
                "--tool=callgrind", "--dump-after=hubhost_markdown_work_mark", "--callgrind-out-file=\(folder)/work.%p",
                binary, "HubHostKitTests.MarkdownWorkChild/testRenderEveryCaseWhenAsked"
            ], environment: ["HUBHOST_MARKDOWN_WORK": "1"], timeout: 900)
        XCTAssertEqual(run.status, 0, String(run.stderr.suffix(3000)))
        // The dumps in order: the first ends with the warm-up render; then one per render.
        let dumps = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("work.") && $0.contains(".") }
            .compactMap { name -> (Int, String)? in
                guard let part = name.split(separator: ".").last.flatMap({ Int($0) }), name.split(separator: ".").count == 3 else { return nil }
                return (part, folder + "/" + name)
            }.sorted { $0.0 < $1.0 }
        let work = try dumps.map { try Self.instructions(inDump: $0.1) }
        XCTAssertEqual(work.count, 1 + 2 * Self.cases.count, "dumps: \(dumps.map(\.1))\n\(run.stderr.suffix(2000))")
        guard work.count == 1 + 2 * Self.cases.count else { return }
        var report: [String] = []
        for (index, c) in Self.cases.enumerated() {
            let small = work[1 + 2 * index]
            let large = work[2 + 2 * index]
            let bytes = (c.make(c.sizes.0).utf8.count, c.make(c.sizes.1).utf8.count)
            let ratio = Double(large) / Double(small)
            let perByte = Double(large) / Double(bytes.1)
            report.append(
                String(
                    format: "%-36@ %7d B %10d Ir, %7d B %11d Ir: x%.2f (input x%.2f), %.0f Ir/byte", c.name as NSString,
                    bytes.0, small, bytes.1, large, ratio, Double(bytes.1) / Double(bytes.0), perByte))
            // Linear: the work grows as the input does (with room for a constant part), never 16-fold.
            XCTAssertLessThan(ratio, 1.25 * Double(bytes.1) / Double(bytes.0), "\(c.name): \(small) -> \(large) instructions")
            XCTAssertLessThan(perByte, 60_000, "\(c.name): \(perByte) instructions per byte")
        }
        print("markdown work (callgrind, debug build):\n" + report.joined(separator: "\n"))
    }

    /// The number of instructions in one callgrind dump (its `summary:` or `totals:` line).
    static func instructions(inDump path: String) throws -> Int {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for line in text.split(separator: "\n").reversed() where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
            if let value = line.split(separator: " ").last.flatMap({ Int($0) }) { return value }
        }
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: path])
    }

    func testHostileArticlesAreProblemsWithTheirLinesAndTheOthersBuild() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let channel = folder + "/c/h/ch/"
        try TestSupport.write("---\ntitle: A\n---\nintro\n\n" + String(repeating: "www.a_", count: 20_000) + "\n", to: channel + "www.md")
        try TestSupport.write("| a |\n| - |\n" + String(repeating: "|", count: 50_000), to: channel + "pipes.md")
        try TestSupport.write("---\ntags: [x]\n---\n\n" + String(repeating: "![[]()", count: 20_000), to: channel + "images.md")
        for c in Self.cases where !c.refused {
            try TestSupport.write(c.make(c.sizes.1 * 4), to: channel + c.name.filter { $0.isLetter || $0.isNumber } + ".md")
        }
        XCTAssertThrowsError(try BundleBuilder.build(from: folder + "/c", to: folder + "/b.sqlite3")) { error in
            let problems = (error as? BundleBuilder.BuildError)?.problems ?? []
            XCTAssertEqual(
                problems.map { "\(($0.path as NSString).lastPathComponent):\($0.line ?? 0)" }.sorted(), ["images.md:5", "pipes.md:3", "www.md:6"],
                "\(problems)")
            XCTAssertTrue(problems.allSatisfy { $0.message.contains("cmark-gfm 0.29.0.gfm.6") }, "\(problems)")
        }
        for name in ["www.md", "pipes.md", "images.md"] { try FileManager.default.removeItem(atPath: channel + name) }
        let summary = try BundleBuilder.build(from: folder + "/c", to: folder + "/b.sqlite3")
        XCTAssertEqual(summary.articles, Self.cases.filter { !$0.refused }.count)
    }
}

/// The child side of testEveryPathologicalInputTakesLinearWork: renders every case at both sizes,
/// marking the end of each render, when HUBHOST_MARKDOWN_WORK is set; does nothing otherwise.
final class MarkdownWorkChild: XCTestCase {
    func testRenderEveryCaseWhenAsked() {
        guard ProcessInfo.processInfo.environment["HUBHOST_MARKDOWN_WORK"] != nil else { return }
        let inputs = MarkdownPathologicalTests.cases.flatMap { [$0.make($0.sizes.0), $0.make($0.sizes.1)] }
        var total = MarkdownRenderer.renderArticle("# warm *up* [x](y)\n\n| a |\n| - |\n| b |\n").html.utf8.count
        markdownWorkMark(total)
        for input in inputs {
            total &+= MarkdownRenderer.renderArticle(input).html.utf8.count
            markdownWorkMark(total)
        }
        XCTAssertGreaterThan(total, 0)
    }
}

/// Called after each render: callgrind dumps the instructions counted since the last call.
@_silgen_name("hubhost_markdown_work_mark") @inline(never)
func markdownWorkMark(_ value: Int) {
    if value == -1 { print("") }
}
