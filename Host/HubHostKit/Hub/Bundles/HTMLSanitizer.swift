import CCmarkGFM
import Foundation

/// HTML articles (`.html`, `.htm`) are sanitised when the bundle is built, with the same rule as
/// Markdown: what the author writes never runs as script. The body is read into tags and text and
/// written out again; only what the lists below allow is written, so the browser parses exactly
/// that (nothing is passed through as the author spelled it):
///
/// - **elements**: text structure (`p`, `div`, `span`, `h1`-`h6`, `br`, `hr`, `blockquote`, `pre`,
///   `code`, `em`, `strong`, `b`, `i`, `u`, `s`, `del`, `ins`, `mark`, `small`, `sub`, `sup`, ...),
///   sections (`section`, `article`, `header`, `footer`, `aside`, `nav`, `figure`, `figcaption`,
///   `details`, `summary`), lists, tables, links (`a`), images (`img`), `video`/`audio` with
///   `source`/`track`, stylesheets (`<link rel="stylesheet">`, `<style>`) and checkboxes as task
///   lists render them (`<input type="checkbox" disabled>`);
/// - **attributes**: `class`, `id`, `title`, `lang`, `dir` and `style` on all of them, and each
///   element's own (`href`; `src`, `alt`, `width`, `height`; `colspan`, `rowspan`; ...). Event
///   handlers (`on...`), `name`, `target`, `srcset`, `form` attributes and anything unlisted are dropped;
/// - **URLs** (`href`, `src`, `poster`, `cite`) follow ArticleURL: a `javascript:`, `vbscript:`,
///   `file:` or `data:` URL is dropped with its attribute (images may use `data:image/png|gif|jpeg|webp`);
/// - **removed with their content**: `script`, `iframe`, `object`, `embed`'s relatives (`applet`,
///   `noembed`, `noframes`, `frameset`), `noscript`, `template`, `textarea`, `select`, `title`, `xmp`,
///   `plaintext`, `svg` and `math`; comments, doctypes and processing instructions;
/// - **removed, content kept**: every other element (`html`, `head`, `body`, `form`, `button`,
///   `font`, `center`, ...); `base` and `meta` (which would change the page's URLs or refresh it)
///   are among them.
///
/// Text and attribute values have their character references decoded (cmark's HTML5 table) and are
/// escaped again; open elements are closed at the end and stray end tags dropped, so a body cannot
/// leave its container. CSS is not script: styles stay, and the page's Content-Security-Policy
/// governs what they load. One pass over the bytes, nesting bounded: linear in the input.
package enum HTMLSanitizer {
    package static func sanitize(_ html: String) -> String {
        var sanitizer = Sanitizer(Array(html.utf8))
        sanitizer.run()
        return String(decoding: sanitizer.out, as: UTF8.self)
    }

    static let globalAttributes: Set<String> = ["class", "id", "title", "lang", "dir", "style"]

    /// Allowed elements and their own attributes (besides the global ones).
    static let elements: [String: Set<String>] = {
        var table: [String: Set<String>] = [:]
        for name in [
            "p", "div", "span", "br", "hr", "wbr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "kbd", "samp", "var",
            "em", "strong", "b", "i", "u", "s", "mark", "small", "sub", "sup", "abbr", "cite", "dfn", "bdi", "bdo", "ruby", "rt", "rp",
            "section", "article", "header", "footer", "aside", "nav", "main", "address", "figure", "figcaption", "summary",
            "ul", "dl", "dt", "dd", "table", "caption", "thead", "tbody", "tfoot", "tr", "picture"
        ] {
            table[name] = []
        }
        table["blockquote"] = ["cite"]
        table["q"] = ["cite"]
        table["del"] = ["cite", "datetime"]
        table["ins"] = ["cite", "datetime"]
        table["time"] = ["datetime"]
        table["details"] = ["open"]
        table["ol"] = ["start", "reversed", "type"]
        table["li"] = ["value"]
        table["th"] = ["colspan", "rowspan", "scope", "align"]
        table["td"] = ["colspan", "rowspan", "align"]
        table["colgroup"] = ["span"]
        table["col"] = ["span"]
        table["a"] = ["href"]
        table["img"] = ["src", "alt", "width", "height", "loading"]
        table["video"] = ["src", "poster", "controls", "width", "height", "loop", "muted", "playsinline", "preload"]
        table["audio"] = ["src", "controls", "loop", "muted", "preload"]
        table["source"] = ["src", "type", "media"]
        table["track"] = ["src", "kind", "srclang", "label", "default"]
        table["link"] = ["rel", "href", "media"]
        table["style"] = ["media"]
        table["input"] = ["type", "checked"]
        return table
    }()

    static let voidElements: Set<String> = ["br", "hr", "wbr", "img", "col", "source", "track", "link", "input"]
    static let urlAttributes: Set<String> = ["href", "src", "poster", "cite"]
    /// Elements whose content is text up to their end tag (as a browser reads them).
    static let rawTextElements: Set<String> = [
        "script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title", "plaintext"
    ]
    /// Parsed elements removed with everything inside them.
    static let removedWithContent: Set<String> = ["template", "svg", "math", "object", "applet", "frameset", "select"]
    /// Deeper elements are dropped (their content kept), so closing tags costs a bounded search.
    static let maximumNesting = 256
}

