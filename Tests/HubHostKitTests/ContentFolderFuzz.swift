import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// (d, the public build path) A content folder (Tests/Fixtures/content) with one of its text files
/// mutated: front matter, `_index.yaml`, `bundle.yaml`, `notifications.yaml`, Markdown and HTML
/// articles, through BundleBuilder.build. It builds or throws, never traps; a bundle it builds
/// opens, and no article page holds a script, an event-handler attribute or a script URL (Markdown
/// goes through the renderer, HTML through the sanitizer).
final class ContentFolderFuzz: FuzzTarget {
    let folder: String
    let files: [(path: String, bytes: [UInt8])]
    var built = 0, refused = 0
    static let dictionary = [
        "---\n", "\n---\n", "title: ", "tags: [", "]", "order: ", "1e300", "-9223372036854775808", "9223372036854775808",
        "source_url: ", "javascript:alert(1)", "at: ", "\"10000-01-01T00:00:00Z\"", "\"-1\"", "action_uri: ", "version: ",
        "content_source: ", "id: ", "- ", ": ", "{", "}", "[", "&a ", "*a", "!!binary ", "~", "null", "\t", "\u{FEFF}",
        "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<a href=\"javascript:alert(1)\">x</a>",
        "<svg onload=alert(1)>", "<iframe src=//evil.example>", "<style>", "<!--", "-->", "<![CDATA[", "<scr<script>ipt>",
        "<a href=\"jav&#x09;ascript:alert(1)\">", "<form action=javascript:x>", "<object data=x>", "<base href=//evil>",
        "<meta http-equiv=refresh content=0;url=javascript:x>", "[x](javascript:alert(1))", "![i](vbscript:x)", "**", "`", "```"
    ]

    override init(name: String, work: String) throws {
        folder = work + "/content"
        let source = TestSupport.repository + "/Tests/Fixtures/content"
        try FileManager.default.copyItem(atPath: source, toPath: folder)
        let enumerator = FileManager.default.enumerator(atPath: folder)
        var files: [(String, [UInt8])] = []
        while let path = enumerator?.nextObject() as? String {
            guard [".md", ".yaml", ".html"].contains(where: path.hasSuffix) else { continue }
            files.append((path, Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + path)))))
        }
        self.files = files.sorted { $0.0 < $1.0 }
        try super.init(name: name, work: work)
        _ = try BundleBuilder.build(from: folder, to: work + "/base.sqlite3")  // the fixture builds
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        let file = random.int(0...(files.count - 1))
        let bytes = Mutator.mutate(files[file].bytes, &random, dictionary: Self.dictionary, others: files.map(\.bytes), most: 5)
        return Data("\(file)\n".utf8) + Data(bytes)
    }

    override func check(_ input: Data, index: Int) -> String? {
        guard let newline = input.firstIndex(of: 0x0A), let file = Int(String(decoding: input[..<newline], as: UTF8.self)) else { return "bad case" }
        let path = folder + "/" + files[file].path
        FuzzTarget.write(input[(newline + 1)...], to: path)
        defer { FuzzTarget.write(Data(files[file].bytes), to: path) }
        let output = work + "/case.sqlite3"
        try? FileManager.default.removeItem(atPath: output)
        do { _ = try BundleBuilder.build(from: folder, to: output) } catch {
            refused += 1
            return nil
        }
        built += 1
        let bundle: ContentBundle
        do { bundle = try ContentBundle(path: output) } catch { return "a bundle BundleBuilder built does not open: \(error)" }
        for hub in bundle.hubs {
            for channel in hub.channels {
                for article in channel.articles {
                    guard let body = bundle.body(ofArticle: article.id) else { return "article \(article.id) has no body" }
                    if let problem = Self.scriptIn(body) { return "article \(article.id) (\(files[file].path) mutated): \(problem)" }
                }
            }
        }
        return nil
    }

    override func finish() {
        print("fuzz content-folder: \(built) built, \(refused) refused with a reason")
        // The check itself finds what it looks for.
        for page in ["<p onclick=\"x\">", "<a href=\"jav&#x09;ascript:x\">", "<SCRIPT>", "<img src='javascript:x'>"] {
            precondition(Self.scriptIn(page) != nil, "scriptIn misses \(page)")
        }
        precondition(Self.scriptIn("<p class=\"lead\">online</p><a href=\"https://x/on=1\">") == nil)
    }

    /// A script element, an event-handler attribute or a script URL in a page's HTML, or nil.
    static func scriptIn(_ html: String) -> String? {
        let lowered = html.lowercased()
        if lowered.contains("<script") { return "a <script> element: \(html.prefix(600))" }
        var rest = Substring(lowered)
        while let open = rest.firstIndex(of: "<") {
            let afterOpen = rest[rest.index(after: open)...]
            let close = afterOpen.firstIndex(of: ">") ?? afterOpen.endIndex
            let tag = afterOpen[..<close]
            // Attribute names: a space, then letters, then '='.
            var scan = tag
            while let space = scan.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "/" }) {
                let attribute = scan[scan.index(after: space)...].prefix { $0.isLetter || $0 == "-" }
                if attribute.hasPrefix("on"), attribute.count > 2 { return "an event handler in <\(tag.prefix(300))>" }
                if ["href", "src", "action", "formaction", "data", "xlink:href"].contains(String(attribute)) {
                    var value = scan[scan.index(after: space)...].dropFirst(attribute.count).drop { $0 == " " }
                    if value.first == "=" {
                        value = value.dropFirst().drop { $0 == " " }
                        let quote = value.first == "\"" || value.first == "'" ? value.first : nil
                        let raw = quote.map { q in value.dropFirst().prefix { $0 != q } } ?? value.prefix { $0 != " " }
                        let scheme = MarkdownFuzz.browserScheme(String(raw))
                        if scheme.hasPrefix("javascript:") || scheme.hasPrefix("vbscript:") || scheme.hasPrefix("data:text") {
                            return "a script URL in <\(tag.prefix(300))>"
                        }
                    }
                }
                scan = scan[scan.index(after: space)...]
            }
            rest = close == afterOpen.endIndex ? "" : afterOpen[afterOpen.index(after: close)...]
        }
        return nil
    }
}
