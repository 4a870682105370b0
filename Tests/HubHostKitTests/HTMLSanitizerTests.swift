import XCTest

@testable import HubHostKit

/// HTML articles: what an author may write stays, what could run script never reaches a page.
final class HTMLSanitizerTests: XCTestCase {
    private func clean(_ html: String) -> String { HTMLSanitizer.sanitize(html) }

    func testContentElementsStylesAndResourcesStay() {
        let article = """
            <link rel="stylesheet" href="resources/site.css">
            <h1>Market day</h1>
            <p class="lead">The farmers' market returns &amp; stays &eacute;t&#233; <em>all</em> <a href="https://example.com/m?a=1&amp;b=2" title="More">summer</a>.</p>
            <img src="resources/images/pixel.png" alt="A pixel" width="1" height="1">
            <table><thead><tr><th colspan="2" align="left">a</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>
            <ul><li><input type="checkbox" checked> done</li></ul>
            <style media="screen">.lead > b { color: red }</style>
            <video src="resources/clip.mp4" poster="resources/poster.png" controls><track src="resources/en.vtt" kind="captions"></video>
            <a href="myapp://checkout?sku=1">Buy</a> <a href="zbimdb://article/news/local/road-works">Next</a>
            """
        XCTAssertEqual(
            clean(article),
            """
            <link rel="stylesheet" href="resources/site.css">
            <h1>Market day</h1>
            <p class="lead">The farmers' market returns &amp; stays été <em>all</em> <a href="https://example.com/m?a=1&amp;b=2" title="More">summer</a>.</p>
            <img src="resources/images/pixel.png" alt="A pixel" width="1" height="1">
            <table><thead><tr><th colspan="2" align="left">a</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>
            <ul><li><input type="checkbox" disabled="" checked=""> done</li></ul>
            <style media="screen">.lead > b { color: red }</style>
            <video src="resources/clip.mp4" poster="resources/poster.png" controls=""><track src="resources/en.vtt" kind="captions"></video>
            <a href="myapp://checkout?sku=1">Buy</a> <a href="zbimdb://article/news/local/road-works">Next</a>
            """)
    }

    func testScriptsHandlersAndDangerousURLsAreRemoved() {
        XCTAssertEqual(clean("a<script>alert('<b>')</script>b<SCRIPT src=x.js></SCRIPT >c"), "abc")
        XCTAssertEqual(clean("<img src=x onerror=alert(1) ONLOAD='y'>"), "<img src=\"x\">")
        XCTAssertEqual(clean("<a href=\"javascript:alert(1)\">x</a>"), "<a>x</a>")
        XCTAssertEqual(
            clean("<a href=\" &#x6A;ava&#x09;script&colon;alert(1)\">x</a>"), "<a>x</a>", "references decoded, tab dropped as a browser does")
        XCTAssertEqual(clean("<a href=\"&#1;javascript:alert(1)\">x</a>"), "<a>x</a>")
        XCTAssertEqual(clean("<a href='JAVASCRIPT:x'>x</a><a href=vbscript:x>y</a><a href=\"file:///etc\">z</a>"), "<a>x</a><a>y</a><a>z</a>")
        XCTAssertEqual(clean("<a href=\"data:text/html,<script>x</script>\">d</a>"), "<a>d</a>")
        XCTAssertEqual(
            clean("<img src=\"data:image/svg+xml,x\"><img src=\"data:image/png;base64,AA\">"), "<img><img src=\"data:image/png;base64,AA\">")
        XCTAssertEqual(
            clean("<link rel=stylesheet href=\"data:text/css,x\"><link rel=\"preload\" href=\"x.js\"><link rel=\"icon stylesheet\" href=\"s.css\">"),
            "<link rel=\"stylesheet\" href=\"s.css\">")
        XCTAssertEqual(clean("<iframe src=\"https://evil.example\"><p>inside</p></iframe>after"), "after")
        XCTAssertEqual(clean("<svg><script>x</script><foreignObject><p>y</p></foreignObject></svg>after<svg/>also"), "afteralso")
        XCTAssertEqual(clean("<math><mi xlink:href=\"javascript:x\">m</mi></math><template><img src=x onerror=y></template>ok"), "ok")
        XCTAssertEqual(clean("<object data=x></object><embed src=x.swf><noscript><p>n</noscript><textarea><b>t</textarea>z"), "z")
        XCTAssertEqual(
            clean("<form action=\"https://evil.example\"><input type=\"password\" name=\"p\"><button formaction=x>Go</button></form>"), "Go")
        XCTAssertEqual(clean("<base href=\"https://evil.example/\"><meta http-equiv=\"refresh\" content=\"0;url=javascript:x\">text"), "text")
        XCTAssertEqual(
            clean("<div style=\"color:red\" onclick=\"x()\" name=\"body\" id=\"intro\" data-x=\"1\">d</div>"),
            "<div style=\"color:red\" id=\"intro\">d</div>")
        XCTAssertEqual(clean("<p title='a\"b' class=\"x&quot;><script>\">t</p>"), "<p title=\"a&quot;b\" class=\"x&quot;&gt;&lt;script&gt;\">t</p>")
    }

