import Foundation

/// A small, safe Markdown-to-HTML renderer for article bodies, written by hand so that the output
/// is exactly what it knows: ATX headings (`#` to `######`), paragraphs, `*emphasis*`/`_emphasis_`,
/// `**strong**`/`__strong__`, `` `inline code` ``, fenced code blocks (``` or ~~~, with an info
/// string as `class="language-…"`), links `[text](url "title")`, images `![alt](src "title")`,
/// autolinks `<https://…>`, unordered (`-`, `*`, `+`) and ordered (`1.`, `1)`) lists, nested by
/// indentation, blockquotes (`>`), horizontal rules (`---`, `***`, `___`) and hard line breaks (two
/// trailing spaces).
///
/// Safety: every character of the author's text is HTML-escaped; the only tags in the output are the
/// ones listed above, produced here. Raw HTML in Markdown is shown as text (write the article as a
/// `.html` file to use HTML). Link and image URLs with a `javascript:`, `vbscript:` or `data:`
/// scheme become `#` (images may use `data:image/…`). Setext headings, tables and reference links
/// are not supported and come out as text.
public enum MarkdownRenderer {
    public static func render(_ markdown: String) -> String {
        let lines = markdown.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false).map { expandTabs(String($0)) }
        return renderBlocks(lines, tight: false)
    }

    /// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in double-quoted attributes.
    public static func escape(_ text: String) -> String { HTMLEscape.escape(text) }

    // MARK: Blocks

    private static func renderBlocks(_ lines: [String], tight: Bool, depth: Int = 0) -> String {
        var html: [String] = []
        var i = 0
        var paragraph: [String] = []
        func flushParagraph() {
            guard !paragraph.isEmpty else { return }
            let text = paragraph.enumerated().map { index, line -> String in
                let isLast = index == paragraph.count - 1
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if !isLast && line.hasSuffix("  ") { return renderInline(trimmed) + "<br>" }
                return renderInline(trimmed)
            }.joined(separator: "\n")
            html.append(tight ? text : "<p>\(text)</p>")
            paragraph = []
        }
        while i < lines.count {
            let line = lines[i]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            let indent = leadingSpaces(line)
            if trimmed.isEmpty {
                flushParagraph()
                i += 1
                continue
            }
            if indent < 4, let fence = fenceOpening(trimmed) {
                flushParagraph()
                var code: [String] = []
                i += 1
                while i < lines.count {
                    let candidate = lines[i].trimmingCharacters(in: .whitespaces)
                    if candidate.hasPrefix(fence.marker) && candidate.allSatisfy({ $0 == fence.marker.first }) { i += 1; break }
                    code.append(String(lines[i].dropFirst(min(indent, leadingSpaces(lines[i])))))
                    i += 1
                }
                let language = fence.info.split(separator: " ").first.map { " class=\"language-\(escape(String($0)))\"" } ?? ""
                html.append("<pre><code\(language)>\(escape(code.joined(separator: "\n")))\(code.isEmpty ? "" : "\n")</code></pre>")
                continue
            }
            if indent < 4, let heading = heading(trimmed) {
                flushParagraph()
                html.append("<h\(heading.level)>\(renderInline(heading.text))</h\(heading.level)>")
                i += 1
                continue
            }
            if indent < 4, isHorizontalRule(trimmed) {
                flushParagraph()
                html.append("<hr>")
                i += 1
                continue
            }
            if indent < 4, trimmed.hasPrefix(">"), depth < maximumNesting {
                flushParagraph()
                var quoted: [String] = []
                while i < lines.count {
                    let t = lines[i].trimmingCharacters(in: .whitespaces)
                    if t.hasPrefix(">") {
                        var rest = t.dropFirst()
                        if rest.first == " " { rest = rest.dropFirst() }
                        quoted.append(String(rest))
                    } else if !t.isEmpty, !quoted.isEmpty, !(quoted.last ?? "").trimmingCharacters(in: .whitespaces).isEmpty, !startsBlock(lines[i]) {
                        quoted.append(t)  // lazy continuation of the quoted paragraph
                    } else {
                        break
                    }
                    i += 1
                }
                html.append("<blockquote>\n\(renderBlocks(quoted, tight: false, depth: depth + 1))\n</blockquote>")
                continue
            }
            if indent < 4, depth < maximumNesting, let marker = listMarker(line) {
                flushParagraph()
                let (list, next) = renderList(lines, from: i, first: marker, depth: depth)
                html.append(list)
                i = next
                continue
            }
            paragraph.append(line)
            i += 1
        }
        flushParagraph()
        return html.joined(separator: "\n")
    }

    private struct ListMarker {
        var ordered: Bool
        var delimiter: Character  // "-", "*", "+" or "." / ")"
        var number: Int
        var indent: Int           // spaces before the marker
        var contentIndent: Int    // column where the item's text starts
        var text: String
    }

    private static func listMarker(_ line: String) -> ListMarker? {
        let indent = leadingSpaces(line)
        let rest = Array(line.dropFirst(indent))
        guard let first = rest.first else { return nil }
        if "-*+".contains(first) {
            guard rest.count == 1 || rest[1] == " " else { return nil }
            if isHorizontalRule(String(rest)) { return nil }
            let spaces = min(max(rest.dropFirst().prefix(while: { $0 == " " }).count, 1), 4)
            return ListMarker(ordered: false, delimiter: first, number: 0, indent: indent, contentIndent: indent + 1 + spaces,
                              text: String(rest.dropFirst(1 + spaces)))
        }
        let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
        guard !digits.isEmpty, digits.count <= 9, rest.count > digits.count, ".)".contains(rest[digits.count]) else { return nil }
        let after = rest.dropFirst(digits.count + 1)
        guard after.isEmpty || after.first == " " else { return nil }
        let spaces = min(max(after.prefix(while: { $0 == " " }).count, 1), 4)
        return ListMarker(ordered: true, delimiter: rest[digits.count], number: Int(String(digits)) ?? 1, indent: indent,
                          contentIndent: indent + digits.count + 1 + spaces, text: String(after.dropFirst(spaces)))
    }

    /// One list from `start`: items of the same kind, their indented continuation lines (nested
    /// blocks) and lazy paragraph continuations. Returns the HTML and the next unread line.
    private static func renderList(_ lines: [String], from start: Int, first: ListMarker, depth: Int) -> (String, Int) {
        var items: [[String]] = []
        var i = start
        var contentIndent = first.contentIndent
        var previousBlank = false
        while i < lines.count {
            let line = lines[i]
            let blank = line.trimmingCharacters(in: .whitespaces).isEmpty
            if blank {
                // A blank line inside a list: it continues only if more of this list follows.
                var j = i + 1
                while j < lines.count, lines[j].trimmingCharacters(in: .whitespaces).isEmpty { j += 1 }
                guard j < lines.count else { break }
                let continues = leadingSpaces(lines[j]) >= contentIndent || sameList(listMarker(lines[j]), first)
                guard continues else { break }
                items[items.count - 1].append("")
                previousBlank = true
                i += 1
                continue
            }
            if let marker = listMarker(line), marker.indent < contentIndent {
                guard sameList(marker, first) else { break }
                items.append([marker.text])
                contentIndent = marker.contentIndent
                previousBlank = false
                i += 1
                continue
            }
            if leadingSpaces(line) >= contentIndent {
                items[items.count - 1].append(String(line.dropFirst(contentIndent)))
                previousBlank = false
                i += 1
                continue
            }
            if !previousBlank, !startsBlock(line) {
                items[items.count - 1].append(line.trimmingCharacters(in: .whitespaces))  // lazy continuation
                i += 1
                continue
            }
            break
        }
        // Loose (paragraphs in <p>) when a blank line separates items or blocks inside an item.
        var loose = false
        for (index, item) in items.enumerated() {
            var content = item
            var trailingBlank = false
            while content.last?.isEmpty == true { content.removeLast(); trailingBlank = true }
            if content.contains("") || (trailingBlank && index < items.count - 1) { loose = true }
        }
        let tag = first.ordered ? "ol" : "ul"
        let start = first.ordered && first.number != 1 ? " start=\"\(first.number)\"" : ""
        var html = "<\(tag)\(start)>\n"
        for item in items {
            var content = item
            while content.last?.isEmpty == true { content.removeLast() }
            html += "<li>\(renderBlocks(content, tight: !loose, depth: depth + 1))</li>\n"
        }
        html += "</\(tag)>"
        return (html, i)
    }

    private static func sameList(_ marker: ListMarker?, _ first: ListMarker) -> Bool {
        guard let marker else { return false }
        return marker.ordered == first.ordered && marker.delimiter == first.delimiter
    }

    /// Lines that interrupt a paragraph: headings, fences, rules, quotes and list items.
    private static func startsBlock(_ line: String) -> Bool {
        guard leadingSpaces(line) < 4 else { return false }
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        return heading(trimmed) != nil || fenceOpening(trimmed) != nil || isHorizontalRule(trimmed) || trimmed.hasPrefix(">")
            || listMarker(line) != nil
    }

    private static func heading(_ trimmed: String) -> (level: Int, text: String)? {
        let level = trimmed.prefix(while: { $0 == "#" }).count
        guard (1...6).contains(level) else { return nil }
        let rest = trimmed.dropFirst(level)
        guard rest.isEmpty || rest.first == " " else { return nil }
        var text = rest.trimmingCharacters(in: .whitespaces)
        // A closing run of #s preceded by a space is not part of the text.
        let closing = text.reversed().prefix(while: { $0 == "#" }).count
        if closing > 0 {
            let without = String(text.dropLast(closing))
            if without.isEmpty || without.hasSuffix(" ") { text = without.trimmingCharacters(in: .whitespaces) }
        }
        return (level, text)
    }

    private static func fenceOpening(_ trimmed: String) -> (marker: String, info: String)? {
        for c in ["`", "~"] as [Character] {
            let run = trimmed.prefix(while: { $0 == c }).count
            guard run >= 3 else { continue }
            let info = trimmed.dropFirst(run).trimmingCharacters(in: .whitespaces)
            if c == "`" && info.contains("`") { return nil }
            return (String(repeating: c, count: run), info)
        }
        return nil
    }

    private static func isHorizontalRule(_ trimmed: String) -> Bool {
        guard let first = trimmed.first, "-*_".contains(first) else { return false }
        let marks = trimmed.filter { $0 != " " }
        return marks.count >= 3 && marks.allSatisfy { $0 == first }
    }

    private static func leadingSpaces(_ line: String) -> Int { line.prefix(while: { $0 == " " }).count }

    private static func expandTabs(_ line: String) -> String {
        guard line.contains("\t") else { return line }
        var out = ""
        for c in line {
            if c == "\t" { out += String(repeating: " ", count: 4 - out.count % 4) } else { out.append(c) }
        }
        return out
    }

    // MARK: Inline

    private static func renderInline(_ text: String) -> String {
        let chars = Array(text)
        return renderInline(chars, 0, chars.count)
    }

    /// How deep links and emphasis may nest; deeper delimiters stay text, so no input can exhaust the stack.
    static let maximumNesting = 16

    private static func renderInline(_ s: [Character], _ from: Int, _ to: Int, depth: Int = 0) -> String {
        var out = ""
        var i = from
        while i < to {
            let c = s[i]
            // Backslash escapes of ASCII punctuation.
            if c == "\\", i + 1 < to, s[i + 1].isASCII, s[i + 1].isPunctuation || s[i + 1].isSymbol {
                HTMLEscape.append(s[i + 1], to: &out)
                i += 2
                continue
            }
            if c == "`" {
                let run = count(s, i, to, "`")
                if let close = findRun(s, from: i + run, to: to, of: "`", length: run) {
                    var code = String(s[(i + run)..<close]).replacingOccurrences(of: "\n", with: " ")
                    if code.count >= 2, code.hasPrefix(" "), code.hasSuffix(" "), code.contains(where: { $0 != " " }) {
                        code = String(code.dropFirst().dropLast())
                    }
                    out += "<code>\(escape(code))</code>"
                    i = close + run
                } else {
                    out += String(repeating: "`", count: run)
                    i += run
                }
                continue
            }
            if c == "!", i + 1 < to, s[i + 1] == "[", let link = parseLink(s, i + 1, to) {
                let alt = plainText(s, link.textFrom, link.textTo)
                out += "<img src=\"\(escape(safeURL(link.destination, image: true)))\" alt=\"\(escape(alt))\""
                if let title = link.title { out += " title=\"\(escape(title))\"" }
                out += ">"
                i = link.end
                continue
            }
            if c == "[", depth < maximumNesting, let link = parseLink(s, i, to) {
                out += "<a href=\"\(escape(safeURL(link.destination, image: false)))\""
                if let title = link.title { out += " title=\"\(escape(title))\"" }
                out += ">\(renderInline(s, link.textFrom, link.textTo, depth: depth + 1))</a>"
                i = link.end
                continue
            }
            if c == "<", let close = s[(i + 1)..<to].firstIndex(of: ">") {
                let inside = String(s[(i + 1)..<close])
                if !inside.contains(" "), let colon = inside.firstIndex(of: ":"), inside[..<colon].count >= 2,
                   inside[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) }) {
                    out += "<a href=\"\(escape(safeURL(inside, image: false)))\">\(escape(inside))</a>"
                    i = close + 1
                    continue
                }
            }
            if c == "*" || c == "_", depth < maximumNesting, let emphasis = parseEmphasis(s, i, to, depth: depth) {
                out += emphasis.html
                i = emphasis.end
                continue
            }
            HTMLEscape.append(c, to: &out)
            i += 1
        }
        return out
    }

    /// `**strong**`, `*em*`, `***both***` (and with `_`, which must not be inside a word).
    private static func parseEmphasis(_ s: [Character], _ i: Int, _ to: Int, depth: Int) -> (html: String, end: Int)? {
        let c = s[i]
        let run = count(s, i, to, c)
        if c == "_", i > 0, s[i - 1].isLetter || s[i - 1].isNumber { return nil }
        let after = i + run
        guard after < to, !s[after].isWhitespace else { return nil }
        for length in [min(run, 3), 2, 1] where length <= run {
            var search = after
            while let close = findDelimiter(s, from: search, to: to, of: c, length: length) {
                let ok = !s[close - 1].isWhitespace && (c != "_" || close + length >= to || !(s[close + length].isLetter || s[close + length].isNumber))
                if ok, close > after {
                    let inner = renderInline(s, i + length, close, depth: depth + 1)
                    let prefix = String(repeating: c, count: run - length)  // unmatched extra delimiters stay text
                    let html: String
                    switch length {
                    case 3: html = "<em><strong>\(inner)</strong></em>"
                    case 2: html = "<strong>\(inner)</strong>"
                    default: html = "<em>\(inner)</em>"
                    }
                    return (escape(prefix) + html, close + length)
                }
                search = close + 1
            }
        }
        return nil
    }

    /// The first run of `c` at least `length` long at or after `from`, skipping code spans; returns
    /// where the last `length` characters of the run begin.
    private static func findDelimiter(_ s: [Character], from: Int, to: Int, of c: Character, length: Int) -> Int? {
        var i = from
        while i < to {
            if s[i] == "\\" { i += 2; continue }
            if s[i] == "`" {
                let run = count(s, i, to, "`")
                if let close = findRun(s, from: i + run, to: to, of: "`", length: run) { i = close + run; continue }
                i += run
                continue
            }
            if s[i] == c {
                let run = count(s, i, to, c)
                if run == length || (length > 1 && run > length) { return i + run - length }
                i += run
                continue
            }
            i += 1
        }
        return nil
    }

    private struct Link { var textFrom: Int; var textTo: Int; var destination: String; var title: String?; var end: Int }

    /// `[text](destination "title")` starting at the `[` at `i`.
    private static func parseLink(_ s: [Character], _ i: Int, _ to: Int) -> Link? {
        var depth = 0
        var j = i
        var closeBracket: Int?
        while j < to {
            if s[j] == "\\" { j += 2; continue }
            if s[j] == "[" { depth += 1 }
            if s[j] == "]" { depth -= 1; if depth == 0 { closeBracket = j; break } }
            j += 1
        }
        guard let closeBracket, closeBracket + 1 < to, s[closeBracket + 1] == "(" else { return nil }
        var k = closeBracket + 2
        while k < to, s[k] == " " { k += 1 }
        var destination = ""
        if k < to, s[k] == "<" {
            guard let end = s[(k + 1)..<to].firstIndex(of: ">") else { return nil }
            destination = String(s[(k + 1)..<end])
            k = end + 1
        } else {
            var parens = 0
            while k < to, !s[k].isWhitespace {
                if s[k] == "(" { parens += 1 }
                if s[k] == ")" { if parens == 0 { break }; parens -= 1 }
                if s[k] == "\\", k + 1 < to { k += 1 }
                destination.append(s[k])
                k += 1
            }
        }
        while k < to, s[k] == " " { k += 1 }
        var title: String?
        if k < to, "\"'".contains(s[k]) {
            let quote = s[k]
            guard let end = s[(k + 1)..<to].firstIndex(of: quote) else { return nil }
            title = String(s[(k + 1)..<end])
            k = end + 1
            while k < to, s[k] == " " { k += 1 }
        }
        guard k < to, s[k] == ")" else { return nil }
        return Link(textFrom: i + 1, textTo: closeBracket, destination: destination, title: title, end: k + 1)
    }

    /// An image's alt text: the text without Markdown punctuation.
    private static func plainText(_ s: [Character], _ from: Int, _ to: Int) -> String {
        String(s[from..<to].filter { !"*_`".contains($0) })
    }

    /// The URL unless its scheme can run script: `javascript:`, `vbscript:`, `data:` (except
    /// `data:image/…` for images) become `#`. Custom app schemes (`myapp://…`) pass: they are app actions.
    static func safeURL(_ url: String, image: Bool) -> String {
        let normalized = String(url.unicodeScalars.filter { $0.value > 0x20 && $0.value != 0x7F }).lowercased()
        if normalized.hasPrefix("javascript:") || normalized.hasPrefix("vbscript:") { return "#" }
        if normalized.hasPrefix("data:") && !(image && normalized.hasPrefix("data:image/") && !normalized.hasPrefix("data:image/svg")) { return "#" }
        return url
    }

    private static func count(_ s: [Character], _ i: Int, _ to: Int, _ c: Character) -> Int {
        var n = 0
        while i + n < to, s[i + n] == c { n += 1 }
        return n
    }

    /// The start of the next run of exactly `length` characters `c` at or after `from`.
    private static func findRun(_ s: [Character], from: Int, to: Int, of c: Character, length: Int) -> Int? {
        var i = from
        while i < to {
            if s[i] == c {
                let run = count(s, i, to, c)
                if run == length { return i }
                i += run
            } else {
                i += 1
            }
        }
        return nil
    }

}
