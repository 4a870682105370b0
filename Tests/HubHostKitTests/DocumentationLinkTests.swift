import Foundation
import XCTest

/// Every relative link and `#anchor` in README.md, CHANGELOG.md and docs/ resolves: the file or
/// folder exists inside the repository, and the anchor names a heading (or an `id`/`name`
/// attribute) of the page it points into, as GitHub renders it.
final class DocumentationLinkTests: XCTestCase {
    func testEveryRelativeLinkAndAnchorResolves() throws {
        let paths = try DocumentationText.documentPaths()
        XCTAssertTrue(paths.contains("README.md"))
        var anchorsByPage: [String: Set<String>] = [:]
        func anchors(of page: String) throws -> Set<String> {
            if let known = anchorsByPage[page] { return known }
            let found = DocumentationLinks.anchors(in: try DocumentationText.text(of: page))
            anchorsByPage[page] = found
            return found
        }
        var problems: [String] = []
        var checked = 0
        for page in paths {
            let folder = (page as NSString).deletingLastPathComponent
            for link in DocumentationLinks.links(in: try DocumentationText.text(of: page)) {
                if link.target.contains("://") || link.target.hasPrefix("mailto:") { continue }
                checked += 1
                let parts = link.target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let pathPart = parts[0].removingPercentEncoding ?? parts[0]
                let target = pathPart.isEmpty ? page : DocumentationLinks.normalized((folder as NSString).appendingPathComponent(pathPart))
                guard let target else {
                    problems.append("\(page):\(link.line): \(link.target) leaves the repository")
                    continue
                }
                var isFolder: ObjCBool = false
                guard FileManager.default.fileExists(atPath: TestSupport.repository + "/" + target, isDirectory: &isFolder) else {
                    problems.append("\(page):\(link.line): \(link.target): \(target) does not exist")
                    continue
                }
                if parts.count == 2, !parts[1].isEmpty {
                    guard target.hasSuffix(".md"), !isFolder.boolValue else {
                        problems.append("\(page):\(link.line): \(link.target): an anchor into \(target), which is not a Markdown page")
                        continue
                    }
                    if !(try anchors(of: target)).contains(parts[1]) {
                        problems.append("\(page):\(link.line): \(link.target): \(target) has no heading #\(parts[1])")
                    }
                }
            }
        }
        XCTAssertGreaterThan(checked, 20, "the documentation links between its pages")
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
    }

    /// The checker itself: GitHub's heading anchors, links outside code, and paths that leave the tree.
    func testTheCheckerReadsAnchorsAndLinksAsGitHubDoes() {
        let page = """
            # Event sinks
            ## `plugins test` and PluginTestKit
            ### The web Content Hub (ZBiM)
            ## Event sinks
            <a id="custom"></a>
            See [sinks](#event-sinks), [again](events.md#event-sinks-1) and ![img](a.png "title").
            `[not a link](nowhere.md)`
            ```
            [also not](nowhere.md)
            # not a heading
            ```
            [ref]: other.md#x
            """
        XCTAssertEqual(
            DocumentationLinks.anchors(in: page),
            ["event-sinks", "plugins-test-and-plugintestkit", "the-web-content-hub-zbim", "event-sinks-1", "custom"])
        XCTAssertEqual(DocumentationLinks.links(in: page).map(\.target), ["#event-sinks", "events.md#event-sinks-1", "a.png", "other.md#x"])
        XCTAssertNil(DocumentationLinks.normalized("docs/../../shared/design.md"))
        XCTAssertEqual(DocumentationLinks.normalized("docs/../Protocols/include"), "Protocols/include")
    }

    /// scripts/check-public-api on this build's HubHostKit module: every public symbol has a doc
    /// comment, every public top-level type is in a Topics section of HubHostKit.docc, and
    /// `docc convert` of the catalogue gives no warning. Builds nothing.
    func testThePublicAPIIsDocumentedAndCurated() throws {
        let script = TestSupport.repository + "/scripts/check-public-api"
        let check = try TestSupport.run(script, [TestSupport.buildFolder], timeout: 600)
        XCTAssertEqual(check.status, 0, "\(script) \(TestSupport.buildFolder):\n\(check.stdout)\(check.stderr)")
    }
}

/// Reads links and heading anchors out of Markdown text (outside code spans and fenced blocks).
enum DocumentationLinks {
    struct Link: Equatable {
        var target: String
        var line: Int
    }

    /// The lines of `text` outside fenced code blocks, with their 1-based line numbers.
    static func proseLines(_ text: String) -> [(number: Int, text: String)] {
        var result: [(Int, String)] = []
        var fence: String?
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let open = fence {
                if trimmed.hasPrefix(open) { fence = nil }
                continue
            }
            if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                fence = String(trimmed.prefix(3))
                continue
            }
            result.append((index + 1, line))
        }
        return result
    }

    /// `line` with its code spans removed.
    static func withoutCodeSpans(_ line: String) -> String {
        line.replacingOccurrences(of: "`[^`]*`", with: "", options: .regularExpression)
    }

    static func links(in text: String) -> [Link] {
        let inline = try! NSRegularExpression(pattern: #"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#)
        let reference = try! NSRegularExpression(pattern: #"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$"#)
        let html = try! NSRegularExpression(pattern: #"(?:href|src)="([^"]+)""#)
        var links: [Link] = []
        for (number, raw) in proseLines(text) {
            let line = withoutCodeSpans(raw)
            let range = NSRange(line.startIndex..., in: line)
            for expression in [inline, reference, html] {
                for match in expression.matches(in: line, range: range) {
                    if let target = Range(match.range(at: 1), in: line) { links.append(Link(target: String(line[target]), line: number)) }
                }
            }
        }
        return links
    }

    /// The anchors GitHub gives the headings of `text` (a repeated heading gets -1, -2, ...),
    /// plus explicit `id="..."` and `name="..."` attributes.
    static func anchors(in text: String) -> Set<String> {
        var anchors: [String] = []
        var counts: [String: Int] = [:]
        let explicit = try! NSRegularExpression(pattern: #"<a\s+(?:id|name)="([^"]+)""#)
        for (_, line) in proseLines(text) {
            let range = NSRange(line.startIndex..., in: line)
            for match in explicit.matches(in: line, range: range) {
                if let id = Range(match.range(at: 1), in: line) { anchors.append(String(line[id])) }
            }
            guard let heading = line.range(of: #"^#{1,6}\s+"#, options: .regularExpression) else { continue }
            var title = String(line[heading.upperBound...]).trimmingCharacters(in: .whitespaces)
            title = title.replacingOccurrences(of: #"\s+#+$"#, with: "", options: .regularExpression)
            title = title.replacingOccurrences(of: #"!?\[([^\]]*)\]\([^)]*\)"#, with: "$1", options: .regularExpression)
            let slug = String(
                title.lowercased().unicodeScalars.compactMap { scalar -> Character? in
                    if scalar == " " { return "-" }
                    if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) { return Character(scalar) }
                    return nil
                })
            let seen = counts[slug, default: 0]
            counts[slug] = seen + 1
            anchors.append(seen == 0 ? slug : "\(slug)-\(seen)")
        }
        return Set(anchors)
    }

    /// A repository-relative path with `.` and `..` resolved; nil when it leaves the repository.
    static func normalized(_ path: String) -> String? {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == ".." {
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            } else {
                parts.append(part)
            }
        }
        return parts.joined(separator: "/")
    }
}
