import XCTest

@testable import HubHostKit

/// Markdown articles through cmark-gfm: raw HTML and unsafe URLs never reach a page, GitHub's
/// extensions, the CommonMark the hand-written renderer used to miss, titles, and bundle problems.
final class MarkdownRendererTests: XCTestCase {
    private func render(_ markdown: String) -> String { MarkdownRenderer.render(markdown) }

    // MARK: Safety

    func testRawHTMLIsShownAsTextNeverAsHTML() {
        XCTAssertEqual(
            render("Hello <script>alert('x')</script> & \"friends\""),
            "<p>Hello &lt;script&gt;alert('x')&lt;/script&gt; &amp; &quot;friends&quot;</p>\n")
        XCTAssertEqual(render("# <b>Title</b>"), "<h1>&lt;b&gt;Title&lt;/b&gt;</h1>\n")
        XCTAssertEqual(
            render("<script>\nalert(1)\n</script>\n\nafter"), "<p>&lt;script&gt;\nalert(1)\n&lt;/script&gt;</p>\n<p>after</p>\n",
            "an HTML block becomes a paragraph of its text")
        XCTAssertEqual(render("<div onclick=\"x()\">\n*a*\n</div>"), "<p>&lt;div onclick=&quot;x()&quot;&gt;\n*a*\n&lt;/div&gt;</p>\n")
        XCTAssertFalse(render("<img src=x onerror=alert(1)>").contains("<img"))
        XCTAssertEqual(render("> <img src=x onerror=alert(1)>"), "<blockquote>\n<p>&lt;img src=x onerror=alert(1)&gt;</p>\n</blockquote>\n")
        XCTAssertEqual(render("- <!-- hidden -->\n- <?php x ?>"), "<ul>\n<li>&lt;!-- hidden --&gt;</li>\n<li>&lt;?php x ?&gt;</li>\n</ul>\n")
        XCTAssertEqual(render("`<script>`"), "<p><code>&lt;script&gt;</code></p>\n")
        XCTAssertEqual(
            render("```html\n<script>alert(1)</script>\n```"),
            "<pre><code class=\"language-html\">&lt;script&gt;alert(1)&lt;/script&gt;\n</code></pre>\n")
        XCTAssertEqual(
            render("[x\"><script>](https://a.example/\"onmouseover=\"x)"),
            "<p><a href=\"https://a.example/%22onmouseover=%22x\">x&quot;&gt;&lt;script&gt;</a></p>\n")
        XCTAssertEqual(render("![a\" onerror=\"x](p.png)"), "<p><img src=\"p.png\" alt=\"a&quot; onerror=&quot;x\" /></p>\n")
        XCTAssertEqual(render("[t](/u \"a\\\" onmouseover=\\\"x\")"), "<p><a href=\"/u\" title=\"a&quot; onmouseover=&quot;x\">t</a></p>\n")
        XCTAssertEqual(
            render("| <b>h</b> |\n| - |\n| <i>c</i> |"),
            "<table>\n<thead>\n<tr>\n<th>&lt;b&gt;h&lt;/b&gt;</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>&lt;i&gt;c&lt;/i&gt;</td>\n</tr>\n</tbody>\n</table>\n"
        )
        XCTAssertEqual(render("a\u{0}b"), "<p>a\u{FFFD}b</p>\n", "U+0000 becomes U+FFFD and does not end the text")
    }

