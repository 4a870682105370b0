import Foundation
import XCTest

@testable import HubHostKit

/// The web Content Hub's parts without a server: session history, the security policy, link
/// rewriting, ids from request paths, escaping.
final class WebHubTests: XCTestCase {
    func testSessionHistoryBackForwardAndDroppedForwardEntries() {
        let session = HubSession(presentation: nil, bundle: nil, embed: false)
        XCTAssertNil(session.back())
        session.visit(.hub)
        session.visit(.channel("news/sports"))
        session.visit(.article("news/sports/a"))
        XCTAssertEqual(session.back(), .channel("news/sports"))
        session.visit(.channel("news/sports"))  // the page the redirect leads to: no new entry
        XCTAssertEqual(session.back(), .hub)
        XCTAssertNil(session.back())
        XCTAssertEqual(session.forward(), .channel("news/sports"))
        XCTAssertTrue(session.canGoForward)
        session.visit(.article("news/tech/d"))  // drops news/sports/a
        XCTAssertFalse(session.canGoForward)
        XCTAssertNil(session.forward())
        XCTAssertEqual(session.historySnapshot.pages, [.hub, .channel("news/sports"), .article("news/tech/d")])
        // visit answers where back and forward lead after it, in the same step.
        XCTAssertEqual(session.visit(.hub), HubSession.Navigation(canGoBack: true, canGoForward: false))
        XCTAssertEqual(session.back(), .article("news/tech/d"))
        XCTAssertEqual(session.visit(.article("news/tech/d")), HubSession.Navigation(canGoBack: true, canGoForward: true))
    }

    func testSessionHistoryIsBounded() {
        let session = HubSession(presentation: nil, bundle: nil, embed: false)
        for number in 0..<(HubSession.historyLimit + 10) { session.visit(.article("a/b/\(number)")) }
        let snapshot = session.historySnapshot
        XCTAssertEqual(snapshot.pages.count, HubSession.historyLimit)
        XCTAssertEqual(snapshot.pages.first, .article("a/b/10"), "the oldest pages were dropped")
        XCTAssertEqual(snapshot.index, HubSession.historyLimit - 1)
        XCTAssertEqual(session.back(), .article("a/b/\(HubSession.historyLimit + 8)"))
    }

    /// Long past the limit (the dropped entries are removed in one go now and then), the history
    /// is still exactly the latest pages, and back stops at the oldest one kept.
    func testSessionHistoryStaysTheLatestPagesLongPastItsLimit() {
        let session = HubSession(presentation: nil, bundle: nil, embed: false)
        let limit = HubSession.historyLimit
        let views = 2 * limit + limit / 2 + 3
        for number in 0..<views { session.visit(.article("a/\(number)")) }
        let snapshot = session.historySnapshot
        XCTAssertEqual(snapshot.pages, (views - limit..<views).map { .article("a/\($0)") })
        XCTAssertEqual(snapshot.index, limit - 1)
        var steps = 0
        while session.back() != nil, steps <= limit { steps += 1 }
        XCTAssertEqual(steps, limit - 1, "back leads through the kept pages only")
        XCTAssertEqual(session.current, .article("a/\(views - limit)"))
        XCTAssertFalse(session.canGoBack)
        XCTAssertTrue(session.canGoForward)
        // A new page after going back drops the forward entries, then the history grows again.
        XCTAssertEqual(session.visit(.hub), HubSession.Navigation(canGoBack: true, canGoForward: false))
        XCTAssertEqual(session.historySnapshot.pages, [.article("a/\(views - limit)"), .hub])
        XCTAssertEqual(session.historySnapshot.index, 1)
    }

    /// A host on a scratch folder whose preloaded bundle has one hub "news", channel "sports", with
    /// articles "a" (Alpha, tag x) and "b" (Beta, tag football).
    private func newsHost() throws -> HubHost {
        let folder = try TestSupport.temporaryFolder(self)
        try TestBundle.write(
            to: folder + "/bundle.sqlite3",
            hubs: [
                .init(
                    "news", title: "News", tags: ["news"],
                    channels: [
                        .init(
                            "sports",
                            articles: [
                                .init("a", title: "Alpha", tags: ["x"], body: "<p>Alpha body</p>"),
                                .init("b", title: "Beta", tags: ["football"], body: "<p>Beta body</p>")
                            ])
                    ])
            ])
        try TestSupport.write("data_dir: data\nplugins: []\nhub: {preloaded_bundle: bundle.sqlite3}\n", to: folder + "/plugins.yaml")
        return try HubHost(manifestPath: folder + "/plugins.yaml")
    }

