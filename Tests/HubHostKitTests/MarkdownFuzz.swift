import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// (d) The Markdown renderer with hostile input: long runs of `*`, `_`, `[`, backticks, deep
/// quote and list nesting, mutated articles. It finishes, and its output holds only the tags it
/// documents (so never a raw `<script`), with only its own attributes.
final class MarkdownFuzz: FuzzTarget {
    let seeds: [[UInt8]]
    static let tokens = [
        "*", "**", "***", "_", "__", "`", "``", "```", "~~~", "[", "]", "(", ")", "![", "](", "<", ">", "> ", "- ", "* ",
        "+ ", "1. ", "1) ", "    ", "\t", "\n", "\n\n", "#", "###### ", "---", "***\n", "\\", "  \n", "http://x.example",
        "<https://a.example>", "javascript:alert(1)", "JaVaScRiPt:", "data:text/html,", "vbscript:", "<script>",
        "</script>", "<SCRIPT", "<scr<script>ipt>", "\"", "'", "&", "&lt;", "a", "word ", "é", "\u{0}", "\r", "\u{2028}",
        " \"title\"", "onerror=", "<img src=x onerror=alert(1)>", "<!--", "-->", "<![CDATA["
    ]
    /// The tags a Markdown article may produce: CommonMark's, and GitHub's tables, strikethrough and
    /// task-list checkboxes.
    static let allowedTags: Set<String> = [
        "h1", "h2", "h3", "h4", "h5", "h6", "p", "em", "strong", "code", "pre", "a", "img", "ul", "ol",
        "li", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "del", "input"
    ]
    static let allowedAttributes: Set<String> = ["href", "src", "alt", "title", "class", "start", "align", "type", "checked", "disabled"]

    override init(name: String, work: String) throws {
        seeds = try Self.seeds("markdown", ending: ".md")
        try super.init(name: name, work: work)
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        switch random.int(0...9) {
        case 0, 1, 2:
            return Data(Mutator.mutate(random.pick(seeds), &random, dictionary: Self.tokens, others: seeds, most: 8))
        case 3:
            // A long run of one token (or two alternating), possibly inside text.
            let run = random.chance(90) ? random.pick([100, 1000, 5000]) : 30_000
            let token = random.pick([
                "*", "_", "[", "`", "![", "](", "<", "\\", "[x](", "**a", "*a", "> ", "- ", "    - ", "1. ", "#", "(", "&", "|", "~"
            ])
            let other = random.chance(30) ? random.pick(Self.tokens) : ""
            return Data(("x " + String(repeating: token + other, count: run / max(1, token.count)) + " y").utf8)
        case 4:
            // Deep nesting: quotes, lists by indentation, brackets, emphasis.
            let depth = random.chance(90) ? random.pick([50, 500, 2000]) : 20_000
            let lines = min(depth, 400)
            switch random.int(0...4) {
            case 0: return Data((String(repeating: "> ", count: depth) + "deep").utf8)
            case 1: return Data((0..<lines).map { String(repeating: " ", count: 2 * $0) + "- item \($0)" }.joined(separator: "\n").utf8)
            case 2: return Data((String(repeating: "[", count: depth) + "x" + String(repeating: "](u)", count: depth)).utf8)
            case 3: return Data((String(repeating: "*", count: depth) + "x" + String(repeating: "*", count: depth)).utf8)
            default:
                return Data(
                    (0..<lines).map { String(repeating: "> ", count: $0 % 50) + String(repeating: "  ", count: $0 % 30) + "1. x" }.joined(
                        separator: "\n"
                    ).utf8)
            }
        default:
            return Data((0..<random.int(1...200)).map { _ in random.pick(Self.tokens) }.joined().utf8)
        }
    }

    override func check(_ input: Data, index: Int) -> String? {
        let html = MarkdownRenderer.render(String(decoding: input, as: UTF8.self))
        return Self.unsafeMarkup(in: html)
    }