    func testScriptURLsAreRenderedAsTheirTextButAppSchemesPass() {
        XCTAssertEqual(render("[x](javascript:alert(1))"), "<p>x</p>\n")
        XCTAssertEqual(render("[x]( JaVaScRiPt:alert(1))"), "<p>x</p>\n")
        XCTAssertEqual(render("[x](< JaVaScRiPt:alert(1)>)"), "<p>x</p>\n")
        XCTAssertEqual(render("[x](java&#x73;cript:alert(1))"), "<p>x</p>\n", "after entities are decoded")
        XCTAssertEqual(render("[x](java&Tab;script:alert(1))"), "<p>x</p>\n", "a browser drops the tab")
        XCTAssertEqual(render("[x](&#1;javascript:alert(1))"), "<p>x</p>\n", "a browser strips leading control characters")
        XCTAssertEqual(render("[x](vbscript:msgbox)"), "<p>x</p>\n")
        XCTAssertEqual(render("[x](file:///etc/passwd)"), "<p>x</p>\n")
        XCTAssertEqual(render("[x](data:text/html,hi)"), "<p>x</p>\n")
        XCTAssertEqual(render("[x](data:image/png;base64,AAAA)"), "<p>x</p>\n", "a link never opens a data: URL")
        XCTAssertEqual(render("<javascript:alert(1)>"), "<p>javascript:alert(1)</p>\n")
        XCTAssertEqual(render("[*x*][r]\n\n[r]: javascript:alert(1)"), "<p><em>x</em></p>\n", "reference definitions too")
        XCTAssertEqual(render("![x *y*](javascript:alert(1))"), "<p>x <em>y</em></p>\n", "an image becomes its alt text")
        XCTAssertEqual(render("![x](data:image/svg+xml,<svg onload=alert(1)>)"), "<p>![x](data:image/svg+xml,&lt;svg onload=alert(1)&gt;)</p>\n")
        XCTAssertEqual(render("![x](<data:image/svg+xml,x>)"), "<p>x</p>\n")
        XCTAssertEqual(render("[![i](javascript:a)](javascript:b)"), "<p>i</p>\n", "nested: both unwrapped")
        XCTAssertEqual(render("[![i](p.png)](javascript:b)"), "<p><img src=\"p.png\" alt=\"i\" /></p>\n")
        XCTAssertEqual(render("![x](data:image/png;base64,AAAA)"), "<p><img src=\"data:image/png;base64,AAAA\" alt=\"x\" /></p>\n")
        XCTAssertEqual(render("[buy](myapp://checkout?sku=1&n=2)"), "<p><a href=\"myapp://checkout?sku=1&amp;n=2\">buy</a></p>\n")
        XCTAssertEqual(render("<myapp://checkout>"), "<p><a href=\"myapp://checkout\">myapp://checkout</a></p>\n")
        XCTAssertEqual(render("[next](zbimdb://article/news/sports/final)"), "<p><a href=\"zbimdb://article/news/sports/final\">next</a></p>\n")
        XCTAssertEqual(render("<https://example.com/a?b=1>"), "<p><a href=\"https://example.com/a?b=1\">https://example.com/a?b=1</a></p>\n")
        XCTAssertEqual(
            render("[site](resources/site.css) ![logo](resources/logo.png)"),
            "<p><a href=\"resources/site.css\">site</a> <img src=\"resources/logo.png\" alt=\"logo\" /></p>\n")
    }

    func testDeepNestingFinishesAndStaysEscaped() {
        let quotes = render(String(repeating: ">", count: 20_000) + " <x>")
        XCTAssertEqual(quotes.components(separatedBy: "<blockquote>").count - 1, 20_000)
        XCTAssertTrue(quotes.contains("<p>&lt;x&gt;</p>"))
        let emphasis = render(String(repeating: "*a ", count: 5000) + String(repeating: "a* ", count: 5000))
        XCTAssertEqual(emphasis.components(separatedBy: "<em>").count - 1, 5000, "each closer closes the nearest opener")
        let brackets = render(String(repeating: "[", count: 5000) + "x" + String(repeating: "](y)", count: 5000))
        XCTAssertEqual(brackets.components(separatedBy: "<a ").count - 1, 1, "links do not nest: the innermost one is the link")
        let list = render((0..<1000).map { String(repeating: " ", count: $0 * 2) + "- item \($0)" }.joined(separator: "\n"))
        XCTAssertTrue(list.contains("item 999"))
    }

    // MARK: What authors write

    func testGitHubExtensionsTablesStrikethroughAutolinksAndTaskLists() {
        XCTAssertEqual(MarkdownRenderer.extensions, ["table", "strikethrough", "autolink", "tasklist"])
        XCTAssertEqual(
            render("| a | b |\n| :- | -: |\n| 1 | **2** |"),
            "<table>\n<thead>\n<tr>\n<th align=\"left\">a</th>\n<th align=\"right\">b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td align=\"left\">1</td>\n<td align=\"right\"><strong>2</strong></td>\n</tr>\n</tbody>\n</table>\n"
        )
        XCTAssertEqual(render("~~gone~~ and ~also~"), "<p><del>gone</del> and <del>also</del></p>\n")
        XCTAssertEqual(
            render("see www.example.com/a and https://example.org."),
            "<p>see <a href=\"http://www.example.com/a\">www.example.com/a</a> and <a href=\"https://example.org\">https://example.org</a>.</p>\n")
        XCTAssertEqual(
            render("- [ ] todo\n- [x] done"),
            "<ul>\n<li><input type=\"checkbox\" disabled=\"\" /> todo</li>\n<li><input type=\"checkbox\" checked=\"\" disabled=\"\" /> done</li>\n</ul>\n"
        )
    }

    /// What the hand-written renderer got wrong, each as the spec says.
    func testCommonMarkTheHandWrittenRendererMissed() {
        XCTAssertEqual(render("[foo]\n\n[foo]: /url \"title\""), "<p><a href=\"/url\" title=\"title\">foo</a></p>\n")
        XCTAssertEqual(render("*foo\nbar*"), "<p><em>foo\nbar</em></p>\n")
        XCTAssertEqual(render("[a link that\nwraps](/u)"), "<p><a href=\"/u\">a link that\nwraps</a></p>\n")
        XCTAssertEqual(render("Foo\n---\n\nBar\n==="), "<h2>Foo</h2>\n<h1>Bar</h1>\n")
        XCTAssertEqual(render("    code\n    more"), "<pre><code>code\nmore\n</code></pre>\n")
        XCTAssertEqual(render("foo\\\nbar"), "<p>foo<br />\nbar</p>\n")
        XCTAssertEqual(render("&copy; &amp; &#35; &#x22;"), "<p>© &amp; # &quot;</p>\n")
        XCTAssertEqual(render("**foo*"), "<p>*<em>foo</em></p>\n")
        XCTAssertEqual(render("[foo [bar](/uri)](/uri)"), "<p>[foo <a href=\"/uri\">bar</a>](/uri)</p>\n")
        XCTAssertEqual(
            render("a *em* **strong** ***both*** _u_ __uu__ snake_case_name"),
            "<p>a <em>em</em> <strong>strong</strong> <em><strong>both</strong></em> <em>u</em> <strong>uu</strong> snake_case_name</p>\n")
        XCTAssertEqual(render("3. three\n4. four"), "<ol start=\"3\">\n<li>three</li>\n<li>four</li>\n</ol>\n")
    }

