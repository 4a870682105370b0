import Foundation
import XCTest

@testable import HubHostKit

/// The web Content Hub in a real browser: serve's API and services listening in this process
/// (InProcessAPI) with a test bundle (hub.preloaded_bundle), driven by headless Chromium (Debian's
/// `chromium`), with second loopback servers for external resources.
final class WebHubBrowserTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
    }

    // MARK: Tailored order, navigation, embed, close, notifications

    func testTailoredOrderNavigationBackForwardEmbedAndClose() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        let external = try TestCollector()
        defer { external.stop() }
        try writeBundle(techBody: #"<p>Delta body</p><img id="ext" src="\#(external.url("/external.gif"))">"#)
        try await HubServer.run(folder: folder, hub: "preloaded_bundle: bundle.sqlite3") { server in

            // Present with a tags override: football articles first, ties in bundle order.
            let hub = try server.browse(server.base + "/hub?tags=football")
            XCTAssertTrue(hub.contains(#"data-hub-kind="hub""#), hub)
            try Self.assertOrder(["Beta", "Gamma", "Alpha"], in: hub)
            XCTAssertTrue(hub.contains("News &amp; &lt;Views&gt;"), "the hub title is escaped: \(hub)")
            XCTAssertTrue(hub.contains(#"id="hubhost-chrome""#))
            XCTAssertEqual(try server.state()["isDisplayingContentHub"], true)
            XCTAssertEqual(try server.state()["isReady"], true)

            // hub -> channel -> article, in the same session.
            let channel = try server.browse(server.base + "/hub/channel/news/sports")
            XCTAssertTrue(channel.contains(#"id="channel-title" data-channel-id="news/sports""#), channel)
            try Self.assertOrder(["Beta", "Gamma", "Alpha"], in: channel)
            let article = try server.browse(server.base + "/hub/article/news/sports/c")
            XCTAssertTrue(article.contains("Gamma body"), article)
            XCTAssertTrue(article.contains(#"href="/hub/article/news/tech/d""#), "zbimdb:// links lead to hub pages: \(article)")

            // Back twice, forward once; a new page after going back drops the forward entry.
            XCTAssertTrue(try server.browse(server.base + "/hub/back").contains(#"data-hub-kind="channel""#))
            XCTAssertTrue(try server.browse(server.base + "/hub/back").contains(#"data-hub-kind="hub""#))
            XCTAssertTrue(try server.browse(server.base + "/hub/forward").contains(#"data-hub-kind="channel""#))
            let tech = try server.browse(server.base + "/hub/article/news/tech/d")
            XCTAssertTrue(tech.contains("Delta body"), tech)
            let stillTech = try server.browse(server.base + "/hub/forward")
            XCTAssertTrue(stillTech.contains(#"data-id="news/tech/d""#), "no forward entry is left: \(stillTech)")
            XCTAssertTrue(try server.browse(server.base + "/hub/back").contains(#"data-id="news/sports""#))
            // external_allowed (default): the external image loaded.
            XCTAssertTrue(external.paths.contains("/external.gif"), "\(external.paths)")

            // Each page view was a ContentTypeChanged notification (read back with hub watch --replay).
            let watched = try TestSupport.hubhost(
                [
                    "hub", "watch", "--url", server.base, "--replay", "--json",
                    "--name", "ContentTypeChanged", "--count", "9", "--timeout", "20"
                ], timeout: 60)
            XCTAssertEqual(watched.status, 0, watched.stderr)
            let views = watched.stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["payload"] as? [String: String]
            }
            XCTAssertEqual(
                views.map { $0["type"] ?? "" }, ["hub", "channel", "article", "channel", "hub", "channel", "article", "article", "channel"])
            XCTAssertEqual(views.first?["url"], "zbimdb://hub/news")
            XCTAssertEqual(views.dropFirst(2).first?["url"], "zbimdb://article/news/sports/c")
            XCTAssertEqual(views.dropFirst(2).first?["title"], "Gamma")

            // A new /hub replaces the session (its history starts again); ?embed=1 drops the chrome.
            let embedded = try server.browse(server.base + "/hub?embed=1")
            XCTAssertTrue(embedded.contains(#"data-embed="1""#), embedded)
            XCTAssertFalse(embedded.contains("hubhost-chrome"), embedded)
            XCTAssertTrue(
                try server.browse(server.base + "/hub/back").contains(#"data-hub-kind="hub""#), "nothing before the new session's first page")
            try Self.assertOrder(["Alpha", "Beta", "Gamma"], in: embedded)  // no tags: bundle order

            // Closing ends the session.
            XCTAssertTrue(try server.browse(server.base + "/hub/close").contains("hubhost-closed"))
            XCTAssertEqual(try server.state()["isDisplayingContentHub"], false)
        }
    }

    // MARK: The active user, entry point and metrics

    func testPresentsForTheActiveUserRecordsReadingAndMetrics() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try writeBundle(techBody: "<p>d</p>")
        try await HubServer.run(folder: folder, hub: "preloaded_bundle: bundle.sqlite3") { server in
            XCTAssertEqual(try server.call("POST", "/v1/users", #"{"id": "reader", "tags": ["x"]}"#).status, 201)
            XCTAssertEqual(try server.call("POST", "/v1/users/reader/activate").status, 200)

            // Tailored for the reader's counts {x: 1}: Alpha and Gamma (x) before Beta, in bundle order.
            try Self.assertOrder(["Alpha", "Gamma", "Beta"], in: try server.browse(server.base + "/hub?entry_point=banner"))
            XCTAssertTrue(try server.browse(server.base + "/hub/article/news/sports/b").contains("Beta body"))
            XCTAssertTrue(try server.browse(server.base + "/hub/channel/news/sports").contains(#"data-hub-kind="channel""#))
            // Page views are recorded off the request path (HubViewRecorder): wait until they are.
            XCTAssertEqual(try server.drainViews(), true)
            // Reading Beta taught the profile its tag.
            let counts = try server.call("GET", "/v1/users/reader/tag-counts").json as? [String: Int]
            XCTAssertEqual(counts, ["x": 1, "football": 1])

            let events = try server.call("GET", "/v1/events?limit=100").json as? [[String: Any]] ?? []
            func named(_ name: String) -> [[String: Any]] {
                events.filter { $0["name"] as? String == name }.compactMap { $0["attributes"] as? [String: Any] }
            }
            XCTAssertEqual(named("Hub Presented").first?["Entry Point"] as? String, "banner")
            XCTAssertEqual(named("Channel Viewed").first?["Channel"] as? String, "news/sports")
            XCTAssertEqual(named("Channel Viewed").first?["Entry Point"] as? String, "banner")
            let read = named("Article Viewed")
            XCTAssertEqual(read.count, 1, "tracked once, when the reader left the article: \(read)")
            XCTAssertEqual(read.first?["Article"] as? String, "news/sports/b")
            XCTAssertNotNil(read.first?["Time Spent"] as? Int, "\(read)")

            // The entry point was used once: the next presentation has none, and the new counts
            // {x: 1, football: 1} put Gamma (2) first.
            try Self.assertOrder(["Gamma", "Alpha", "Beta"], in: try server.browse(server.base + "/hub"))
            XCTAssertEqual(try server.drainViews(), true)  // "Hub Presented" is recorded in order with the views
            let presented = (try server.call("GET", "/v1/events?limit=100").json as? [[String: Any]] ?? [])
                .filter { $0["name"] as? String == "Hub Presented" }.compactMap { $0["attributes"] as? [String: Any] }
            XCTAssertEqual(presented.count, 2)
            XCTAssertEqual(presented.filter { $0["Entry Point"] == nil }.count, 1, "\(presented)")
            // A URI opens that item; one that is not in the bundle shows the error view.
            XCTAssertTrue(
                try server.browse(server.base + "/hub?uri=" + Self.query("zbimdb://article/news/tech/d")).contains(#"data-id="news/tech/d""#))
            XCTAssertTrue(try server.browse(server.base + "/hub?uri=" + Self.query("zbimdb://article/news/nope")).contains(#"data-status="error""#))
        }
    }

    /// The active user is cached in serve's memory, yet a switch made by the CLI (another
    /// process) is what the next page view uses: its tailoring, and whose profile it teaches.
    func testAnActiveUserSwitchedByTheCLIIsUsedByTheNextPageView() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try writeBundle(techBody: "<p>d</p>")
        try await HubServer.run(folder: folder, hub: "preloaded_bundle: bundle.sqlite3") { server in
            func cli(_ arguments: [String]) throws {
                try TestSupport.hubhost(["users"] + arguments, manifest: folder + "/plugins.yaml", timeout: 60).expect()
            }
            try cli(["create", "--id", "reader", "--tags", "x"])
            try cli(["create", "--id", "fan", "--tags", "football"])
            try cli(["activate", "reader"])
            func hub() throws -> String {
                String(decoding: try HTTPFetcher().fetch("GET", server.base + "/hub", timeoutSeconds: 10).get().body, as: UTF8.self)
            }
            func view(_ path: String) throws {
                XCTAssertEqual(try HTTPFetcher().fetch("GET", server.base + path, timeoutSeconds: 10).get().status, 200, path)
            }

            try Self.assertOrder(["Alpha", "Gamma", "Beta"], in: try hub())  // reader {x: 1}
            try view("/hub/article/news/sports/a")  // rendered now
            try view("/hub/channel/news/sports")
            try view("/hub/article/news/sports/a")  // from memory: the reading counts again
            XCTAssertEqual(try server.drainViews(), true)
            XCTAssertEqual(try server.call("GET", "/v1/users/reader/tag-counts").json as? [String: Int], ["x": 3])

            // Another process switches to fan {football: 1}: the next hub is fan's, and fan learns.
            try cli(["activate", "fan"])
            try Self.assertOrder(["Beta", "Gamma", "Alpha"], in: try hub())
            try view("/hub/article/news/sports/a")  // cached since the first session: answered from memory
            XCTAssertEqual(try server.drainViews(), true)
            XCTAssertEqual(try server.call("GET", "/v1/users/fan/tag-counts").json as? [String: Int], ["football": 1, "x": 1])
            XCTAssertEqual(try server.call("GET", "/v1/users/reader/tag-counts").json as? [String: Int], ["x": 3], "the previous user learns no more")
            XCTAssertEqual((try server.call("GET", "/v1/users/active").json as? [String: String])?["active"], "fan")

            // And back, with no page view in between: serve's cached answer is not stale either.
            try cli(["activate", "reader"])
            XCTAssertEqual((try server.call("GET", "/v1/users/active").json as? [String: String])?["active"], "reader")
            try Self.assertOrder(["Alpha", "Gamma", "Beta"], in: try hub())
        }
    }

    /// serve's graceful shutdown (as on SIGTERM) records the page views still queued, with no drain
    /// asked for: their metrics are in the event store and their readings in the user's counts.
    func testGracefulShutdownRecordsThePageViewsStillQueued() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try writeBundle(techBody: "<p>d</p>")
        try await HubServer.run(folder: folder, hub: "preloaded_bundle: bundle.sqlite3") { server in
            XCTAssertEqual(try server.call("POST", "/v1/users", #"{"id": "reader", "tags": ["x"]}"#).status, 201)
            XCTAssertEqual(try server.call("POST", "/v1/users/reader/activate").status, 200)
            for path in ["/hub?entry_point=banner", "/hub/article/news/sports/b", "/hub/channel/news/sports", "/hub/article/news/sports/c"] {
                XCTAssertEqual(try HTTPFetcher().fetch("GET", server.base + path, timeoutSeconds: 10).get().status, 200, path)
            }
        }
        // serve stopped as on SIGTERM: `listening` returned once its services stopped without an error,
        // by its own graceful shutdown.
        try await TestSupport.offPool {
            func cli(_ arguments: [String]) throws -> Any? {
                try TestSupport.hubhost(arguments + ["--json"], manifest: folder + "/plugins.yaml", timeout: 60).expect().json
            }
            let events = try XCTUnwrap(try cli(["events", "list", "--limit", "100"]) as? [[String: Any]])
            func named(_ name: String) -> [[String: Any]] {
                events.filter { $0["name"] as? String == name }.compactMap { $0["attributes"] as? [String: Any] }
            }
            XCTAssertEqual(named("Hub Presented").count, 1, "\(events)")
            XCTAssertEqual(named("Channel Viewed").first?["Entry Point"] as? String, "banner")
            XCTAssertEqual(named("Article Viewed").map { $0["Article"] as? String }, ["news/sports/b"], "Gamma is still on screen")
            // Beta (football) and Gamma (football, x) were read.
            XCTAssertEqual(try cli(["users", "tag-counts", "reader"]) as? [String: Int], ["x": 2, "football": 2])
        }
    }

    // MARK: Paths

    func testOnlyBundleItemsAndResourcesAreServed() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try writeBundle(techBody: "<p>d</p>")
        try TestSupport.write("SECRET-FILE-CONTENT", to: folder + "/secret.txt")
        try await HubServer.run(folder: folder, hub: "preloaded_bundle: bundle.sqlite3") { server in
            XCTAssertEqual(try Self.rawGET(server.port, "/hub").status, 200)
            let resource = try Self.rawGET(server.port, "/hub/resources/dot.svg")
            XCTAssertEqual(resource.status, 200)
            XCTAssertTrue(resource.text.contains("<circle"), resource.text)
            XCTAssertTrue(resource.text.lowercased().contains("content-type: image/svg+xml"), resource.text)
            for path in [
                "/hub/resources/../secret.txt", "/hub/resources/%2e%2e/secret.txt", "/hub/resources/%2E%2E%2Fsecret.txt",
                "/hub/resources/..%2f..%2fsecret.txt", "/hub/resources//\(folder)/secret.txt", "/hub/resources/\(folder)/secret.txt",
                "/hub/article/../../secret.txt", "/hub/article/%2e%2e/%2e%2e/secret.txt", "/hub/channel/news/../news/sports",
                "/hub/../secret.txt", "/secret.txt", "/hub/resources/nope.css", "/hub/article/news/sports/nope",
                "/hub/article/" + folder + "/secret.txt"
            ] {
                let answer = try Self.rawGET(server.port, path)
                XCTAssertEqual(answer.status, 404, "\(path): \(answer.text)")
                XCTAssertFalse(answer.text.contains("SECRET-FILE-CONTENT"), path)
            }
            // Ids with reserved characters still work when percent-encoded.
            XCTAssertEqual(try Self.rawGET(server.port, "/hub/channel/news/sports").status, 200)
            XCTAssertEqual(try Self.rawGET(server.port, "/hub/channel/news%2Fsports").status, 200)
        }
    }

    // MARK: Security policy

    func testLocalOnlyBlocksExternalResourcesReportsThemAndLoadsWhitelistedOnes() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        let external = try TestCollector()
        let domain = try TestCollector(address: "127.0.0.2")
        defer {
            external.stop()
            domain.stop()
        }
        try writeBundle(
            techBody: """
                <p>Delta body</p>
                <img id="allowed" src="\(external.url("/allowed.gif"))">
                <img id="blocked" src="\(external.url("/blocked.gif"))">
                <img id="query-allowed" src="\(external.url("/q.gif?v=1&amp;w=2"))">
                <img id="query-blocked" src="\(external.url("/q.gif?v=2"))">
                <img id="domain" src="http://127.0.0.2:\(domain.port)/domain.gif">
                <script src="\(external.url("/blocked.js"))"></script>
                <img id="local" src="resources/dot.svg">
                """)
        try await HubServer.run(
            folder: folder,
            hub: """
                preloaded_bundle: bundle.sqlite3
                  content_source: local_only
                  color_scheme: light
                  whitelist_urls: ["\(external.url("/allowed.gif"))", "\(external.url("/q.gif?v=1&w=2"))"]
                  whitelist_domains: ["127.0.0.2"]
                """
        ) { server in
            XCTAssertTrue(try server.browse(server.base + "/hub").contains("scheme-light"))
            let page = try server.browse(server.base + "/hub/article/news/tech/d")
            XCTAssertTrue(page.contains("Delta body"), page)

            // The browser's reports reach hubhost (bounded wait).
            var reports: [[String: Any]] = []
            let start = Date()
            while Date().timeIntervalSince(start) < 20 {
                reports = try server.get("/v1/hub/csp-reports") as? [[String: Any]] ?? []
                if Set(reports.compactMap { $0["blocked-uri"] as? String }).count >= 3 { break }
                Thread.sleep(forTimeInterval: 0.2)
            }
            let blocked = Set(reports.compactMap { $0["blocked-uri"] as? String })
            XCTAssertTrue(blocked.contains(external.url("/blocked.gif")), "\(blocked)")
            XCTAssertTrue(blocked.contains(external.url("/blocked.js")), "\(blocked)")
            XCTAssertTrue(blocked.contains(external.url("/q.gif?v=2")), "the same path with another query is blocked: \(blocked)")
            XCTAssertFalse(blocked.contains { $0.contains("allowed.gif") || $0.contains("domain.gif") || $0.contains("dot.svg") }, "\(blocked)")

            // The external server saw the whitelisted requests and none of the blocked ones.
            let seen = external.paths
            XCTAssertTrue(seen.contains("/allowed.gif"), "\(seen)")
            XCTAssertTrue(seen.contains("/q.gif?v=1&w=2"), "the verbatim whitelisted URL, through hubhost: \(seen)")
            XCTAssertFalse(seen.contains("/blocked.gif"), "\(seen)")
            XCTAssertFalse(seen.contains("/blocked.js"), "\(seen)")
            XCTAssertFalse(seen.contains("/q.gif?v=2"), "\(seen)")
            XCTAssertTrue(domain.paths.contains("/domain.gif"), "the whitelisted domain: \(domain.paths)")

            // hubhost fetches only verbatim whitelisted URLs for pages.
            XCTAssertEqual(try Self.rawGET(server.port, "/hub/whitelisted?url=" + Self.query(external.url("/q.gif?v=2"))).status, 403)
            XCTAssertFalse(external.paths.contains("/q.gif?v=2"))

            // Each report was also a ContentSecurityViolation notification.
            let watched = try TestSupport.hubhost(
                [
                    "hub", "watch", "--url", server.base, "--replay",
                    "--name", "ContentSecurityViolation", "--count", "3", "--timeout", "20"
                ], timeout: 60)
            XCTAssertEqual(watched.status, 0, watched.stderr)
            XCTAssertTrue(watched.stdout.contains("blocked-uri=\(external.url("/blocked.js"))"), watched.stdout)
        }
    }

    // MARK: Custom URL schemes

    func testCustomSchemeLinksBecomeAppActions() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try writeBundle(
            techBody: """
                <p>Delta body</p>
                <a id="buy" href="myapp://checkout?sku=1">Buy</a>
                <a id="web" href="https://example.invalid/page">Web</a>
                <script>
                  window.addEventListener('load', function () {
                    var later = document.createElement('a');
                    later.href = 'myapp://later?x=2';
                    later.textContent = 'later';
                    document.body.appendChild(later);
                    later.click();
                    setTimeout(function () { document.getElementById('buy').click(); }, 200);
                  });
                </script>
                """)
        try await HubServer.run(
            folder: folder,
            hub: """
                preloaded_bundle: bundle.sqlite3
                  content_source: local_only
                  custom_url_schemes: [myapp]
                """
        ) { server in
            XCTAssertEqual(try Self.rawGET(server.port, "/hub").status, 200)
            let page = try Self.rawGET(server.port, "/hub/article/news/tech/d").text
            XCTAssertTrue(page.contains(#"href="/hub/app-action?url=myapp%3A%2F%2Fcheckout%3Fsku%3D1""#), "rewritten at render time: \(page)")
            XCTAssertTrue(page.contains(#"href="https://example.invalid/page""#), "other links stay as written")

            // The page clicks both links (the rendered one, and one its script makes), which hubhost.js
            // POSTs: the browser runs until both app actions arrived (bounded by the watch's timeout),
            // then it is stopped.
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: TestSupport.hubhostExecutable)
            watch.arguments = ["hub", "watch", "--url", server.base, "--json", "--name", "AppAction", "--count", "2", "--timeout", "30"]
            let out = Pipe()
            watch.standardOutput = out
            watch.standardError = FileHandle.nullDevice
            try watch.run()
            Thread.sleep(forTimeInterval: 0.5)  // connected before the browser starts (replay would also cover it)
            let browser = try server.openInBrowser(server.base + "/hub/article/news/tech/d")
            let watched = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            watch.waitUntilExit()
            kill(browser.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(10)
            while browser.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if browser.isRunning { kill(browser.processIdentifier, SIGKILL) }
            browser.waitUntilExit()
            XCTAssertEqual(watch.terminationStatus, 0, watched)
            let urls = Set(
                watched.split(separator: "\n").compactMap { line in
                    ((try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["payload"] as? [String: String])?["url"]
                })
            XCTAssertEqual(urls, ["myapp://checkout?sku=1", "myapp://later?x=2"])
            let events = try server.get("/v1/events?limit=100") as? [[String: Any]] ?? []
            let actions = events.filter { $0["name"] as? String == "App Action" }
            XCTAssertEqual(Set(actions.compactMap { ($0["attributes"] as? [String: Any])?["URL"] as? String }), urls)
            // A scheme that is not registered is no app action.
            XCTAssertEqual(try server.call("POST", "/hub/app-action?url=" + Self.query("other://x")).status, 400)
            // Following the rendered link by GET (what an <img> or a link on any other site does) is
            // refused, and nothing more is sent to the app.
            XCTAssertEqual(try Self.rawGET(server.port, "/hub/app-action?url=" + Self.query("myapp://checkout?sku=1")).status, 405)
            let eventsAfterGet = try server.get("/v1/events?limit=100") as? [[String: Any]] ?? []
            XCTAssertEqual(eventsAfterGet.filter { $0["name"] as? String == "App Action" }.count, actions.count)
            XCTAssertEqual((try server.get("/v1/hub/csp-reports") as? [Any])?.count, 0, "nothing was blocked")
        }
    }

    // MARK: Status views

    func testStatusViewWithoutContentAndItsTemplate() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try await HubServer.run(folder: folder, hub: "custom_url_schemes: [myapp]") { server in
            let checking = try server.browse(server.base + "/hub", virtualTime: false)  // it refreshes itself every 2 s
            XCTAssertTrue(checking.contains(#"data-status="checking""#), checking)
            XCTAssertTrue(checking.contains("scheme-dark"), checking)
            XCTAssertEqual(try server.state()["isReady"], false)
            XCTAssertEqual(try server.state()["isDisplayingContentHub"], true, "a status view is a hub session too")
            try TestSupport.write(
                #"<html><body><p id="mine">Mine: {{message}} ({{percent}})</p></body></html>"#,
                to: folder + "/data/hub/templates/checking.html")
            let custom = try server.browse(server.base + "/hub", virtualTime: false)
            XCTAssertTrue(custom.contains("Mine: Checking for content… ()"), custom)
        }
    }

    // MARK: Helpers

    /// news (hub) -> sports [a (x), b (football), c (football, x)], tech [d]; the title needs escaping.
    private func writeBundle(techBody: String) throws {
        let link = #"<p><a href="zbimdb://article/news/tech/d">Delta</a></p>"#
        try TestBundle.write(
            to: folder + "/bundle.sqlite3",
            hubs: [
                .init(
                    "news", title: "News & <Views>", tags: ["news"],
                    channels: [
                        .init(
                            "sports",
                            articles: [
                                .init("a", title: "Alpha", tags: ["x"], body: "<p>Alpha body</p>"),
                                .init("b", title: "Beta", tags: ["football"], body: "<p>Beta body</p>"),
                                .init("c", title: "Gamma", tags: ["football", "x"], body: "<p>Gamma body</p>" + link)
                            ]),
                        .init("tech", articles: [.init("d", title: "Delta", body: techBody)])
                    ])
            ],
            resources: [
                (
                    path: "resources/dot.svg", mimeType: "image/svg+xml",
                    data: Data(#"<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><circle cx="4" cy="4" r="4"/></svg>"#.utf8)
                )
            ])
    }

    private static func assertOrder(_ titles: [String], in html: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let positions = titles.map { html.range(of: ">\($0)</a>")?.lowerBound }
        XCTAssertFalse(positions.contains(nil), "\(titles) are not all on the page: \(html)", file: file, line: line)
        let found = positions.compactMap { $0 }
        XCTAssertEqual(found, found.sorted(), "expected the order \(titles): \(html)", file: file, line: line)
    }

    private static func query(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    /// A GET with the path sent exactly as given (no client-side normalization of `..`).
    private static func rawGET(_ port: Int, _ path: String) throws -> (status: Int, text: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw NSError(domain: "rawGET", code: Int(errno)) }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<10_000 {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: data, as: UTF8.self)
        let status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return (status, text)
    }
}

/// serve's API and services on a plugins.yaml with the given `hub:` block, listening in this process
/// on a free loopback port (InProcessAPI), and the browser that opens its pages.
private struct HubServer: Sendable {
    let port: Int
    let folder: String
    var base: String { "http://127.0.0.1:\(port)" }

    /// Runs `body` off Swift concurrency's threads while the server listens; stopped (gracefully, as
    /// on SIGTERM) when it returns.
    static func run(folder: String, hub: String, _ body: @escaping @Sendable (HubServer) throws -> Void) async throws {
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {flush_interval: 1 hr}
            plugins: []
            hub:
              \(hub)
            """, to: folder + "/plugins.yaml")
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool { try body(HubServer(port: port, folder: folder)) }
        }
    }

    /// The DOM Chromium built for `url` (HeadlessChromium.dumpDOM).
    func browse(_ url: String, virtualTime: Bool = true) throws -> String {
        try HeadlessChromium(folder: folder).dumpDOM(url, virtualTime: virtualTime)
    }

    /// Chromium showing `url` until the caller kills it.
    func openInBrowser(_ url: String) throws -> Process {
        try HeadlessChromium(folder: folder).open(url)
    }

    func get(_ path: String) throws -> Any {
        let response = try HTTPFetcher().fetch("GET", base + path, timeoutSeconds: 10).get()
        return try JSONSerialization.jsonObject(with: response.body, options: [.fragmentsAllowed])
    }

    func call(_ method: String, _ path: String, _ body: String? = nil) throws -> (status: Int, json: Any?) {
        let response = try HTTPFetcher().fetch(
            method, base + path, headers: ["Content-Type": "application/json"],
            body: body.map { Data($0.utf8) }, timeoutSeconds: 10
        ).get()
        return (response.status, try? JSONSerialization.jsonObject(with: response.body, options: [.fragmentsAllowed]))
    }

    func state() throws -> [String: Bool] { try get("/v1/hub/state") as? [String: Bool] ?? [:] }

    /// `POST /v1/hub/views/drain`: true once every page view answered so far is recorded.
    func drainViews() throws -> Bool? {
        let answer = try call("POST", "/v1/hub/views/drain")
        XCTAssertEqual(answer.status, 200)
        return (answer.json as? [String: Any])?["drained"] as? Bool
    }
}
