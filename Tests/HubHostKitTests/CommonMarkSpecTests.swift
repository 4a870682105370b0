import Foundation
import XCTest

@testable import HubHostKit

/// The GitHub Flavored Markdown spec's examples (Tests/Fixtures/gfm-spec, CC BY-SA 4.0: the spec
/// cmark-gfm 0.29.0.gfm implements, CommonMark 0.29 and GitHub's extensions) through hubhost's
/// renderer, as cmark-gfm's own spec runner takes them: core examples without extensions, each
/// extension example with its extension.
///
/// - Outside the raw-HTML sections every example renders exactly as the spec says, except those
///   with raw HTML or an unsafe URL in them, which render safely (the raw HTML as text);
/// - every example of the raw-HTML sections (HTML blocks, Raw HTML, Disallowed Raw HTML) renders
///   safely: only the renderer's own tags and attributes, never a script URL;
/// - with every extension hubhost enables (what authors get), the core examples that change are
///   exactly the ones the extensions claim (a bare URL becomes a link, `~` strikes through).
final class CommonMarkSpecTests: XCTestCase {
    struct Example {
        var number: Int
        var section: String
        var marker: String?  // table, strikethrough, autolink, tagfilter, or disabled (task lists)
        var markdown: String
        var html: String
    }

    static let rawHTMLSections: Set<String> = ["HTML blocks", "Raw HTML", "Disallowed Raw HTML (extension)"]

    static let examples: [Example] = {
        let path = TestSupport.repository + "/Tests/Fixtures/gfm-spec/spec-examples.txt"
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let fence = String(repeating: "`", count: 32)
        var examples: [Example] = []
        var section = ""
        var marker: String?
        var markdown: [Substring] = []
        var html: [Substring] = []
        var state = 0  // 0 outside, 1 Markdown, 2 HTML
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            switch state {
            case 0 where line.hasPrefix(fence + " example"):
                let rest = line.dropFirst(fence.count + " example".count).trimmingCharacters(in: .whitespaces)
                marker = rest.isEmpty ? nil : rest
                markdown = []
                html = []
                state = 1
            case 0 where line.hasPrefix("#"):
                section = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            case 1 where line == ".":
                state = 2
            case 1:
                markdown.append(line)
            case 2 where line == fence:
                func joined(_ lines: [Substring]) -> String {
                    lines.map { $0 + "\n" }.joined().replacingOccurrences(of: "→", with: "\t")
                }
                examples.append(Example(number: examples.count + 1, section: section, marker: marker, markdown: joined(markdown), html: joined(html)))
                state = 0
            case 2:
                html.append(line)
            default:
                break
            }
        }
        return examples
    }()

    /// The extensions cmark-gfm's spec runner enables for an example.
    private func extensions(_ example: Example) -> [String] {
        switch example.marker {
        case nil: return []
        case "disabled": return ["tasklist"]
        case let name?: return [name]
        }
    }

    /// The spec writes task-list checkboxes with their attributes in another order (and marks those
    /// examples disabled for that reason); the same element either way.
    private func normalizedCheckboxes(_ html: String) -> String {
        html.replacingOccurrences(of: "<input type=\"checkbox\" disabled=\"\" />", with: "<input disabled=\"\" type=\"checkbox\">")
            .replacingOccurrences(
                of: "<input type=\"checkbox\" checked=\"\" disabled=\"\" />", with: "<input checked=\"\" disabled=\"\" type=\"checkbox\">")
    }

    func testTheCopyHoldsEveryExampleOfTheSpec() {
        let examples = Self.examples
        XCTAssertEqual(examples.count, 673)
        XCTAssertEqual(Set(examples.map(\.section)).count, 31)
        XCTAssertEqual(examples.filter { $0.marker != nil }.count, 25, "the extension examples")
        XCTAssertEqual(examples.filter { Self.rawHTMLSections.contains($0.section) }.count, 64)
    }

    func testEveryExampleOutsideTheRawHTMLSectionsRendersAsTheSpecSays() {
        var asTheSpecSays = 0
        var neutralized: [Int] = []
        for example in Self.examples where !Self.rawHTMLSections.contains(example.section) {
            let article = MarkdownRenderer.render(example.markdown, extensions: extensions(example))
            if article.neutralized == 0 {
                XCTAssertEqual(
                    normalizedCheckboxes(article.html), example.html,
                    "example \(example.number) (\(example.section)):\n\(example.markdown)")
                if normalizedCheckboxes(article.html) == example.html { asTheSpecSays += 1 }
            } else {
                // Raw HTML or an unsafe URL in another section: rendered safely, not as the spec says.
                neutralized.append(example.number)
                if let problem = SafeHTML.problem(in: article.html) {
                    XCTFail("example \(example.number) (\(example.section)): \(problem)\n\(article.html)")
                }
            }
        }
        print(
            "spec: \(asTheSpecSays) examples outside the raw-HTML sections render as the spec says; "
                + "\(neutralized.count) more hold raw HTML (shown as text, safely): \(neutralized)")
        // Inline HTML in examples about other things: link destinations, list separators (`<!-- -->`),
        // backslash escapes, entities, code spans, emphasis and hard line breaks next to HTML tags.
        XCTAssertEqual(neutralized, [170, 289, 290, 318, 328, 355, 485, 486, 487, 501, 504, 533, 545, 663, 664])
        XCTAssertEqual(asTheSpecSays + neutralized.count, Self.examples.count - 64)
    }

    func testEveryRawHTMLExampleRendersSafely() {
        var count = 0
        for example in Self.examples where Self.rawHTMLSections.contains(example.section) {
            let article = MarkdownRenderer.renderArticle(example.markdown)
            if let problem = SafeHTML.problem(in: article.html) {
                XCTFail("example \(example.number) (\(example.section)): \(problem)\n\(article.html)")
            }
            count += 1
        }
        XCTAssertEqual(count, 64)
    }

    /// What authors get: every extension on. The core examples that change are the five of the
    /// Autolinks section where a bare URL or email address is in the text: GFM's autolink extension
    /// makes them links (`http://example.com`, `foo@bar.example.com`, and the text inside
    /// `<http://foo.bar/baz bim>`, `<foo\+@bar.example.com>`, `< http://foo.bar >`).
    func testWithEveryExtensionOnlyTheExamplesAnExtensionClaimsChange() {
        var changed: [Int] = []
        for example in Self.examples where example.marker == nil && !Self.rawHTMLSections.contains(example.section) {
            let plain = MarkdownRenderer.render(example.markdown, extensions: [])
            let all = MarkdownRenderer.renderArticle(example.markdown)
            if plain.html != all.html {
                changed.append(example.number)
                if let problem = SafeHTML.problem(in: all.html) { XCTFail("example \(example.number): \(problem)") }
            }
        }
        print("spec: with \(MarkdownRenderer.extensions.joined(separator: ", ")) on, core examples that change: \(changed)")
        XCTAssertEqual(changed, [611, 615, 617, 620, 621])
        XCTAssertTrue(Self.examples.filter { changed.contains($0.number) }.allSatisfy { $0.section == "Autolinks" })
    }
}