    func testTheTitleIsTheFirstLevelOneHeadingAsText() {
        XCTAssertEqual(MarkdownRenderer.renderArticle("intro\n\n## Two\n\n# The *final* `score`\n\n# Later").firstHeading, "The final score")
        XCTAssertEqual(MarkdownRenderer.renderArticle("Set *ext*\nheading\n===").firstHeading, "Set ext heading")
        XCTAssertNil(MarkdownRenderer.renderArticle("```\n# not a heading\n```\n## two").firstHeading)
        XCTAssertNil(MarkdownRenderer.renderArticle("#\n\ntext").firstHeading, "an empty heading is no title")
    }

    // MARK: In a bundle

    func testBundleBuildRendersSanitisesAndTitlesArticles() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            "Wrapped *emphasis\nacross lines*\n===\n\n<script>alert(1)</script>\n\n| a |\n| - |\n| ~~b~~ |\n", to: folder + "/c/h/ch/md.md")
        try TestSupport.write("---\ntitle: Page\n---\n<h1 onclick=\"x()\">Hi</h1><script>alert(1)</script>", to: folder + "/c/h/ch/page.html")
        try TestSupport.write("a\u{0}b", to: folder + "/c/h/ch/nul.md")
        try BundleBuilder.build(from: folder + "/c", to: folder + "/b.sqlite3")
        let bundle = try ContentBundle(path: folder + "/b.sqlite3")
        XCTAssertEqual(bundle.article("h/ch/md")?.title, "Wrapped emphasis across lines", "a setext heading is a title too")
        XCTAssertEqual(
            bundle.body(ofArticle: "h/ch/md"),
            "<h1>Wrapped <em>emphasis\nacross lines</em></h1>\n<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
                + "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td><del>b</del></td>\n</tr>\n</tbody>\n</table>\n")
        XCTAssertEqual(bundle.body(ofArticle: "h/ch/page"), "<h1>Hi</h1>")
        XCTAssertEqual(bundle.article("h/ch/nul")?.title, "nul")
        XCTAssertEqual(bundle.body(ofArticle: "h/ch/nul"), "<p>a\u{FFFD}b</p>\n")
    }

    func testMarkdownThatIsNotUTF8IsAProblemWithItsPathAmongTheOthers() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("fine\n", to: folder + "/c/h/ch/good.md")
        // "café" in Latin-1
        try Data([0x23, 0x20, 0x54, 0x0A, 0x0A, 0x63, 0x61, 0x66, 0xE9, 0x0A]).write(to: URL(fileURLWithPath: folder + "/c/h/ch/latin1.md"))
        try Data([0x61, 0xF0, 0x9F, 0x98]).write(to: URL(fileURLWithPath: folder + "/c/h/ch/cut.md"))  // an emoji cut short
        try TestSupport.write("stray", to: folder + "/c/notes.txt")
        XCTAssertThrowsError(try BundleBuilder.build(from: folder + "/c", to: folder + "/b.sqlite3")) { error in
            let problems = (error as? BundleBuilder.BuildError)?.problems ?? []
            XCTAssertEqual(problems.count, 3, "\(problems)")
            let latin1 = problems.first { $0.path.hasSuffix("/c/h/ch/latin1.md") }
            XCTAssertEqual(latin1?.line, 3)
            XCTAssertTrue(latin1?.message.contains("is not UTF-8 text (byte 8 is not valid UTF-8)") == true, "\(problems)")
            XCTAssertTrue(problems.contains { $0.path.hasSuffix("/cut.md") && $0.line == 1 }, "\(problems)")
        }
        let keys = try TestKeys.make("EC", name: "key", in: folder)
        let result = try TestSupport.hubhost(
            ["bundle", "build", "c", "-o", "out.sqlite3", "--key", keys.privateKey, "--json"],
            in: folder)
        XCTAssertEqual(result.status, 1, result.stderr)
        let json = try XCTUnwrap(try result.json as? [String: Any], result.stdout)
        let problems = try XCTUnwrap(json["problems"] as? [[String: Any]])
        XCTAssertEqual(
            Set(problems.compactMap { ($0["path"] as? String).map { ($0 as NSString).lastPathComponent } }), ["latin1.md", "cut.md", "notes.txt"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/out.sqlite3"))
    }
}
