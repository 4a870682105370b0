import CCmarkGFM
import Foundation

/// Markdown articles to HTML with cmark-gfm (GitHub's CommonMark library: CommonMark 0.29 and the
/// GitHub Flavored Markdown spec), with GitHub's table, strikethrough, autolink and task-list
/// extensions, in its safe mode.
///
/// Safety, by construction and whatever the author writes:
/// - raw HTML never reaches a page: cmark's safe mode would replace it with a comment; hubhost turns
///   each raw HTML block and inline tag into text before rendering, so the author sees it as written
///   (escaped) and knows it was not taken as HTML. Write the article as `.html` for HTML (HTMLSanitizer);
/// - a link or image whose URL could run script (`javascript:`, `vbscript:`, `file:`, `data:`, the
///   scheme compared without case, spaces or control characters) is rendered as its text, without
///   `<a>`/`<img>`; images may use `data:image/png|gif|jpeg|webp`. Custom app schemes (`myapp://...`)
///   and `zbimdb://` pass: the page turns them into app actions and hub pages (HubLinkRewriter);
/// - cmark escapes every text and attribute and percent-encodes URLs; its safe mode stays on as a
///   second guard on URLs.
///
/// cmark's parser is linear in its input on the inputs its pathological tests use (deep nesting,
/// unclosed links and emphasis runs, backticks); the few that Debian's 0.29.0.gfm.6 is quadratic on
/// (MarkdownHazards) are found by a linear scan first and not parsed, so one hostile article cannot
/// stall a build.
package enum MarkdownRenderer {
    /// The cmark-gfm extensions every article is rendered with.
    package static let extensions = ["table", "strikethrough", "autolink", "tasklist"]

    /// An article: its HTML and the plain text of its first level-1 heading (the default title).
    package struct Article: Equatable, Sendable {
        package var html: String
        package var firstHeading: String?
        /// Raw HTML blocks and tags shown as text, and links and images with an unsafe URL shown as their text.
        package var neutralized = 0
        /// What cmark-gfm would take more than linear time on (MarkdownHazards); when there is any,
        /// the article was not parsed and `html` is its text, escaped, in a `<pre>`. The bundle
        /// builder reports them as problems.
        package var hazards: [MarkdownHazard] = []

        package init(html: String, firstHeading: String?, neutralized: Int = 0, hazards: [MarkdownHazard] = []) {
            self.html = html
            self.firstHeading = firstHeading
            self.neutralized = neutralized
            self.hazards = hazards
        }
    }

    package static func render(_ markdown: String) -> String { renderArticle(markdown).html }

    /// The article's HTML, or its escaped text when it holds an input cmark-gfm is not linear on.
    package static func renderArticle(_ markdown: String) -> Article {
        let hazards = MarkdownHazards.scan(markdown)
        guard hazards.isEmpty else {
            let text = escape(markdown).replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
            return Article(html: "<pre>" + text + "</pre>\n", firstHeading: nil, hazards: hazards)
        }
        return render(markdown, extensions: extensions)
    }

    /// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in double-quoted attributes.
    package static func escape(_ text: String) -> String { HTMLEscape.escape(text) }

    /// The document's options: no CMARK_OPT_UNSAFE, so cmark's safe mode is on.
    static let options = CMARK_OPT_DEFAULT

    /// Renders with the named extensions only (the spec tests render core examples with none);
    /// `hubhostPass`: raw HTML as text, unsafe links as text, the first heading (always, but for the benchmark's yardstick).
    static func render(_ markdown: String, extensions names: [String], hubhostPass: Bool = true) -> Article {
        _ = registered
        guard let parser = cmark_parser_new(options) else { fatalError("cmark-gfm: cannot allocate a parser") }
        defer { cmark_parser_free(parser) }
        for name in names {
            guard let extensionPointer = cmark_find_syntax_extension(name) else { fatalError("cmark-gfm has no '\(name)' extension") }
            cmark_parser_attach_syntax_extension(parser, extensionPointer)
        }
        // The bytes with their length: a U+0000 in the text does not end it (cmark makes it U+FFFD).
        var text = markdown
        text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                if let base = chars.baseAddress { cmark_parser_feed(parser, base, chars.count) }
            }
        }
        guard let document = cmark_parser_finish(parser) else { fatalError("cmark-gfm: cannot allocate a document") }
        defer { cmark_node_free(document) }
        let (firstHeading, neutralized) = hubhostPass ? neutralize(document) : (nil, 0)
        guard let rendered = cmark_render_html(document, options, cmark_parser_get_syntax_extensions(parser)) else {
            fatalError("cmark-gfm: cannot allocate the HTML")
        }
        defer { cmark_get_default_mem_allocator().pointee.free(rendered) }
        return Article(html: String(cString: rendered), firstHeading: firstHeading, neutralized: neutralized)
    }

    /// cmark-gfm alone, for `hubhost bench bundle`'s yardstick: the same options and extensions,
    /// parsed and rendered, without hubhost's scan or its pass over the tree.
    package static func cmarkOnlyHTML(_ markdown: String) -> String {
        render(markdown, extensions: extensions, hubhostPass: false).html
    }

    /// cmark_gfm_core_extensions_ensure_registered is not thread-safe: once per process.
    private static let registered: Void = cmark_gfm_core_extensions_ensure_registered()

    /// Raw HTML becomes text and unsafe links and images become their text, in the tree before it
    /// is rendered; returns the first level-1 heading's text on the way and how many nodes changed.
    /// One walk plus one step per changed node: linear.
    private static func neutralize(_ document: OpaquePointer) -> (firstHeading: String?, neutralized: Int) {
        var htmlBlocks: [OpaquePointer] = []
        var htmlInlines: [OpaquePointer] = []
        var unsafe: [OpaquePointer] = []
        var firstHeading: String?
        guard let iterator = cmark_iter_new(document) else { fatalError("cmark-gfm: cannot allocate an iterator") }
        defer { cmark_iter_free(iterator) }
        while true {
            let event = cmark_iter_next(iterator)
            if event == CMARK_EVENT_DONE { break }
            guard event == CMARK_EVENT_ENTER, let node = cmark_iter_get_node(iterator) else { continue }
            let type = cmark_node_get_type(node)
            if type == CMARK_NODE_HTML_BLOCK {
                htmlBlocks.append(node)
            } else if type == CMARK_NODE_HTML_INLINE {
                htmlInlines.append(node)
            } else if type == CMARK_NODE_LINK || type == CMARK_NODE_IMAGE {
                let url =
                    cmark_node_get_url(node).map { UnsafeBufferPointer(start: $0, count: strlen($0)) } ?? UnsafeBufferPointer(start: nil, count: 0)
                if !ArticleURL.isSafe(url.lazy.map { UInt8(bitPattern: $0) }, image: type == CMARK_NODE_IMAGE) { unsafe.append(node) }
            } else if type == CMARK_NODE_HEADING, firstHeading == nil, cmark_node_get_heading_level(node) == 1 {
                let text = plainText(node)
                if !text.isEmpty { firstHeading = text }
            }
        }
        for node in htmlInlines {
            // The tag as the author wrote it (set_type frees the literal, so it is set again).
            let literal = cmark_node_get_literal(node).map { String(cString: $0) } ?? ""
            cmark_node_set_type(node, CMARK_NODE_TEXT)
            cmark_node_set_literal(node, literal)
        }
        for node in htmlBlocks {
            // A paragraph holding the block's text (without its final line ending).
            var literal = cmark_node_get_literal(node).map { String(cString: $0) } ?? ""
            while literal.hasSuffix("\n") { literal.removeLast() }
            guard let paragraph = cmark_node_new(CMARK_NODE_PARAGRAPH), let text = cmark_node_new(CMARK_NODE_TEXT) else {
                fatalError("cmark-gfm: cannot allocate a node")
            }
            cmark_node_set_literal(text, literal)
            cmark_node_append_child(paragraph, text)
            cmark_node_replace(node, paragraph)
            cmark_node_free(node)
        }
        // Innermost first (the walk met outer links first), so each is unwrapped while still in the tree.
        for node in unsafe.reversed() {
            while let child = cmark_node_first_child(node) { cmark_node_insert_before(node, child) }
            cmark_node_free(node)  // unlinks it
        }
        return (firstHeading, htmlBlocks.count + htmlInlines.count + unsafe.count)
    }

    /// The text of a heading's inlines: text and code as written, breaks as spaces.
    private static func plainText(_ node: OpaquePointer) -> String {
        var out = ""
        guard let iterator = cmark_iter_new(node) else { return out }
        defer { cmark_iter_free(iterator) }
        while true {
            let event = cmark_iter_next(iterator)
            if event == CMARK_EVENT_DONE { break }
            guard event == CMARK_EVENT_ENTER, let child = cmark_iter_get_node(iterator) else { continue }
            let type = cmark_node_get_type(child)
            if type == CMARK_NODE_TEXT || type == CMARK_NODE_CODE || type == CMARK_NODE_HTML_INLINE {
                out += cmark_node_get_literal(child).map { String(cString: $0) } ?? ""
            } else if type == CMARK_NODE_SOFTBREAK || type == CMARK_NODE_LINEBREAK {
                out += " "
            }
        }
        return out.trimmingCharacters(in: .whitespaces)
    }
}

