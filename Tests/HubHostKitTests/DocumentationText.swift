import Foundation
import XCTest

/// The repository's documentation as the tests read it: README.md, CHANGELOG.md and every page
/// under docs/. Code samples the tests compile or run are marked in the text with an HTML comment
/// (`<!-- guide: NAME -->`, `<!-- campaign-file -->`) right before their fenced block, so a page
/// can move a sample without the tests following it by hand.
enum DocumentationText {
    /// Repository-relative paths of every Markdown document, README.md first.
    static func documentPaths() throws -> [String] {
        let docs = TestSupport.repository + "/docs"
        var pages: [String] = []
        if let walker = FileManager.default.enumerator(atPath: docs) {
            for case let relative as String in walker where relative.hasSuffix(".md") { pages.append("docs/" + relative) }
        }
        let root = ["README.md", "CHANGELOG.md"].filter { FileManager.default.fileExists(atPath: TestSupport.repository + "/" + $0) }
        return root + pages.sorted()
    }

    static func text(of relativePath: String) throws -> String {
        try String(contentsOfFile: TestSupport.repository + "/" + relativePath, encoding: .utf8)
    }

    /// The fenced block right after `marker`, which must appear exactly once across the documents.
    static func block(after marker: String) throws -> String {
        var found: [(path: String, body: String)] = []
        for path in try documentPaths() {
            let text = try text(of: path)
            var searchFrom = text.startIndex
            while let range = text.range(of: marker, range: searchFrom..<text.endIndex) {
                searchFrom = range.upperBound
                let after = text[range.upperBound...]
                let fenceStart = try XCTUnwrap(after.range(of: "```"), "\(path): no fenced block after \(marker)")
                XCTAssertTrue(after[..<fenceStart.lowerBound].allSatisfy(\.isWhitespace), "\(path): \(marker) is not right before its fenced block")
                let bodyStart = try XCTUnwrap(after[fenceStart.upperBound...].firstIndex(of: "\n"))
                let body = after[after.index(after: bodyStart)...]
                let fenceEnd = try XCTUnwrap(body.range(of: "```"), "\(path): the block after \(marker) is not closed")
                found.append((path, String(body[..<fenceEnd.lowerBound])))
            }
        }
        guard found.count == 1 else {
            throw DocumentationError(
                description:
                    "\(marker) appears \(found.count) times in the documentation (\(found.map(\.path).joined(separator: ", "))); it must appear once")
        }
        return found[0].body
    }

    struct DocumentationError: Error, CustomStringConvertible { let description: String }
}