/// Checks that HTML holds only the Markdown renderer's own tags and attributes, every attribute
/// quoted, and no script URL.
enum SafeHTML {
    static let tags: Set<String> = [
        "p", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "del", "code", "pre", "a", "img", "ul", "ol", "li",
        "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "input"
    ]
    static let attributes: Set<String> = ["href", "src", "alt", "title", "class", "start", "align", "type", "checked", "disabled"]

    static func problem(in html: String) -> String? {
        var rest = Substring(html)
        while let open = rest.firstIndex(of: "<") {
            let afterOpen = rest[rest.index(after: open)...]
            guard let close = afterOpen.firstIndex(of: ">") else { return "an unclosed '<'" }
            let tag = afterOpen[..<close]
            let name = tag.drop { $0 == "/" }.prefix { $0.isLetter || $0.isNumber }.lowercased()
            guard tags.contains(name) else { return "a <\(tag.prefix(80))> tag" }
            var attributeText = tag.drop { $0 == "/" }.dropFirst(name.count)
            while let equals = attributeText.firstIndex(of: "=") {
                let attribute = attributeText[..<equals].trimmingCharacters(in: .whitespaces)
                guard attributes.contains(attribute) else { return "attribute '\(attribute)'" }
                let value = attributeText[attributeText.index(after: equals)...]
                guard value.first == "\"", let end = value.dropFirst().firstIndex(of: "\"") else { return "an unquoted attribute" }
                let url = value[value.index(after: value.startIndex)..<end].lowercased().filter { !$0.isWhitespace }
                if attribute == "href" || attribute == "src",
                    ["javascript:", "vbscript:", "file:", "data:text"].contains(where: { url.hasPrefix($0) })
                        || (attribute == "href" && url.hasPrefix("data:"))
                {
                    return "\(attribute)=\"\(url.prefix(60))\""
                }
                attributeText = attributeText[attributeText.index(after: end)...]
            }
            rest = afterOpen[afterOpen.index(after: close)...]
        }
        return nil
    }
}
