import Foundation
import HTTPTypes
import HubHostTools
import XCTest

@testable import HubHostKit

/// The campaign message preview (CampaignPreview): the page (escaping, colours, layouts, its
/// policy), the parser's new payload fields, the image cache (allow-list, size, type, offline),
/// the campaign file it reads, the route (which counts nothing) and the CLI.
final class CampaignPreviewTests: FolderTestCase {
    /// A campaign as the parser makes it from `payload` (merged over a title) and `data` fields.
    private func parsed(payload: [String: Any] = [:], data: [String: Any] = [:]) throws -> Campaign {
        var messagePayload: [String: Any] = ["title": "Sale"]
        messagePayload.merge(payload) { _, new in new }
        var campaignData: [String: Any] = [
            "campaignId": "c1", "triggers": [["type": 1, "eventType": 1, "eventName": "app_start", "attributes": []]],
            "messagePayload": messagePayload
        ]
        campaignData.merge(data) { _, new in new }
        let list = try JSONSerialization.data(withJSONObject: ["data": [["campaignData": campaignData]]])
        let result = try CampaignParser.parse(list)
        XCTAssertEqual(result.skipped, [])
        return try XCTUnwrap(result.campaigns.first)
    }

    /// The text of the page's one <style> element.
    private func style(_ html: String) throws -> String {
        let start = try XCTUnwrap(html.range(of: "<style>"))
        let end = try XCTUnwrap(html.range(of: "</style>"))
        return String(html[start.upperBound..<end.lowerBound])
    }

    // MARK: The page