    func testCommentsDoctypesAndBrokenMarkupNeverBecomeTags() {
        XCTAssertEqual(clean("<!DOCTYPE html><html><head><title>T</title></head><body><p>b</p></body></html>"), "<p>b</p>")
        XCTAssertEqual(clean("a<!-- <script>x</script> -->b<!-->c<!--->d<?php e ?>f<![CDATA[<g>]]>h"), "ab" + "c" + "d" + "f" + "]]&gt;h")
        XCTAssertEqual(clean("a < b and c<d >e</ f>g</>h"), "a &lt; b and c" + "e" + "g" + "h")
        XCTAssertEqual(clean("x<scr<script>ipt>alert(1)</script>"), "xipt&gt;alert(1)", "one tag named 'scr<script', as a browser reads it")
        XCTAssertEqual(clean("<style>a{}</style >b<style>c</STYLE>d<style/>e</style>f"), "<style>a{}</style>b<style>c</style>d<style>e</style>f")
        XCTAssertEqual(clean("<p>unclosed <em>to the end"), "<p>unclosed <em>to the end</em></p>")
        XCTAssertEqual(clean("</div></p>stray<b>x</i></b>"), "stray<b>x</b>")
        XCTAssertEqual(clean("<p>cut <a href=\"x"), "<p>cut </p>", "a tag the input ends inside is dropped")
        XCTAssertEqual(clean("<img src=x\n alt='a\u{0}b'/>\u{0}"), "<img src=\"x\" alt=\"a\u{FFFD}b\">\u{FFFD}")
        XCTAssertEqual(clean("<p>1 &lt; 2 &amp;&amp; &bogus; &#0; &#x110000;</p>"), "<p>1 &lt; 2 &amp;&amp; &amp;bogus; \u{FFFD} \u{FFFD}</p>")
    }

    func testNestingIsBoundedAndHostileInputFinishes() {
        let deep = clean(String(repeating: "<div>", count: 10_000) + "x" + String(repeating: "</div>", count: 10_000))
        XCTAssertEqual(deep.components(separatedBy: "<div>").count - 1, HTMLSanitizer.maximumNesting)
        XCTAssertEqual(deep.components(separatedBy: "</div>").count - 1, HTMLSanitizer.maximumNesting)
        for hostile in [
            String(repeating: "<a ", count: 50_000), String(repeating: "<!--", count: 50_000), String(repeating: "<p x='", count: 50_000),
            String(repeating: "</b>", count: 100_000), String(repeating: "<script>", count: 50_000), String(repeating: "&amp", count: 50_000),
            String(repeating: "<svg>", count: 20_000) + "x", String(repeating: "<i><b>", count: 20_000) + String(repeating: "</i>", count: 20_000)
        ] {
            let output = clean(hostile)
            XCTAssertFalse(output.contains("<script"), String(output.prefix(200)))
        }
    }
}