    /// What in `html` a Markdown article must not produce, or nil: every `<` opens one of the
    /// allowed tags with only allowed attributes, each quoted, and no URL that can run script.
    static func unsafeMarkup(in html: String) -> String? {
        let bytes = Array(html.utf8)
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range.clamped(to: 0..<bytes.count)], as: UTF8.self) }
        var i = 0
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "<") else {
                i += 1
                continue
            }
            guard let close = bytes[i...].firstIndex(of: UInt8(ascii: ">")) else { return "an unclosed '<' in the output: \(text(i..<i + 200))" }
            let tag = text(i + 1..<close)
            defer { i = close + 1 }
            if tag == "!-- raw HTML omitted --" { continue }  // cmark's safe mode leaves this comment where raw HTML was
            let body = tag.hasPrefix("/") ? tag.dropFirst() : Substring(tag)
            let name = body.prefix { $0.isLetter || $0.isNumber }.lowercased()
            guard allowedTags.contains(name) else { return "the output has a <\(tag.prefix(300))> tag" }
            if name == "input", !tag.contains(#"type="checkbox""#) { return "the output has an input that is not a checkbox: <\(tag.prefix(200))>" }
            // Attributes: name="value" pairs (a value holds no raw quote: it is escaped).
            var attributes = body.dropFirst(name.count)
            while let equals = attributes.firstIndex(of: "=") {
                let attribute = attributes[..<equals].trimmingCharacters(in: .whitespaces)
                guard allowedAttributes.contains(attribute) else { return "the output has attribute '\(attribute)' in <\(tag.prefix(200))>" }
                let value = attributes[attributes.index(after: equals)...]
                guard value.first == "\"", let end = value.dropFirst().firstIndex(of: "\"") else {
                    return "an unquoted attribute in <\(tag.prefix(200))>"
                }
                if attribute == "href" || attribute == "src" {
                    let url = browserScheme(String(value[value.index(after: value.startIndex)..<end]))
                    if url.hasPrefix("javascript:") || url.hasPrefix("vbscript:")
                        || (url.hasPrefix("data:") && !(attribute == "src" && url.hasPrefix("data:image/")))
                    {
                        return "the output has a script URL in <\(tag.prefix(300))>"
                    }
                }
                attributes = attributes[attributes.index(after: end)...]
            }
        }
        if html.range(of: "<script", options: .caseInsensitive) != nil { return "the output has a raw <script" }
        return nil
    }

    /// An attribute's URL as a browser reads its scheme: character references decoded, tabs and
    /// line breaks removed, leading controls and spaces dropped, lowercased.
    static func browserScheme(_ attribute: String) -> String {
        var decoded = ""
        var rest = Substring(attribute)
        while let amp = rest.firstIndex(of: "&") {
            decoded += rest[..<amp]
            let after = rest[rest.index(after: amp)...]
            guard let semicolon = after.prefix(12).firstIndex(of: ";") else {
                decoded += "&"
                rest = after
                continue
            }
            let entity = after[..<semicolon]
            let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "Tab": "\t", "NewLine": "\n", "colon": ":"]
            if let text = named[String(entity)] {
                decoded += text
            } else if entity.hasPrefix("#x") || entity.hasPrefix("#X"), let code = UInt32(entity.dropFirst(2), radix: 16),
                let scalar = Unicode.Scalar(code)
            {
                decoded.unicodeScalars.append(scalar)
            } else if entity.hasPrefix("#"), let code = UInt32(entity.dropFirst()), let scalar = Unicode.Scalar(code) {
                decoded.unicodeScalars.append(scalar)
            } else {
                decoded += "&" + entity + ";"
            }
            rest = after[after.index(after: semicolon)...]
        }
        decoded += rest
        let scalars = decoded.unicodeScalars.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" }.drop { $0.value <= 0x20 }
        return String(String.UnicodeScalarView(scalars)).lowercased()
    }
}