    func testEveryTextIsEscapedAndButtonsNameTheirActionWithoutFollowingIt() throws {
        let campaign = try parsed(payload: [
            "title": "<script>alert('t')</script>", "header": "A & B", "messageBody": "\"quoted\" <img src=x onerror=alert(1)>",
            "messageSettings": [
                "controlSettings": [
                    "buttons": [
                        ["buttonText": "<b>Buy</b>", "buttonBehavior": ["action": 1, "uri": "javascript:alert(1)\"><script>"]],
                        ["buttonText": "Close", "buttonBehavior": ["action": 3]]
                    ]
                ]
            ]
        ])
        let page = CampaignPreview.render(campaign, image: .none)
        let html = page.html
        XCTAssertFalse(html.contains("<script"), html)
        XCTAssertFalse(html.contains("<img"), "the body's <img> is text, and the message has no image: \(html)")
        XCTAssertFalse(html.contains("<b>"), html)
        XCTAssertTrue(html.contains(#"<h1 id="message-title">&lt;script&gt;alert(&#39;t&#39;)&lt;/script&gt;</h1>"#), html)
        XCTAssertTrue(html.contains(#"<p id="message-header">A &amp; B</p>"#), html)
        XCTAssertTrue(html.contains("&quot;quoted&quot; &lt;img src=x onerror=alert(1)&gt;"), html)
        // Buttons are inert: no link, no form, no handler; the action and URI are shown as text.
        XCTAssertFalse(html.contains("href="), html)
        XCTAssertFalse(html.contains("<a "), html)
        XCTAssertFalse(html.contains("<form"), html)
        XCTAssertFalse(html.lowercased().contains(" onclick"), html)
        XCTAssertTrue(
            html.contains(
                #"id="button-1" data-action="redirect" data-uri="javascript:alert(1)&quot;&gt;&lt;script&gt;">&lt;b&gt;Buy&lt;/b&gt;</span>"#), html)
        XCTAssertTrue(
            html.contains(#"<small class="button-action" id="button-1-action">redirect: javascript:alert(1)&quot;&gt;&lt;script&gt;</small>"#), html)
        XCTAssertTrue(html.contains(#"id="button-2" data-action="close" data-uri="">Close</span>"#), html)
        XCTAssertEqual(page.summary.buttons, 2)
        XCTAssertEqual(page.summary.image, "none")
        XCTAssertEqual(page.summary.bytes, html.utf8.count)
    }

    func testOnlyHexColoursReachTheStylesheetAndAnyOtherIsNoted() throws {
        XCTAssertTrue(CampaignPreview.isColor("#fff"))
        XCTAssertTrue(CampaignPreview.isColor("#A1b2C3"))
        XCTAssertTrue(CampaignPreview.isColor("#a1b2c3d4"))
        for refused in ["red", "#ggg", "#12345", "#1234567", "fff", "#fff;", "#fff}body{x:y", "", "#", "＃fff", "#ｆｆｆ"] {
            XCTAssertFalse(CampaignPreview.isColor(refused), refused)
        }
        let campaign = try parsed(payload: [
            "titleColor": "#FF0000", "headerColor": "#0f0", "messageBodyColor": "#00000080",
            "backgroundColor": "red;background:url(https://evil.example/x)", "frameColor": "#123456}body{background:url(x)",
            "messageSettings": [
                "controlSettings": [
                    "buttons": [
                        [
                            "buttonText": "Go", "buttonTextColor": "#ffffff", "buttonBackgroundColor": "expression(alert(1))",
                            "buttonBehavior": ["action": 3]
                        ]
                    ]
                ]
            ]
        ])
        XCTAssertEqual(campaign.colors?.background, "red;background:url(https://evil.example/x)", "kept as sent; checked when rendered")
        let page = CampaignPreview.render(campaign, image: .none)
        let css = try style(page.html)
        for rule in ["#message-title{color:#FF0000}", "#message-header{color:#0f0}", "#message-body{color:#00000080}", "#button-1{color:#ffffff}"] {
            XCTAssertTrue(css.contains(rule), "\(rule): \(css)")
        }
        for refused in ["url(", "evil", "expression"] { XCTAssertFalse(css.contains(refused), "\(refused): \(css)") }
        XCTAssertFalse(css.contains("#message{background"), "the refused background is left out: \(css)")
        XCTAssertFalse(css.contains(".screen{background"), css)
        XCTAssertEqual(page.summary.notes.count, 3, "\(page.summary.notes)")
        XCTAssertTrue(page.summary.notes.contains { $0.hasPrefix("backgroundColor 'red;background:url(https://evil.example/x)' is not a colour") })
        XCTAssertTrue(page.summary.notes.contains { $0.hasPrefix("frameColor '#123456}body{background:url(x)' is not a colour") })
        XCTAssertTrue(page.summary.notes.contains { $0.hasPrefix("button 1 buttonBackgroundColor 'expression(alert(1))' is not a colour") })
        // The notes are on the page, as text.
        XCTAssertTrue(page.html.contains("<li>backgroundColor &#39;red;background:url(https://evil.example/x)&#39; is not a colour"), page.html)
    }

    func testTheLayoutOfEachDisplayTypeIsAClass() throws {
        let expected: [(type: Int, slideFrom: Int?, classes: String, layout: String)] = [
            (1, nil, "layout-modal", "modal"), (2, nil, "layout-full", "full"), (3, nil, "layout-slide-up slide-from-bottom", "slide-up"),
            (3, 2, "layout-slide-up slide-from-top", "slide-up"), (3, 4, "layout-slide-up slide-from-right", "slide-up"),
            (4, nil, "layout-html", "html")
        ]
        for (type, slideFrom, classes, layout) in expected {
            var display: [String: Any] = [:]
            if let slideFrom { display["slideFrom"] = slideFrom }
            let campaign = try parsed(payload: ["messageSettings": ["displaySettings": display]], data: ["type": type])
            XCTAssertEqual(campaign.slideFrom, slideFrom)
            let page = CampaignPreview.render(campaign, image: .none)
            XCTAssertTrue(page.html.contains(#"<section id="message" class="message \#(classes)""#), "type \(type): \(page.html)")
            XCTAssertTrue(page.html.contains(#"data-layout="\#(layout)""#), page.html)
            XCTAssertEqual(page.summary.layout, layout)
        }
        let html = CampaignPreview.render(try parsed(data: ["type": 4]), image: .none)
        XCTAssertTrue(html.summary.notes.contains { $0.contains("previewed as text") }, "\(html.summary.notes)")
    }

    func testThePolicyAllowsTheOneStylesheetByItsHashAndNoScript() throws {
        let page = CampaignPreview.render(try parsed(payload: ["titleColor": "#abcdef"]), image: .none, frameAncestors: "'none'")
        let css = try style(page.html)
        let hash = Data(SHA256.digest(of: Data(css.utf8))).base64EncodedString()
        let policy = page.contentSecurityPolicy
        let directives = [
            "style-src 'sha256-\(hash)'", "script-src 'none'", "default-src 'none'", "img-src 'self' data:", "frame-ancestors 'none'",
            "report-uri /hub/csp-report"
        ]
        for directive in directives { XCTAssertTrue(policy.contains(directive), "\(directive): \(policy)") }
        XCTAssertFalse(policy.contains("unsafe"), policy)
        XCTAssertEqual(page.headers["Content-Security-Policy"], policy)
        XCTAssertEqual(page.headers["X-Content-Type-Options"], "nosniff")
        XCTAssertEqual(page.html.components(separatedBy: "<style>").count, 2, "one style element")
        XCTAssertFalse(page.html.contains("style=\""), "no style attribute (the hash allows only the element)")
        // Another colour is another stylesheet, so another hash.
        let other = CampaignPreview.render(try parsed(payload: ["titleColor": "#abcdee"]), image: .none)
        XCTAssertNotEqual(other.contentSecurityPolicy, policy)
    }

    func testTheImageIsEmbeddedOrReplacedByItsReason() throws {
        let campaign = try parsed(payload: ["messageSettings": ["displaySettings": ["imageUrl": "http://127.0.0.1:1/a.gif"]]])
        let loaded = CampaignPreview.render(campaign, image: .loaded(url: "http://127.0.0.1:1/a.gif", mimeType: "image/gif", bytes: Self.gif))
        XCTAssertTrue(loaded.html.contains(#"src="data:image/gif;base64,\#(Self.gif.base64EncodedString())""#), loaded.html)
        XCTAssertEqual(loaded.summary.image, "loaded")
        let missing = CampaignPreview.render(campaign, image: .unavailable(url: "http://127.0.0.1:1/a.gif", reason: "<nope> & gone"))
        XCTAssertTrue(
            missing.html.contains(
                #"<div id="message-image" class="image-unavailable" data-src="http://127.0.0.1:1/a.gif"><span>Image not shown: &lt;nope&gt; &amp; gone</span></div>"#
            ), missing.html)
        XCTAssertFalse(missing.html.contains("<img"), missing.html)
        XCTAssertEqual(missing.summary.image, "unavailable")
        XCTAssertEqual(missing.summary.imageProblem, "<nope> & gone")
    }

    // MARK: The parser's payload fields

    func testTheParserReadsColoursSlideFromAndTheResourceImageAndRefusesWrongTypes() throws {
        let campaign = try parsed(payload: [
            "titleColor": "#111111", "frameColor": "#222222", "resource": ["imageUrl": "https://cdn.example/r.png", "cropType": 1],
            "messageSettings": ["displaySettings": ["slideFrom": 3]]
        ])
        XCTAssertEqual(campaign.colors, Campaign.Colors(title: "#111111", frame: "#222222"))
        XCTAssertEqual(campaign.imageURL, "https://cdn.example/r.png")
        XCTAssertEqual(campaign.slideFrom, 3)
        XCTAssertNil(try parsed().colors, "no colour given: none kept")

        func skipped(_ payload: [String: Any]) throws -> [String] {
            let data: [String: Any] = [
                "campaignId": "bad", "triggers": [["eventType": 1]], "messagePayload": ["title": "T"].merging(payload) { _, new in new }
            ]
            return try CampaignParser.parse(try JSONSerialization.data(withJSONObject: ["data": [["campaignData": data]]])).skipped
        }
        XCTAssertEqual(try skipped(["titleColor": 255]), ["campaign bad: messagePayload.titleColor must be a string; got 255"])
        XCTAssertEqual(
            try skipped(["messageSettings": ["displaySettings": ["slideFrom": 5]]]),
            [
                "campaign bad: messagePayload.messageSettings.displaySettings.slideFrom must be an integer: 1 (bottom), 2 (top), 3 (left) or 4 (right); got 5"
            ])
        XCTAssertEqual(
            try skipped(["messageSettings": ["controlSettings": ["buttons": [["buttonText": "x", "buttonTextColor": false]]]]]),
            ["campaign bad: button 1: buttonTextColor must be a string; got false (a boolean)"])
    }

    // MARK: The image cache

    func testImagesAreFetchedOnlyWhenAllowedAndShowOfflineFromTheCache() throws {
        let server = try TestImageServer()
        server.files["/a.gif"] = (200, Self.gif)
        server.files["/text"] = (200, Data("<svg onload=alert(1)>".utf8))
        server.files["/big.gif"] = (200, Self.gif + Data(repeating: 0, count: 4096))
        server.files["/gone.gif"] = (404, Data("no".utf8))
        let cacheFolder = folder + "/campaign-images"
        let cache = CampaignImageCache(folder: cacheFolder, allowedDomains: ["127.0.0.1"], allowedURLs: [], maxImageBytes: 1024)

        XCTAssertEqual(cache.image(for: nil), .none)
        XCTAssertEqual(cache.image(for: server.url("/a.gif")), .loaded(url: server.url("/a.gif"), mimeType: "image/gif", bytes: Self.gif))
        XCTAssertEqual(server.hits("/a.gif"), 1)
        let cachedFile = cacheFolder + "/" + SHA256.hex(of: Data(server.url("/a.gif").utf8))
        XCTAssertEqual(FileManager.default.contents(atPath: cachedFile), Self.gif)

        func reason(_ url: String) -> String? {
            if case .unavailable(_, let why) = cache.image(for: url) { return why }
            return nil
        }
        XCTAssertEqual(reason(server.url("/text")), "the answer is not a PNG, JPEG, GIF or WebP image")
        XCTAssertEqual(reason(server.url("/gone.gif")), "the server answered 404")
        XCTAssertTrue(reason(server.url("/big.gif"))?.contains("larger than 1 KiB") ?? false, "\(reason(server.url("/big.gif")) ?? "loaded")")
        for url in [
            "file:///etc/passwd", "javascript:alert(1)", "data:image/gif;base64,R0lG", "ftp://127.0.0.1/a.gif", "//127.0.0.1/a.gif", "not a url"
        ] {
            XCTAssertEqual(reason(url), "not an http(s) URL", url)
        }
        // Not allowed: refused before anything is sent (localhost is not 127.0.0.1 to the allow-list).
        let refused = "http://localhost:\(server.port)/a.gif"
        XCTAssertEqual(reason(refused), "localhost is not in hub.whitelist_domains, nor the URL in hub.whitelist_urls")
        XCTAssertEqual(server.hits("/a.gif"), 1)
        // Only the image was cached.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cacheFolder), [(cachedFile as NSString).lastPathComponent])

        // Offline: the server is gone, the cached image still shows; an uncached one says why.
        server.stop()
        XCTAssertEqual(cache.image(for: server.url("/a.gif")), .loaded(url: server.url("/a.gif"), mimeType: "image/gif", bytes: Self.gif))
        XCTAssertNotNil(reason(server.url("/other.gif")))

        // A URL allowed verbatim, and a subdomain of an allowed domain.
        let verbatim = CampaignImageCache(folder: cacheFolder, allowedDomains: ["example.com"], allowedURLs: ["https://cdn.other.example/x.png?v=1"])
        XCTAssertNil(verbatim.refusal(of: "https://cdn.other.example/x.png?v=1"))
        XCTAssertNotNil(verbatim.refusal(of: "https://cdn.other.example/x.png?v=2"))
        XCTAssertNil(verbatim.refusal(of: "https://images.example.com/x.png"))
        XCTAssertNotNil(verbatim.refusal(of: "https://evilexample.com/x.png"))
    }

    // MARK: The campaign file

    func testTheFileIsReadAsSyncReadsItWithClearRefusals() throws {
        func write(_ object: Any, _ name: String) throws -> String {
            let path = folder + "/" + name
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            return path
        }
        func campaign(_ id: String, _ extra: [String: Any] = [:]) -> [String: Any] {
            ["campaignId": id, "triggers": [["eventType": 1]], "messagePayload": ["title": id.uppercased()]].merging(extra) { _, new in new }
        }
        let list = try write(["data": [["campaignData": campaign("a")], ["campaignData": campaign("b", ["maxImpressions": "three"])]]], "list.json")
        XCTAssertEqual(try CampaignPreview.campaign(fromFile: list, id: "a").title, "A")
        func refusal(_ path: String, id: String? = nil) -> String {
            do {
                _ = try CampaignPreview.campaign(fromFile: path, id: id)
                return "read"
            } catch { return "\(error)" }
        }
        XCTAssertEqual(refusal(list), "\(list) has 2 campaigns: name one with --id (a)")
        XCTAssertEqual(
            refusal(list, id: "b"), "\(list): campaign b: maxImpressions must be an integer from 1 to 2147483647; got \"three\" (a string)")
        XCTAssertEqual(refusal(list, id: "zz"), "\(list) has no campaign zz (it has a)")
        XCTAssertEqual(try CampaignPreview.campaign(fromFile: try write(["campaignData": campaign("one")], "one.json")).id, "one")
        XCTAssertEqual(try CampaignPreview.campaign(fromFile: try write(campaign("bare"), "bare.json")).id, "bare")
        XCTAssertEqual(refusal(try write(["title": "no id"], "noid.json")), "\(folder)/noid.json: campaign #1: missing campaignId (a string)")
        XCTAssertEqual(refusal(try write(["data": []], "empty.json")), "\(folder)/empty.json has no campaign")
        try TestSupport.write("[1, 2", to: folder + "/broken.json")
        XCTAssertEqual(refusal(folder + "/broken.json"), "\(folder)/broken.json is not a JSON object")
        XCTAssertEqual(refusal(folder + "/absent.json"), "\(folder)/absent.json cannot be read: No such file or directory")
        XCTAssertEqual(refusal(folder), "\(folder) cannot be read: not a regular file")
        // A huge file is refused before it is read.
        let huge = folder + "/huge.json"
        XCTAssertTrue(FileManager.default.createFile(atPath: huge, contents: nil))
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: huge))
        try handle.truncate(atOffset: UInt64(CampaignPreview.maxFileBytes + 1))
        try handle.close()
        XCTAssertEqual(refusal(huge), "\(huge) cannot be read: it is \(CampaignPreview.maxFileBytes + 1) bytes, more than the 4 MiB it may be")
    }

    // MARK: HTTP

    /// The route renders a loaded campaign without an impression, an event, or a change to the
    /// queue or the current message.
    func testTheRouteRendersALoadedCampaignAndCountsNothing() async throws {
        let server = try TestImageServer()
        defer { server.stop() }
        server.files["/sale.gif"] = (200, Self.gif)
        let list: [String: Any] = [
            "data": [
                [
                    "campaignData": [
                        "campaignId": "sale", "maxImpressions": 2, "type": 3,
                        "triggers": [["type": 1, "eventType": 4, "eventName": "go", "attributes": []]],
                        "messagePayload": [
                            "title": "Half <price>", "backgroundColor": "#fafafa",
                            "messageSettings": ["displaySettings": ["imageUrl": server.url("/sale.gif"), "slideFrom": 2]]
                        ]
                    ]
                ]
            ]
        ]
        try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: folder + "/campaigns.json"))
        let yaml = """
            data_dir: data
            events: {cache_size: 1000}
            campaigns: {file: campaigns.json}
            hub: {whitelist_domains: [127.0.0.1], frame_ancestors: "'none'"}
            plugins: []
            """
        let cached = folder + "/data/campaign-images/" + SHA256.hex(of: Data(server.url("/sale.gif").utf8))
        try await InProcessAPI.test(manifest: yaml, in: folder) { client, host in
            let tracked = try await client.send(.post, "/v1/events", json: #"{"name":"go"}"#)
            XCTAssertEqual(tracked.status, .created, tracked.text)
            let next = try await client.send(.get, "/v1/messages/next")
            XCTAssertEqual((next.json as? [String: Any])?["id"] as? String, "sale", "the message is current: \(next.text)")
            let campaigns = try XCTUnwrap(try host.campaigns())
            let before = campaigns.statuses()
            let eventsBefore = try host.events().store.list(limit: 100).map(\.event.name)

            for _ in 0..<3 {
                let page = try await client.send(.get, "/v1/campaigns/sale/preview")
                XCTAssertEqual(page.status, .ok, page.text)
                XCTAssertEqual(page.headers[.contentType], "text/html; charset=utf-8")
                let policy = try XCTUnwrap(page.headers[HTTPField.Name("Content-Security-Policy")!])
                XCTAssertTrue(policy.contains("script-src 'none'") && policy.contains("frame-ancestors 'none'"), policy)
                XCTAssertEqual(page.headers[HTTPField.Name("X-Content-Type-Options")!], "nosniff")
                XCTAssertTrue(page.text.contains("Half &lt;price&gt;"), page.text)
                XCTAssertTrue(page.text.contains("layout-slide-up slide-from-top"), page.text)
                XCTAssertTrue(page.text.contains("data:image/gif;base64,\(Self.gif.base64EncodedString())"), page.text)
            }
            XCTAssertEqual(server.hits("/sale.gif"), 1, "fetched once, then from the cache")
            XCTAssertTrue(FileManager.default.fileExists(atPath: cached), cached)

            let missing = try await client.send(.get, "/v1/campaigns/nope/preview")
            XCTAssertEqual(missing.status, .notFound, missing.text)
            XCTAssertEqual(missing.errorCode, "not_found", missing.text)

            // Nothing was counted: the same statuses, no event, the message still current.
            XCTAssertEqual(campaigns.statuses(), before)
            XCTAssertEqual(before.first?.impressionsLeft, 2)
            let eventsAfter = try host.events().store.list(limit: 100).map(\.event.name)
            XCTAssertEqual(eventsAfter, eventsBefore)
            XCTAssertFalse(eventsAfter.contains(CampaignEngine.shownEventName), "\(eventsAfter)")
            let again = try await client.send(.get, "/v1/messages/next")
            XCTAssertEqual((again.json as? [String: Any])?["id"] as? String, "sale", again.text)
            XCTAssertEqual(((again.json as? [String: Any])?["colors"] as? [String: Any])?["background"] as? String, "#fafafa", again.text)
        }
    }

    // MARK: CLI

    func testTheCommandWritesThePageAndRefusesHostileFilesClearly() throws {
        let server = try TestImageServer()
        defer { server.stop() }
        server.files["/i.gif"] = (200, Self.gif)
        try TestSupport.write("data_dir: data\nplugins: []\nhub: {whitelist_domains: [127.0.0.1]}\n", to: folder + "/plugins.yaml")
        let campaign: [String: Any] = [
            "campaignId": "cli", "type": 2, "triggers": [["eventType": 1]],
            "messagePayload": [
                "title": "<script>alert(1)</script>", "backgroundColor": "red;background:url(x)",
                "messageSettings": ["displaySettings": ["imageUrl": server.url("/i.gif")]]
            ]
        ]
        try JSONSerialization.data(withJSONObject: ["campaignData": campaign]).write(to: URL(fileURLWithPath: folder + "/c.json"))

        let written = try TestSupport.hubhost(["campaigns", "preview", "c.json", "--output", "page.html", "--json"], in: folder).expect()
        let summary = try TestSupport.json(written.stdout, as: [String: Any].self)
        XCTAssertEqual(summary["campaignId"] as? String, "cli")
        XCTAssertEqual(summary["layout"] as? String, "full")
        XCTAssertEqual(summary["image"] as? String, "loaded")
        XCTAssertEqual(
            (summary["notes"] as? [String])?.first?.hasPrefix("backgroundColor 'red;background:url(x)' is not a colour"), true, written.stdout)
        let page = try String(contentsOfFile: folder + "/page.html", encoding: .utf8)
        XCTAssertEqual(summary["bytes"] as? Int, page.utf8.count)
        XCTAssertTrue(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), page)
        XCTAssertFalse(page.contains("<script"), page)
        XCTAssertFalse(try style(page).contains("url("), page)
        XCTAssertTrue(page.contains("data:image/gif;base64,"), page)
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/data/campaign-images"))

        // To stdout, with the notes on stderr; offline now, the image comes from the cache.
        server.stop()
        let printed = try TestSupport.hubhost(["campaigns", "preview", "c.json"], in: folder).expect()
        XCTAssertTrue(printed.stdout.hasPrefix("<!doctype html>"), printed.stdout)
        XCTAssertTrue(printed.stdout.contains("data:image/gif;base64,"), "from the cache: \(printed.stdout)")
        XCTAssertTrue(printed.stderr.contains("note: backgroundColor 'red;background:url(x)' is not a colour"), printed.stderr)

        // A non-http image: shown as a placeholder with why.
        var other = campaign
        other["messagePayload"] = ["title": "T", "messageSettings": ["displaySettings": ["imageUrl": "file:///etc/passwd"]]]
        try JSONSerialization.data(withJSONObject: other).write(to: URL(fileURLWithPath: folder + "/file.json"))
        let placeholder = try TestSupport.hubhost(["campaigns", "preview", "file.json", "--json"], in: folder).expect()
        XCTAssertEqual(try TestSupport.json(placeholder.stdout, as: [String: Any].self)["imageProblem"] as? String, "not an http(s) URL")

        // Refusals: exit 1 and why, nothing on stdout.
        let huge = folder + "/huge.json"
        try TestSupport.write("{\"campaignId\": \"" + String(repeating: "x", count: CampaignPreview.maxFileBytes) + "\"}", to: huge)
        for (file, why) in [
            ("huge.json", "huge.json cannot be read: it is \(CampaignPreview.maxFileBytes + 18) bytes, more than the 4 MiB it may be"),
            ("absent.json", "absent.json cannot be read: No such file or directory"),
            ("plugins.yaml", "plugins.yaml is not a JSON object")
        ] {
            let refused = try TestSupport.hubhost(["campaigns", "preview", file], in: folder)
            XCTAssertEqual(refused.status, 1, refused.stderr)
            XCTAssertEqual(refused.stdout, "")
            XCTAssertTrue(refused.stderr.contains(why), refused.stderr)
        }
        // The command counted and loaded nothing.
        let listed = try TestSupport.hubhost(["campaigns", "list", "--json"], in: folder).expect()
        XCTAssertEqual(try TestSupport.json(listed.stdout, as: [Any].self).count, 0)
    }

    /// A 1x1 GIF of one colour (#00c853): no transparency, so scaled it stays that colour.
    static let gif = gif(red: 0x00, green: 0xC8, blue: 0x53)

    static func gif(red: UInt8, green: UInt8, blue: UInt8) -> Data {
        Data([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, red, green, blue, 0x00, 0x00, 0x00])
            + Data([0x2C, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B])
    }
}

/// Images on a loopback HTTP server (127.0.0.1): each path answers its status and bytes (404 when
/// not set), and the requests are counted.
final class TestImageServer: @unchecked Sendable {
    private let server: LoopbackHTTPServer
    private let lock = NSLock()
    private var stored: [String: (status: Int, body: Data)] = [:]
    private var received: [String] = []

    var port: UInt16 { server.port }
    func url(_ path: String) -> String { server.url(path) }
    var files: [String: (status: Int, body: Data)] {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func hits(_ path: String) -> Int { lock.withLock { received.filter { $0 == path }.count } }

    init() throws {
        server = try LoopbackHTTPServer()
        server.start { [self] fd, request in
            let answer = lock.withLock { () -> (status: Int, body: Data) in
                received.append(request.path)
                return stored[request.path] ?? (404, Data("not found".utf8))
            }
            LoopbackHTTPServer.respond(fd, answer.status, headers: ["Content-Type": "image/gif"], answer.body)
        }
    }

    func stop() { server.stop() }
}