    /// Each page is rendered once per (bundle, page, tailoring, embed) and served from memory to
    /// every session after that, with that session's id and chrome spliced in.
    func testPagesAreRenderedOncePerKeyAndCarryEachSessionsOwnBits() throws {
        let host = try newsHost()
        defer { host.shutdown() }
        let engine = try XCTUnwrap(try host.hub())
        let web = WebContentHub(engine: engine, events: try host.events())
        func page(_ response: HubWebResponse) -> String { String(decoding: response.body, as: UTF8.self) }

        let hub = page(web.present())
        let first = try XCTUnwrap(web.currentSession)
        XCTAssertTrue(hub.contains(#"data-session="\#(first.id)""#), hub)
        XCTAssertTrue(hub.contains(#"<span id="hubhost-back" class="hubhost-button hubhost-disabled">"#), "nothing to go back to: \(hub)")
        let channel = page(web.show(.channel("news/sports")))
        XCTAssertTrue(channel.contains(#"<a id="hubhost-back" class="hubhost-button" href="/hub/back">"#), channel)
        XCTAssertEqual(page(web.show(.article("news/sports/b"))).components(separatedBy: "Beta body").count, 2)
        XCTAssertEqual(web.pageCache.counts.renders, 3)

        // The same pages again, in this session and in a new one with the same tailoring: no rendering.
        XCTAssertEqual(page(web.show(.channel("news/sports"))), channel)
        let again = page(web.present())
        let second = try XCTUnwrap(web.currentSession)
        XCTAssertNotEqual(first.id, second.id)
        XCTAssertTrue(again.contains(#"data-session="\#(second.id)""#) && !again.contains(first.id), again)
        XCTAssertEqual(again, hub.replacingOccurrences(of: first.id, with: second.id))
        XCTAssertEqual(web.pageCache.counts.renders, 3)
        XCTAssertEqual(web.pageCache.counts.hits, 2)

        // Another tailoring renders its own hub and channel pages (football first); article pages are shared.
        let football = page(web.present(tags: ["football"]))
        XCTAssertLessThan(try XCTUnwrap(football.range(of: ">Beta<")).lowerBound, try XCTUnwrap(football.range(of: ">Alpha<")).lowerBound)
        XCTAssertEqual(web.pageCache.counts.renders, 4)
        _ = web.show(.article("news/sports/b"))
        XCTAssertEqual(web.pageCache.counts.renders, 4)
        // Embed sessions have their own pages, without the chrome.
        let embedded = page(web.present(embed: true))
        XCTAssertFalse(embedded.contains("hubhost-chrome"), embedded)
        XCTAssertTrue(embedded.contains(#"data-embed="1""#), embedded)
        XCTAssertEqual(web.pageCache.counts.renders, 5)
        // A page the bundle does not have is not kept.
        XCTAssertEqual(web.show(.article("news/sports/nope")).status, 404)
        XCTAssertEqual(web.pageCache.counts.pages, 5)
    }

    /// The memory-only path (what the server runs on the event loop) answers a rendered page with
    /// the same status, headers and bytes as `show`, does the same bookkeeping (history, the
    /// view's records), and declines, changing nothing, what it cannot answer from memory.
    func testAPageFromMemoryIsTheSameAnswerAsShow() throws {
        let host = try newsHost()
        defer { host.shutdown() }
        let engine = try XCTUnwrap(try host.hub())
        try engine.users.createUser(id: "ann")
        try engine.users.activate("ann")
        let web = WebContentHub(engine: engine, events: try host.events())
        XCTAssertNil(web.showFromMemory(.hub), "no session yet: nothing to answer from memory")
        XCTAssertNil(web.currentSession)

        _ = web.present()
        let session = try XCTUnwrap(web.currentSession)
        XCTAssertNil(web.showFromMemory(.channel("news/sports")), "not rendered yet")
        XCTAssertEqual(session.historySnapshot.pages, [.hub], "a declined page is not visited")
        let shown = web.show(.channel("news/sports"))
        let fromMemory = try XCTUnwrap(web.showFromMemory(.channel("news/sports")))
        XCTAssertEqual(fromMemory.status, 200)
        XCTAssertEqual(fromMemory.body, shown.body, "the same bytes")
        XCTAssertEqual(fromMemory.headers, shown.headers)
        XCTAssertEqual(fromMemory.contentType, shown.contentType)
        XCTAssertTrue(String(decoding: fromMemory.body, as: UTF8.self).contains(#"data-session="\#(session.id)""#))

        // An article from memory is read like one shown: history, learning, "Article Viewed" on leaving.
        let article = web.show(.article("news/sports/b"))
        _ = web.show(.hub)
        let again = try XCTUnwrap(web.showFromMemory(.article("news/sports/b")))
        XCTAssertEqual(article.status, 200)
        XCTAssertEqual(String(decoding: again.body, as: UTF8.self).components(separatedBy: "Beta body").count, 2)
        XCTAssertEqual(session.historySnapshot.pages, [.hub, .channel("news/sports"), .article("news/sports/b"), .hub, .article("news/sports/b")])
        XCTAssertNotNil(web.showFromMemory(.channel("news/sports")))
        XCTAssertTrue(engine.viewRecorder.waitUntilDrained())
        XCTAssertEqual(try engine.users.tagCounts(of: "ann"), ["football": 2], "both readings of Beta taught the profile")
        XCTAssertEqual(engine.viewRecorder.counts.pending, 0)
        XCTAssertEqual(
            engine.viewRecorder.counts.recorded, 7,
            "Hub Presented, the channel twice, Beta, the hub (leaving Beta), Beta, the channel (leaving Beta)")
        XCTAssertEqual(web.pageCache.counts.renders, 3)
    }

    func testPageCacheEvictsTheLeastRecentlyUsedBeyondItsBytes() {
        let cache = HubPageCache(byteLimit: 1_000)
        func page(_ size: Int) -> RenderedHubPage {
            RenderedHubPage(head: Array(repeating: 65, count: size), middle: [], main: [], title: "")
        }
        func key(_ number: Int) -> HubPageCache.Key { .init(bundle: 1, location: .article("a/b/\(number)"), tailoring: nil, embed: false) }
        for number in 0..<4 { XCTAssertNotNil(cache.page(key(number)) { page(200) }) }
        XCTAssertNotNil(cache.cached(key(0)))  // used: 1 is now the least recently used
        XCTAssertNotNil(cache.page(key(4)) { page(300) })  // 1,100 bytes: down to 750
        XCTAssertNil(cache.cached(key(1)))
        XCTAssertNil(cache.cached(key(2)))
        XCTAssertNotNil(cache.cached(key(0)))
        XCTAssertNotNil(cache.cached(key(4)))
        XCTAssertLessThanOrEqual(cache.counts.bytes, 1_000)
        // Another bundle's page under the same page key is another entry.
        var other = key(4)
        other.bundle = 2
        XCTAssertNil(cache.cached(other))
    }

    func testIDsFromPathsRejectTraversal() {
        XCTAssertEqual(HubPageLocation.decodeID("news/sports"), "news/sports")
        XCTAssertEqual(HubPageLocation.decodeID("news%2Fsports%20x"), "news/sports x")
        for bad in ["", "..", "../x", "a/../b", "%2e%2e/x", "a/%2E%2E", "/etc/passwd", "%2Fetc", "a//b", "a/./b", "a\\b", "a%00b", "a/"] {
            XCTAssertNil(HubPageLocation.decodeID(Substring(bad)), bad)
        }
        // Dots are refused only as a whole segment of one or two.
        XCTAssertEqual(HubPageLocation.decodeID(".x/..y/.../b.c"), ".x/..y/.../b.c")
        XCTAssertEqual(HubPageLocation.channel("a b/c?d").path, "/hub/channel/a%20b/c%3Fd")
    }

    func testPolicyForBothContentSources() {
        var settings = HubSettings()
        XCTAssertEqual(
            ContentSecurityPolicy(settings: settings).header,
            "default-src * data: blob: 'unsafe-inline' 'unsafe-eval'; frame-ancestors 'self'; report-uri /hub/csp-report")
        settings.contentSource = .localOnly
        settings.whitelistDomains = ["cdn.example.com", "127.0.0.2", "bad domain;"]
        settings.whitelistURLs = [
            "https://img.example.com/a.png", "https://img.example.com/q.png?v=1", "https://x.example.com/p;q,r#frag", "ftp://x/y"
        ]
        let policy = ContentSecurityPolicy(settings: settings)
        XCTAssertEqual(
            policy.allowedSources,
            [
                "cdn.example.com:*", "*.cdn.example.com:*", "127.0.0.2:*",
                "https://img.example.com/a.png", "https://x.example.com/p%3Bq%2Cr"
            ])
        XCTAssertTrue(policy.header.hasPrefix("default-src 'self' cdn.example.com:* "), policy.header)
        XCTAssertTrue(policy.header.contains("img-src 'self' data: cdn.example.com:*"), policy.header)
        XCTAssertTrue(policy.header.contains("object-src 'none'"))
        XCTAssertTrue(policy.header.hasSuffix("report-uri /hub/csp-report"))
        XCTAssertFalse(policy.header.contains("q.png"), "a URL with a query goes through hubhost's verbatim check instead")
        XCTAssertTrue(ContentSecurityPolicy.needsVerbatimCheck("https://img.example.com/q.png?v=1", settings))
        XCTAssertFalse(ContentSecurityPolicy.needsVerbatimCheck("https://img.example.com/q.png?v=2", settings))
        XCTAssertFalse(ContentSecurityPolicy.needsVerbatimCheck("https://img.example.com/q.png?V=1", settings))
    }

    func testLinkRewriting() {
        var settings = HubSettings()
        settings.customURLSchemes = ["myapp"]
        settings.contentSource = .localOnly
        settings.whitelistURLs = ["https://img.example.com/q.png?v=1&w=2"]
        let rewriter = HubLinkRewriter(settings: settings)
        let html = """
            <a href="myapp://checkout?sku=1">Buy</a> <a class='x' href='MyApp://y'>Y</a> <img src="https://img.example.com/q.png?v=1&amp;w=2">
            <img src="https://img.example.com/q.png?v=2"> <a href="zbimdb://article/news/a b">A</a> <a href="https://example.com/">W</a>
            <img src="myapp://not-a-link"> <p>href="myapp://text"</p>
            """
        let out = rewriter.rewrite(html)
        XCTAssertTrue(out.contains(#"<a href="/hub/app-action?url=myapp%3A%2F%2Fcheckout%3Fsku%3D1">Buy</a>"#), out)
        XCTAssertTrue(out.contains(#"<a class='x' href="/hub/app-action?url=MyApp%3A%2F%2Fy">"#), out)
        XCTAssertTrue(out.contains(#"src="/hub/whitelisted?url=https%3A%2F%2Fimg.example.com%2Fq.png%3Fv%3D1%26w%3D2""#), out)
        XCTAssertTrue(out.contains(#"<img src="https://img.example.com/q.png?v=2">"#), out)
        XCTAssertTrue(out.contains(#"href="/hub/article/news/a%20b""#), out)
        XCTAssertTrue(out.contains(#"<a href="https://example.com/">W</a>"#), out)
        XCTAssertTrue(out.contains(#"<img src="myapp://not-a-link">"#), "only links are app actions")
        XCTAssertTrue(out.contains(#"<p>href="myapp://text"</p>"#), "text that is no attribute stays: \(out)")
    }

    func testEscapingAndStatusTemplates() throws {
        XCTAssertEqual(HubPageTemplates.escape(#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        let folder = try TestSupport.temporaryFolder(self)
        let builtIn = HubPageTemplates.statusView(
            .downloading, message: "<b>", percent: 42, templatesDirectory: folder, colorScheme: .light, chrome: "")
        XCTAssertTrue(builtIn.contains(#"data-percent="42""#) && builtIn.contains("&lt;b&gt;") && builtIn.contains("scheme-light"), builtIn)
        try TestSupport.write("E: {{message}}", to: folder + "/error.html")
        XCTAssertEqual(
            HubPageTemplates.statusView(.error, message: "a & b", percent: nil, templatesDirectory: folder, colorScheme: .dark, chrome: ""),
            "E: a &amp; b")
    }

    func testStatusViewsFollowDownloadProgressAndErrors() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("data_dir: data\nplugins: []\nhub: {color_scheme: light}\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let engine = try XCTUnwrap(try host.hub())
        let web = WebContentHub(engine: engine, events: try host.events())
        func page(_ response: HubWebResponse) -> String { String(decoding: response.body, as: UTF8.self) }

        let checking = web.present()
        XCTAssertTrue(page(checking).contains(#"data-status="checking""#), page(checking))
        XCTAssertTrue(checking.headers["Content-Security-Policy"]?.contains("report-uri /hub/csp-report") ?? false)
        XCTAssertTrue(engine.state.isDisplayingContentHub)

        engine.setState(\.isDownloadingContent, true)
        host.notifications.post(HostNotification.Name.downloadProgressChanged, ["percent": 37])
        let downloading = page(web.present())
        XCTAssertTrue(downloading.contains(#"data-percent="37""#) && downloading.contains("37%"), downloading)

        engine.setState(\.isDownloadingContent, false)
        host.notifications.post(HostNotification.Name.error, ["source": "delivery", "message": "metadata <bad>"])
        let failed = web.present()
        XCTAssertEqual(failed.status, 503)
        XCTAssertTrue(page(failed).contains("metadata &lt;bad&gt;"), page(failed))

        XCTAssertEqual(web.close().status, 200)
        XCTAssertFalse(engine.state.isDisplayingContentHub)
        XCTAssertNil(web.currentSession)
    }
}
