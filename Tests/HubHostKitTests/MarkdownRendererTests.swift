import XCTest
@testable import HubHostKit

/// The article renderer: the Markdown it knows, and escaping of everything else.
final class MarkdownRendererTests: XCTestCase {
    private func render(_ markdown: String) -> String { MarkdownRenderer.render(markdown) }

    func testHTMLInTextIsEscaped() {
        XCTAssertEqual(render("Hello <script>alert('x')</script> & \"friends\""),
                       "<p>Hello &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;friends&quot;</p>")
        XCTAssertEqual(render("# <b>Title</b>"), "<h1>&lt;b&gt;Title&lt;/b&gt;</h1>")
        XCTAssertEqual(render("`<script>`"), "<p><code>&lt;script&gt;</code></p>")
        XCTAssertEqual(render("```html\n<script>alert(1)</script>\n```"),
                       "<pre><code class=\"language-html\">&lt;script&gt;alert(1)&lt;/script&gt;\n</code></pre>")
        XCTAssertEqual(render("[x\"><script>](https://a.example/\"onmouseover=\"x)"),
                       "<p><a href=\"https://a.example/&quot;onmouseover=&quot;x\">x&quot;&gt;&lt;script&gt;</a></p>")
        XCTAssertEqual(render("![a\" onerror=\"x](p.png)"), "<p><img src=\"p.png\" alt=\"a&quot; onerror=&quot;x\"></p>")
        XCTAssertFalse(render("<img src=x onerror=alert(1)>").contains("<img"))
    }

    func testScriptURLsAreNeutralizedButAppSchemesPass() {
        XCTAssertEqual(render("[x](javascript:alert(1))"), "<p><a href=\"#\">x</a></p>")
        XCTAssertEqual(render("[x]( JaVaScRiPt:alert(1))"), "<p><a href=\"#\">x</a></p>")
        XCTAssertEqual(render("[x](data:text/html,hi)"), "<p><a href=\"#\">x</a></p>")
        XCTAssertEqual(render("![x](data:image/png;base64,AAAA)"), "<p><img src=\"data:image/png;base64,AAAA\" alt=\"x\"></p>")
        XCTAssertEqual(render("[buy](myapp://checkout?sku=1&n=2)"), "<p><a href=\"myapp://checkout?sku=1&amp;n=2\">buy</a></p>")
        XCTAssertEqual(render("<https://example.com/a?b=1>"), "<p><a href=\"https://example.com/a?b=1\">https://example.com/a?b=1</a></p>")
    }

    func testHeadingsParagraphsEmphasisAndBreaks() {
        XCTAssertEqual(render("# One\n## Two ##\n###### Six\n####### seven"),
                       "<h1>One</h1>\n<h2>Two</h2>\n<h6>Six</h6>\n<p>####### seven</p>")
        XCTAssertEqual(render("a *em* **strong** ***both*** _u_ __uu__ snake_case_name"),
                       "<p>a <em>em</em> <strong>strong</strong> <em><strong>both</strong></em> <em>u</em> <strong>uu</strong> snake_case_name</p>")
        XCTAssertEqual(render("**bold with *em* inside**"), "<p><strong>bold with <em>em</em> inside</strong></p>")
        XCTAssertEqual(render("2 * 3 * 4 and a lone * star"), "<p>2 * 3 * 4 and a lone * star</p>")
        XCTAssertEqual(render("\\*not em\\*"), "<p>*not em*</p>")
        XCTAssertEqual(render("line one  \nline two\n\nnext"), "<p>line one<br>\nline two</p>\n<p>next</p>")
        XCTAssertEqual(render("a\n\n---\n\nb\n***"), "<p>a</p>\n<hr>\n<p>b</p>\n<hr>")
    }

    func testLinksImagesAndCode() {
        XCTAssertEqual(render("[the *site*](https://example.com \"Title\")"),
                       "<p><a href=\"https://example.com\" title=\"Title\">the <em>site</em></a></p>")
        XCTAssertEqual(render("![logo](resources/logo.png)"), "<p><img src=\"resources/logo.png\" alt=\"logo\"></p>")
        XCTAssertEqual(render("[wiki](https://en.wikipedia.org/wiki/Foo_(bar))"),
                       "<p><a href=\"https://en.wikipedia.org/wiki/Foo_(bar)\">wiki</a></p>")
        XCTAssertEqual(render("``a ` b``"), "<p><code>a ` b</code></p>")
        XCTAssertEqual(render("`*not em*`"), "<p><code>*not em*</code></p>")
        XCTAssertEqual(render("~~~\n  indented\n\n# not a heading\n~~~\nafter"), "<pre><code>  indented\n\n# not a heading\n</code></pre>\n<p>after</p>")
        XCTAssertEqual(render("[not a link] (x)"), "<p>[not a link] (x)</p>")
    }

    func testListsAndBlockquotes() {
        XCTAssertEqual(render("- a\n- b\n  continued\n- c"), "<ul>\n<li>a</li>\n<li>b\ncontinued</li>\n<li>c</li>\n</ul>")
        XCTAssertEqual(render("3. three\n4. four"), "<ol start=\"3\">\n<li>three</li>\n<li>four</li>\n</ol>")
        XCTAssertEqual(render("- outer\n  - inner 1\n  - inner 2\n- next"),
                       "<ul>\n<li>outer\n<ul>\n<li>inner 1</li>\n<li>inner 2</li>\n</ul></li>\n<li>next</li>\n</ul>")
        XCTAssertEqual(render("- loose a\n\n- loose b"), "<ul>\n<li><p>loose a</p></li>\n<li><p>loose b</p></li>\n</ul>")
        XCTAssertEqual(render("text\n- item"), "<p>text</p>\n<ul>\n<li>item</li>\n</ul>")
        XCTAssertEqual(render("- a\n\nparagraph"), "<ul>\n<li>a</li>\n</ul>\n<p>paragraph</p>")
        XCTAssertEqual(render("> quoted **text**\n> more\n>\n> - item"),
                       "<blockquote>\n<p>quoted <strong>text</strong>\nmore</p>\n<ul>\n<li>item</li>\n</ul>\n</blockquote>")
        XCTAssertEqual(render("> a\nlazy"), "<blockquote>\n<p>a\nlazy</p>\n</blockquote>")
    }

    func testDeepNestingStaysBoundedAndEscaped() {
        let quotes = render(String(repeating: ">", count: 5000) + " <x>")
        XCTAssertEqual(quotes.components(separatedBy: "<blockquote>").count - 1, MarkdownRenderer.maximumNesting)
        XCTAssertTrue(quotes.contains("&gt;&gt;&gt;") && quotes.contains("&lt;x&gt;"))
        let emphasis = render(String(repeating: "*a ", count: 1000) + String(repeating: "a* ", count: 1000))
        XCTAssertEqual(emphasis.components(separatedBy: "<em>").count - 1, 1, "the first closer closes the first opener; the rest stay text")
        let brackets = render(String(repeating: "[", count: 3000) + "x" + String(repeating: "](y)", count: 3000))
        XCTAssertEqual(brackets.components(separatedBy: "<a ").count - 1, MarkdownRenderer.maximumNesting)
        let list = render((0..<100).map { String(repeating: " ", count: $0 * 2) + "- item \($0)" }.joined(separator: "\n"))
        XCTAssertEqual(list.components(separatedBy: "<ul>").count - 1, MarkdownRenderer.maximumNesting)
        XCTAssertTrue(list.contains("item 99"))
    }
}