private struct Sanitizer {
    let input: [UInt8]
    var out: [UInt8] = []
    var open: [String] = []
    /// Inside an element removed with its content: its name and nesting.
    var skipping: (name: String, depth: Int)?

    init(_ input: [UInt8]) {
        self.input = input
        out.reserveCapacity(input.count)
    }

    struct Tag {
        var name: String
        var attributes: [(name: String, value: ArraySlice<UInt8>)] = []
        var selfClosing = false
        var isEnd = false
    }

    mutating func run() {
        var i = 0
        var textStart = 0
        let n = input.count
        while i < n {
            guard input[i] == UInt8(ascii: "<") else {
                i += 1
                continue
            }
            emitText(input[textStart..<i])
            let next = i + 1 < n ? input[i + 1] : 0
            if isLetter(next) || (next == UInt8(ascii: "/") && i + 2 < n && isLetter(input[i + 2])) {
                guard let (tag, after) = readTag(at: i) else {
                    i = n
                    textStart = n
                    break
                }  // a tag cut by the end: dropped
                i = after
                if !tag.isEnd, HTMLSanitizer.rawTextElements.contains(tag.name) {  // `<style/>` too, as a browser reads it
                    let (content, afterEnd) = rawText(of: tag.name, from: i)
                    if skipping == nil, tag.name == "style" { emitStyle(tag, content) }
                    i = afterEnd
                } else {
                    handle(tag)
                }
            } else if next == UInt8(ascii: "!") || next == UInt8(ascii: "?") || next == UInt8(ascii: "/") {
                i = skipMarkup(at: i)  // comment, doctype, CDATA, processing instruction, `</>` or `</ x>`
            } else {
                emitText(input[i..<(i + 1)])  // a lone '<' is text
                i += 1
            }
            textStart = i
        }
        emitText(input[min(textStart, n)..<n])
        while let name = open.popLast() { emitEnd(name) }
    }

    // MARK: Reading