/// The URL policy of article links and images, for Markdown and HTML articles alike.
enum ArticleURL {
    /// Whether `url` may be a link's (image: false) or an image's / media's source (image: true).
    /// Refused: `javascript:`, `vbscript:`, `file:` and `data:` (images: except
    /// `data:image/png|gif|jpeg|webp`), compared without case and without the ASCII whitespace and
    /// control characters a browser skips or strips in a URL. Everything else passes: http(s),
    /// relative paths (bundle resources), `mailto:`, `tel:`, `zbimdb://` and custom app schemes.
    static func isSafe(_ url: String, image: Bool) -> Bool { isSafe(url.utf8, image: image) }

    /// The same on a URL's UTF-8 bytes (cmark's node URLs are checked without making strings).
    static func isSafe<Bytes: Sequence>(_ url: Bytes, image: Bool) -> Bool where Bytes.Element == UInt8 {
        // The first 16 bytes that count, lowercased (a browser strips the others before it reads a scheme).
        var start: [UInt8] = []
        start.reserveCapacity(16)
        for byte in url where byte > 0x20 && byte != 0x7F {
            start.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte)
            if start.count == 16 { break }
        }
        func starts(_ prefix: StaticString) -> Bool {
            prefix.withUTF8Buffer { start.starts(with: $0) }
        }
        if starts("javascript:") || starts("vbscript:") || starts("file:") { return false }
        if starts("data:") {
            return image && (starts("data:image/png") || starts("data:image/gif") || starts("data:image/jpeg") || starts("data:image/webp"))
        }
        return true
    }
}