    private func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
    private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D }

    private func lowered(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// A start or end tag at `start` (its '<'), as the HTML tokenizer reads one; nil when the
    /// input ends inside it.
    private func readTag(at start: Int) -> (Tag, Int)? {
        let n = input.count
        var i = start + 1
        var tag = Tag(name: "")
        if input[i] == UInt8(ascii: "/") {
            tag.isEnd = true
            i += 1
        }
        let nameStart = i
        while i < n, !isSpace(input[i]), input[i] != UInt8(ascii: "/"), input[i] != UInt8(ascii: ">") { i += 1 }
        tag.name = lowered(input[nameStart..<i])
        while i < n {
            let c = input[i]
            if isSpace(c) {
                i += 1
                continue
            }
            if c == UInt8(ascii: ">") { return (tag, i + 1) }
            if c == UInt8(ascii: "/") {
                i += 1
                if i < n, input[i] == UInt8(ascii: ">") {
                    tag.selfClosing = true
                    return (tag, i + 1)
                }
                continue
            }
            // An attribute name: its first character may be '=', then up to a space, '/', '>' or '='.
            let attributeStart = i
            i += 1
            while i < n, !isSpace(input[i]), input[i] != UInt8(ascii: "/"), input[i] != UInt8(ascii: ">"), input[i] != UInt8(ascii: "=") { i += 1 }
            let name = lowered(input[attributeStart..<i])
            while i < n, isSpace(input[i]) { i += 1 }
            var value: ArraySlice<UInt8> = []
            if i < n, input[i] == UInt8(ascii: "=") {
                i += 1
                while i < n, isSpace(input[i]) { i += 1 }
                guard i < n else { return nil }
                if input[i] == UInt8(ascii: "\"") || input[i] == UInt8(ascii: "'") {
                    let quote = input[i]
                    let valueStart = i + 1
                    guard let end = input[valueStart...].firstIndex(of: quote) else { return nil }
                    value = input[valueStart..<end]
                    i = end + 1
                } else {
                    let valueStart = i
                    while i < n, !isSpace(input[i]), input[i] != UInt8(ascii: ">") { i += 1 }
                    value = input[valueStart..<i]
                }
            }
            if !tag.attributes.contains(where: { $0.name == name }) { tag.attributes.append((name, value)) }
        }
        return nil
    }

    /// The text of a raw-text element up to `</name` (any case) and the position after that end tag.
    private func rawText(of name: String, from start: Int) -> (ArraySlice<UInt8>, Int) {
        let n = input.count
        let target = Array(name.utf8)
        var i = start
        if name == "plaintext" { return (input[start..<n], n) }
        while i + 1 < n {
            if input[i] == UInt8(ascii: "<"), input[i + 1] == UInt8(ascii: "/"), i + 2 + target.count <= n {
                var matches = true
                for (k, byte) in target.enumerated() where (input[i + 2 + k] | 0x20) != byte {
                    matches = false
                    break
                }
                let after = i + 2 + target.count
                if matches, after == n || isSpace(input[after]) || input[after] == UInt8(ascii: "/") || input[after] == UInt8(ascii: ">") {
                    let close = input[after...].firstIndex(of: UInt8(ascii: ">")).map { $0 + 1 } ?? n
                    return (input[start..<i], close)
                }
            }
            i += 1
        }
        return (input[start..<n], n)
    }

    /// Skips a comment (`<!-- ... -->`), doctype, CDATA section, processing instruction or bogus end tag.
    private func skipMarkup(at start: Int) -> Int {
        let n = input.count
        let opener: [UInt8] = Array("<!--".utf8)
        if start + 4 <= n, Array(input[start..<(start + 4)]) == opener {
            var i = start + 4
            // `<!-->` and `<!--->` are empty comments.
            if i < n, input[i] == UInt8(ascii: ">") { return i + 1 }
            if i + 1 < n, input[i] == UInt8(ascii: "-"), input[i + 1] == UInt8(ascii: ">") { return i + 2 }
            while i + 2 < n {
                if input[i] == UInt8(ascii: "-"), input[i + 1] == UInt8(ascii: "-") {
                    if input[i + 2] == UInt8(ascii: ">") { return i + 3 }
                    if input[i + 2] == UInt8(ascii: "!"), i + 3 < n, input[i + 3] == UInt8(ascii: ">") { return i + 4 }
                }
                i += 1
            }
            return n
        }
        return input[start...].firstIndex(of: UInt8(ascii: ">")).map { $0 + 1 } ?? n
    }

    // MARK: Writing

    private mutating func handle(_ tag: Tag) {
        if let skip = skipping {
            if tag.name == skip.name, !tag.selfClosing || tag.isEnd {
                let depth = skip.depth + (tag.isEnd ? -1 : 1)
                skipping = depth == 0 ? nil : (skip.name, depth)
            }
            return
        }
        if tag.isEnd {
            guard HTMLSanitizer.elements[tag.name] != nil, !HTMLSanitizer.voidElements.contains(tag.name),
                let index = open.lastIndex(of: tag.name)
            else { return }  // stray: dropped
            while open.count > index { emitEnd(open.removeLast()) }
            return
        }
        if HTMLSanitizer.removedWithContent.contains(tag.name) {
            if !tag.selfClosing { skipping = (tag.name, 1) }
            return
        }
        guard tag.name != "style", let own = HTMLSanitizer.elements[tag.name] else { return }  // dropped, content kept
        let isVoid = HTMLSanitizer.voidElements.contains(tag.name)
        if !isVoid, open.count >= HTMLSanitizer.maximumNesting { return }
        var attributes: [(String, [UInt8])] = []
        for attribute in tag.attributes where HTMLSanitizer.globalAttributes.contains(attribute.name) || own.contains(attribute.name) {
            let value = decoded(attribute.value)
            if HTMLSanitizer.urlAttributes.contains(attribute.name) {
                let image = (tag.name == "img" && attribute.name == "src") || attribute.name == "poster"
                guard ArticleURL.isSafe(String(decoding: value, as: UTF8.self), image: image) else { continue }
            }
            attributes.append((attribute.name, value))
        }
        switch tag.name {
        case "link":
            // Stylesheets only, with a safe href.
            let rel = attributes.first { $0.0 == "rel" }.map { lowered($0.1[...]) } ?? ""
            guard rel.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).contains("stylesheet"),
                let href = attributes.first(where: { $0.0 == "href" })
            else { return }
            attributes = [("rel", Array("stylesheet".utf8)), href] + attributes.filter { $0.0 != "rel" && $0.0 != "href" }
        case "input":
            // Task-list checkboxes: always disabled.
            guard let type = attributes.first(where: { $0.0 == "type" }), lowered(type.1[...]) == "checkbox" else { return }
            let checked = attributes.contains { $0.0 == "checked" }
            attributes =
                [("type", Array("checkbox".utf8)), ("disabled", [])] + (checked ? [("checked", [])] : [])
                + attributes.filter { !["type", "checked", "disabled"].contains($0.0) }
        default:
            break
        }
        emitStart(tag.name, attributes)
        if !isVoid { open.append(tag.name) }
    }

    private mutating func emitStyle(_ tag: Tag, _ content: ArraySlice<UInt8>) {
        guard open.count < HTMLSanitizer.maximumNesting else { return }
        let media = tag.attributes.first { $0.name == "media" }.map { [("media", decoded($0.value))] } ?? []
        emitStart("style", media)
        for byte in content { if byte == 0 { out += [0xEF, 0xBF, 0xBD] } else { out.append(byte) } }
        emitEnd("style")
    }

    private mutating func emitStart(_ name: String, _ attributes: [(String, [UInt8])]) {
        out.append(UInt8(ascii: "<"))
        out += name.utf8
        for (attribute, value) in attributes {
            out.append(UInt8(ascii: " "))
            out += attribute.utf8
            out += Array("=\"".utf8)
            escape(value[...], attribute: true)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: ">"))
    }

    private mutating func emitEnd(_ name: String) {
        out += Array("</".utf8)
        out += name.utf8
        out.append(UInt8(ascii: ">"))
    }

    private mutating func emitText(_ text: ArraySlice<UInt8>) {
        guard skipping == nil, !text.isEmpty else { return }
        escape(decoded(text)[...], attribute: false)
    }

    private mutating func escape(_ bytes: ArraySlice<UInt8>, attribute: Bool) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "&"): out += Array("&amp;".utf8)
            case UInt8(ascii: "<"): out += Array("&lt;".utf8)
            case UInt8(ascii: ">"): out += Array("&gt;".utf8)
            case UInt8(ascii: "\"") where attribute: out += Array("&quot;".utf8)
            case 0: out += [0xEF, 0xBF, 0xBD]
            default: out.append(byte)
            }
        }
    }

    /// Character references decoded with cmark's HTML5 entity table (`&amp;`, `&eacute;`, `&#233;`...).
    private func decoded(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        guard bytes.contains(UInt8(ascii: "&")), bytes.count < Int(Int32.max / 2) else { return Array(bytes) }
        var buffer = cmark_strbuf()
        cmark_strbuf_init(cmark_get_default_mem_allocator(), &buffer, 0)
        defer { cmark_strbuf_free(&buffer) }
        bytes.withUnsafeBufferPointer { source in
            houdini_unescape_html_f(&buffer, source.baseAddress, bufsize_t(source.count))
        }
        guard let pointer = buffer.ptr, buffer.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: pointer, count: Int(buffer.size)))
    }
}
