import Foundation
import XCTest

@testable import HubHostKit

/// openapi.yaml against the live `hubhost serve`: the document is a valid OpenAPI 3.1 document
/// whose operations are exactly the routes serve's router registers (read from the router built in
/// process, not from the sources), and every route it describes answers as it says. The test runs serve in process (events, campaigns from a small campaign file, the Content Hub
/// on a signed bundle of Tests/Fixtures/content with a content service on 127.0.0.1, a bearer
/// token), calls every route of the document (its success and at least one error of each route
/// family), records each exchange, and hands them to Tests/openapi/validate.py (PyYAML and
/// jsonschema), which checks status, content type, headers and body against the document, that
/// every route of the document was called, and that every route called is in it.
final class OpenAPITests: FolderTestCase {
    private static let document = TestSupport.repository + "/openapi.yaml"
    private static let validator = TestSupport.repository + "/Tests/openapi/validate.py"

    /// Runs validate.py; fails the test with its messages when it reports problems.
    private func validate(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try TestSupport.run("/usr/bin/env", ["python3", Self.validator, "--spec", Self.document] + arguments, timeout: 300)
        XCTAssertEqual(result.status, 0, "Tests/openapi/validate.py:\n\(result.stdout)\(result.stderr)", file: file, line: line)
    }

    /// The routes come from the router serve runs, built in process (InProcessAPI) with the hub on,
    /// so that its own routes are registered rather than the stand-ins of a disabled hub.
    func testTheDocumentIsValidOpenAPI31AndNamesEveryRegisteredRoute() throws {
        let routes = try InProcessAPI.routes(manifest: "data_dir: data\nplugins: []\nhub: {enabled: true}\n", in: folder)
        XCTAssertTrue(
            routes.contains { $0 == (method: "GET", path: "/hub/home") },
            "the hub did not start, so the router holds a disabled hub's routes: \(routes.map { "\($0.method) \($0.path)" })")
        let file = folder + "/routes.json"
        let list = routes.map { ["method": $0.method, "path": $0.path] }
        try JSONSerialization.data(withJSONObject: ["routes": list], options: [.prettyPrinted, .sortedKeys])
            .write(to: URL(fileURLWithPath: file))
        try validate(["--routes", file])
    }

    func testEveryRouteAnswersAsTheDocumentSays() async throws {
        let folder = self.folder  // for the closure below, which does not capture the test case
        // The content: the fixture folder with two notifications already due, built and signed.
        let content = folder + "/content"
        try FileManager.default.copyItem(atPath: TestSupport.repository + "/Tests/Fixtures/content", toPath: content)
        try TestSupport.write(
            """
            - id: past-1
              at: "2020-01-01T08:00:00Z"
              message: The first reminder
              action_uri: zbimdb://article/news/local/market-day
            - id: past-2
              at: "2020-01-02T08:00:00Z"
              message: The second reminder
              action_uri: zbimdb://article/news/sports/final-score

            """, to: content + "/notifications.yaml")
        let key = folder + "/key.pem"
        let made = try TestSupport.run("/usr/bin/openssl", ["genpkey", "-algorithm", "ED25519", "-out", key])
        XCTAssertEqual(made.status, 0, made.stderr)
        let exported = try TestSupport.run("/usr/bin/openssl", ["pkey", "-in", key, "-pubout", "-outform", "DER", "-out", folder + "/pubkey.der"])
        XCTAssertEqual(exported.status, 0, exported.stderr)
        let bundle = folder + "/content.sqlite3"
        let built = try TestSupport.hubhost(["bundle", "build", content, "-o", bundle, "--key", key])
        XCTAssertEqual(built.status, 0, built.stderr)

        // The content service serves the same bundle, so a sync succeeds (until it answers 503).
        let service = try TestContentService()
        defer { service.stop() }
        service.bundle = try Data(contentsOf: URL(fileURLWithPath: bundle))
        service.metadata = (200, try String(contentsOfFile: bundle + ".json", encoding: .utf8))
        let whitelisted = "http://127.0.0.1:\(service.port)/content/settings?v=1"

        // A fake Engage XMLAPI service for the identity routes.
        let xmlapi = try TestXMLAPIService()
        defer { xmlapi.stop() }
        // The prefetch catalog service and file server, reached through a second provider instance.
        let catalog = try PrefetchTestService()
        defer { catalog.stop() }
        catalog.files["v1.mp4"] = Data(repeating: 7, count: 10_000)
        // An HLS item for the local HLS endpoint: a playlist and one segment (relayed from the origin).
        catalog.files["h1/index.m3u8"] = Data("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nseg0.ts\n#EXT-X-ENDLIST\n".utf8)
        catalog.files["h1/seg0.ts"] = Data(repeating: 0x47, count: 188)
        catalog.pages[""] = """
            {"cursor": "c1", "sources": [{"name": "acme"}], "categories": [{"id": "news"}],
             "items": [{"unique_id": "v1", "content_id": "354", "source": "acme", "categories": ["news"], "title": "One",
                        "files": [{"role": "main", "url": "\(catalog.fileURL("v1.mp4"))", "size": 10000}]},
                       {"unique_id": "h1", "content_id": "355", "source": "acme", "categories": ["news"], "title": "HLS",
                        "files": [{"role": "hls_main_index", "url": "\(catalog.fileURL("h1/index.m3u8"))"}]}]}
            """
        // serve may sync on its own before the test's POST /v1/prefetch/sync: that one then asks from c1.
        catalog.pages["c1"] = #"{"cursor": "c1", "items": []}"#

        try TestSupport.write(Self.campaigns, to: folder + "/campaigns.json")
        let token = "openapi-test-token"
        try TestSupport.write(token + "\n", to: folder + "/token")
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0, auth_token_file: token, max_body_size: 16384}
            events: {cache_size: 1000, flush_interval: 1 hr}
            campaigns: {file: campaigns.json}
            plugins:
              - id: content
                use: \(TestSupport.plugin("HTTPContentProvider"))
              - id: catalog
                use: \(TestSupport.plugin("HTTPContentProvider"))
                config: {db_service_url: "\(catalog.serviceURL)"}
                http_allow: [127.0.0.1]
            prefetch: {enabled: true, provider: catalog, license: good-licence, item_download_behavior: none}
            hub:
              preloaded_bundle: content.sqlite3
              public_key: pubkey.der
              db_service_url: "\(service.baseURL)"
              content_source: local_only
              whitelist_urls: ["\(whitelisted)"]
              custom_url_schemes: [myapp]
              download_timeout: 30 sec
            identity: {host: "\(xmlapi.host)", databaseListId: "45654", maxRetries: 0}

            """, to: folder + "/plugins.yaml")
        // serve in this process, on a loopback port, its services running (syncs, pings, the HLS endpoint).
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let api = LiveAPI(port: server.port, token: token)

                // Meta.
                api.call("GET", "/v1/health", expect: 200)
                api.call("GET", "/v1/health", headers: ["Host": "evil.example:\(server.port)"], expect: 421)
                api.call("GET", "/openapi.yaml", expect: 200)
                api.call("GET", "/metrics", expect: 200)
                api.call("GET", "/v1/plugins", expect: 200)
                api.call("GET", "/v1/status", expect: 200)
                api.call("POST", "/v1/admin/reload", expect: 200)
                api.call("GET", "/metrics", authorized: false, expect: 401)

                // Events.
                api.call(
                    "POST", "/v1/events",
                    json:
                        #"[{"type":"app_start"},{"type":"named_event","name":"PLAYER LOADED","attributes":{"Level":3,"Started":{"type":"time","value":1402358400000}}}]"#,
                    expect: 201)
                api.call(
                    "POST", "/v1/events", json: #"{"type":"purchase_successful","purchase":{"amount":50,"currency_code":"USD","item_list":["box"]}}"#,
                    expect: 201)
                api.call("POST", "/v1/events", json: #"{"type":"app_strat"}"#, expect: 400)
                api.call("POST", "/v1/events", json: #"{"id":"openapi-1","name":"ONCE"}"#, expect: 201)
                api.call("POST", "/v1/events", json: #"{"id":"openapi-1","name":"TWICE"}"#, expect: 409)
                api.call("POST", "/v1/events", json: #"{"name":"FOREIGN"}"#, headers: ["Origin": "http://evil.example"], expect: 403)
                api.call("POST", "/v1/events", body: #"{"name":"PLAIN"}"#, contentType: "text/plain", expect: 415)
                let attributes = (0...EventLimits.maxAttributes).map { "\"a\($0)\":1" }.joined(separator: ",")
                api.call("POST", "/v1/events", json: #"{"name":"MANY","attributes":{\#(attributes)}}"#, expect: 413)
                api.call("POST", "/v1/events", json: #"{"name":"NO TOKEN"}"#, authorized: false, expect: 401)
                api.call("GET", "/v1/events", "/v1/events?status=not_posted&limit=5", expect: 200)
                api.call("GET", "/v1/events", "/v1/events?status=bogus", expect: 400)
                api.call("GET", "/v1/events", "/v1/events?limit=0", expect: 400)
                api.call("GET", "/v1/events", authorized: false, expect: 401)
                api.call("GET", "/v1/events/stats", expect: 200)
                api.call("POST", "/v1/events/flush", expect: 200)
                api.call("POST", "/v1/open-url", json: #"{"url":"app://x?CurrentCampaign=fall"}"#, expect: 201)
                api.call("POST", "/v1/open-url", json: #"{"link":"app://x"}"#, expect: 400)
                api.call("POST", "/v1/notifications/received", json: #"{"CurrentCampaign":"spring","badge":1,"silent":false}"#, expect: 201)
                api.call("POST", "/v1/notifications/received", json: #"{"nested":{"a":1}}"#, expect: 400)
                api.call("POST", "/v1/notifications/opened", json: #"{"CurrentCampaign":"spring"}"#, expect: 201)
                api.call("POST", "/v1/notifications/opened", json: "[1, 2]", expect: 400)

                // Campaigns and messages (the app start above made "welcome" ready for the anonymous user).
                api.call("GET", "/v1/campaigns", expect: 200)
                api.call("GET", "/v1/campaigns/{id}/preview", "/v1/campaigns/welcome/preview", expect: 200)
                api.call("GET", "/v1/campaigns/{id}/preview", "/v1/campaigns/nope/preview", expect: 404)
                api.call("GET", "/v1/messages/next", "/v1/messages/next?context=home&context=cart", expect: 200)
                api.call("POST", "/v1/messages/{id}/impression", "/v1/messages/welcome/impression", expect: 200)
                api.call("POST", "/v1/messages/{id}/impression", "/v1/messages/nope/impression", expect: 404)
                api.call("GET", "/v1/messages/next", expect: 204)
                api.call("POST", "/v1/messages/close", json: #"{"clear_queued_campaigns": true}"#, expect: 200)
                api.call("POST", "/v1/messages/close", expect: 200)
                api.call("POST", "/v1/messages/close", json: #"{"clear_queued_campaigns": "yes"}"#, expect: 400)
                // Display later, pause and resume ("promo" is queued by its event; its context is home).
                api.call("POST", "/v1/events", json: #"{"name":"PROMO SEEN"}"#, expect: 201)
                api.call("POST", "/v1/messages/{id}/later", "/v1/messages/promo/later", expect: 200)
                api.call("POST", "/v1/messages/{id}/later", "/v1/messages/welcome/later", expect: 409)
                api.call("POST", "/v1/messages/{id}/later", "/v1/messages/nope/later", expect: 404)
                api.call("POST", "/v1/messages/pause", json: #"{"for": "5m"}"#, expect: 200)
                api.call("GET", "/v1/messages/pause", expect: 200)
                api.call("GET", "/v1/messages/next", "/v1/messages/next?context=home", expect: 204)
                api.call("POST", "/v1/messages/pause", json: #"{"for": "0s"}"#, expect: 400)
                api.call("POST", "/v1/messages/resume", expect: 200)
                api.call("POST", "/v1/messages/close", json: #"{"clear_queued_campaigns": true}"#, expect: 200)
                api.call("POST", "/v1/campaigns/{id}/opt-out", "/v1/campaigns/welcome/opt-out", expect: 200)
                api.call("POST", "/v1/campaigns/{id}/opt-out", "/v1/campaigns/promo/opt-out", expect: 409)
                api.call("POST", "/v1/campaigns/{id}/opt-out", "/v1/campaigns/nope/opt-out", expect: 404)
                api.call("GET", "/v1/campaigns/user", expect: 200)
                api.call("PUT", "/v1/campaigns/user", json: #"{"userId":"u1","idTrackingIdentifier":"t1","accessToken":"secret"}"#, expect: 200)
                api.call("PUT", "/v1/campaigns/user", json: #"{"userId":5,"idTrackingIdentifier":"t1"}"#, expect: 400)
                api.call(
                    "PUT", "/v1/campaigns/user", json: #"{"userId":"\#(String(repeating: "u", count: 20_000))","idTrackingIdentifier":""}"#,
                    expect: 413)
                api.call("GET", "/v1/campaigns/user", expect: 200)

                // Content Hub users.
                api.call("GET", "/v1/users", expect: 200)
                api.call("POST", "/v1/users", json: #"{"id":"reader","tags":["football"]}"#, expect: 201)
                api.call("POST", "/v1/users", expect: 201)
                api.call("POST", "/v1/users", json: #"{"id":"reader"}"#, expect: 409)
                api.call("POST", "/v1/users", json: #"{"id":5}"#, expect: 400)
                api.call("POST", "/v1/users/generate-id", expect: 200)
                api.call("GET", "/v1/users/active", expect: 200)
                api.call("POST", "/v1/users/active/tag-counts", json: #"{"football":1}"#, expect: 404)
                api.call("POST", "/v1/users/{id}/activate", "/v1/users/reader/activate", expect: 200)
                api.call("POST", "/v1/users/{id}/activate", "/v1/users/ghost/activate", expect: 404)
                api.call("GET", "/v1/users/active", expect: 200)
                api.call("POST", "/v1/users/active/tag-counts", json: #"{"football":2,"cooking":-1}"#, expect: 200)
                api.call("POST", "/v1/users/active/tag-counts", json: #"{"football":1.5}"#, expect: 400)
                api.call("GET", "/v1/users/{id}/tags", "/v1/users/reader/tags", expect: 200)
                api.call("GET", "/v1/users/{id}/tags", "/v1/users/ghost/tags", expect: 404)
                api.call("GET", "/v1/users/{id}/tag-counts", "/v1/users/reader/tag-counts", expect: 200)
                api.call("GET", "/v1/users/{id}/tag-counts", "/v1/users/ghost/tag-counts", expect: 404)

                // Mobile identity.
                api.call("GET", "/v1/identity", expect: 200)
                api.call("POST", "/v1/identity/setup", expect: 200)
                api.call("POST", "/v1/identity/setup", json: #"{"mobileUserId":7}"#, expect: 400)
                api.call("GET", "/v1/identity", expect: 200)
                api.call("POST", "/v1/identity/check", json: #"{"columns":{"facebook_id":"fb"}}"#, expect: 200)
                api.call("POST", "/v1/identity/check", json: #"{"columns":{}}"#, expect: 400)
                xmlapi.script([.fault(errorID: 140, text: "not allowed")])
                api.call("POST", "/v1/identity/check", json: #"{"columns":{"twitter_id":"tw"}}"#, expect: 502)

                // Presenting and local notifications.
                api.call("GET", "/v1/hub/present", "/v1/hub/present?tags=football&entry_point=openapi", expect: 200)
                api.call("GET", "/v1/hub/present", "/v1/hub/present?uri=\(Self.q("zbimdb://article/news/sports/final-score"))", expect: 200)
                api.call("GET", "/v1/hub/present", "/v1/hub/present?tags=a&uri=\(Self.q("zbimdb://hub/news"))", expect: 400)
                api.call("GET", "/v1/hub/present", "/v1/hub/present?uri=\(Self.q("zbimdb://article/none"))", expect: 404)
                api.call("GET", "/v1/local-notifications/due", expect: 200)
                api.call(
                    "POST", "/v1/local-notifications/{id}/handle", "/v1/local-notifications/past-1/handle", json: #"{"show_alert":false}"#,
                    expect: 200)
                api.call("POST", "/v1/local-notifications/{id}/handle", "/v1/local-notifications/not-ours/handle", expect: 200)
                api.call(
                    "POST", "/v1/local-notifications/{id}/handle", "/v1/local-notifications/past-2/handle", json: #"{"show_alert":"no"}"#, expect: 400
                )

                // Content delivery.
                api.call("GET", "/v1/hub/status", expect: 200)
                api.call("POST", "/v1/hub/sync", expect: 200)

                // The web Content Hub.
                api.call("GET", "/v1/hub/state", expect: 200)
                api.call("GET", "/hub/home", expect: 303)
                api.call("GET", "/hub", "/hub?tags=football&entry_point=web", expect: 200)
                api.call("GET", "/hub/home", expect: 200)
                api.call("GET", "/hub/channel/{id}", "/hub/channel/news/sports", expect: 200)
                api.call("POST", "/v1/hub/views/drain", expect: 200)
                api.call("GET", "/hub/channel/{id}", "/hub/channel/news/%2e%2e/sports", expect: 404)
                api.call("GET", "/hub/article/{id}", "/hub/article/news%2Fsports%2Ffinal-score", expect: 200)
                api.call("GET", "/hub/article/{id}", "/hub/article/news/sports/no-such-article", expect: 404)
                api.call("GET", "/hub/back", expect: 303)
                api.call("GET", "/hub/forward", expect: 303)
                api.call("GET", "/hub/resources/{path}", "/hub/resources/site.css", expect: 200)
                api.call("GET", "/hub/resources/{path}", "/hub/resources/images/pixel.png", expect: 200)
                api.call("GET", "/hub/resources/{path}", "/hub/resources/no-such.css", expect: 404)
                let stylesheet = api.call("GET", "/hub/hubhost.css", expect: 200)
                let etag = stylesheet.headers["etag"] ?? ""
                XCTAssertTrue(etag.hasPrefix("\"") && etag.count > 8, "an ETag: \(stylesheet.headers)")
                XCTAssertEqual(stylesheet.headers["cache-control"], "public, max-age=3600")
                api.call("GET", "/hub/hubhost.css", headers: ["If-None-Match": etag], expect: 304)
                api.call("GET", "/hub/hubhost.css", headers: ["If-None-Match": "\"other\""], expect: 200)
                let script = api.call("GET", "/hub/hubhost.js", expect: 200)
                api.call("GET", "/hub/hubhost.js", headers: ["If-None-Match": "W/" + (script.headers["etag"] ?? "")], expect: 304)
                let report =
                    #"{"csp-report":{"document-uri":"http://127.0.0.1/hub/home","violated-directive":"img-src","blocked-uri":"https://tracker.example/p.gif"}}"#
                api.call("POST", "/hub/csp-report", body: report, contentType: "application/csp-report", expect: 204)
                api.call(
                    "POST", "/hub/csp-report", body: report, contentType: "application/csp-report", headers: ["Origin": "http://evil.example"],
                    expect: 403)
                api.call("GET", "/v1/hub/csp-reports", expect: 200)
                let ownOrigin = ["Origin": "http://127.0.0.1:\(server.port)"]
                api.call("POST", "/hub/app-action", "/hub/app-action?url=\(Self.q("myapp://checkout?sku=1"))", headers: ownOrigin, expect: 204)
                api.call("POST", "/hub/app-action", "/hub/app-action?url=\(Self.q("https://example.com/"))", expect: 400)
                api.call("POST", "/hub/app-action", expect: 400)
                api.call(
                    "POST", "/hub/app-action", "/hub/app-action?url=\(Self.q("myapp://checkout?sku=1"))", headers: ["Origin": "http://evil.example"],
                    expect: 403)
                let byGet = api.call("GET", "/hub/app-action", "/hub/app-action?url=\(Self.q("myapp://checkout?sku=1"))", expect: 405)
                XCTAssertEqual(byGet.headers["allow"], "POST")
                api.call("GET", "/hub/whitelisted", "/hub/whitelisted?url=\(Self.q(whitelisted))", expect: 200)
                api.call(
                    "GET", "/hub/whitelisted", "/hub/whitelisted?url=\(Self.q("http://127.0.0.1:\(service.port)/content/settings?v=2"))", expect: 403)
                api.call("GET", "/hub", "/hub?uri=\(Self.q("zbimdb://article/none"))", expect: 404)
                api.call("GET", "/hub/close", expect: 200)
                api.call("POST", "/hub/close", headers: ["Origin": "http://127.0.0.1:\(server.port)"], expect: 200)
                api.call("GET", "/v1/notifications", "/v1/notifications?replay=1", expect: 200, stream: true)
                api.call("GET", "/v1/messages/stream", "/v1/messages/stream?context=home", expect: 200, stream: true)
                api.call("GET", "/v1/notifications", authorized: false, expect: 401)

                // Content prefetch.
                api.call("GET", "/v1/prefetch/status", expect: 200)
                api.call("POST", "/v1/prefetch/register", expect: 200)
                api.call("POST", "/v1/prefetch/sync", expect: 200)
                api.call(
                    "GET", "/v1/prefetch/items", "/v1/prefetch/items?state=discovered&category=news&type=video&sort=title:desc&limit=5", expect: 200)
                api.call("GET", "/v1/prefetch/items", "/v1/prefetch/items?state=bogus", expect: 400)
                api.call("GET", "/v1/prefetch/items/watch", "/v1/prefetch/items/watch?state=discovered", expect: 200, stream: true)
                api.call("GET", "/v1/prefetch/items/watch", "/v1/prefetch/items/watch?state=bogus", expect: 400)
                api.call(
                    "GET", "/v1/prefetch/categories", "/v1/prefetch/categories?selected=true&with_content=true&sort=name:desc&limit=5", expect: 200)
                api.call("GET", "/v1/prefetch/categories", "/v1/prefetch/categories?selected=maybe", expect: 400)
                api.call("GET", "/v1/prefetch/categories/watch", "/v1/prefetch/categories/watch?selected=true", expect: 200, stream: true)
                api.call("GET", "/v1/prefetch/categories/watch", "/v1/prefetch/categories/watch?sort=bogus", expect: 400)
                api.call("POST", "/v1/prefetch/categories/deselect", json: #"{"ids":["news","nope"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/categories/select", json: #"{"ids":["news"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/categories/select", json: #"{"ids":[]}"#, expect: 400)
                api.call("GET", "/v1/prefetch/sources", "/v1/prefetch/sources?subscribed=true&search=ac&sort=display_name", expect: 200)
                api.call("GET", "/v1/prefetch/sources", "/v1/prefetch/sources?limit=-3", expect: 400)
                api.call("GET", "/v1/prefetch/sources/watch", "/v1/prefetch/sources/watch?category=news", expect: 200, stream: true)
                api.call("GET", "/v1/prefetch/sources/watch", "/v1/prefetch/sources/watch?with_content=yes", expect: 400)
                api.call("POST", "/v1/prefetch/sources/unsubscribe", json: #"{"names":["acme"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/sources/subscribe", json: #"{"names":["acme","nope"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/sources/subscribe", json: #"{"ids":["acme"]}"#, expect: 400)
                api.call("GET", "/v1/prefetch/items/{id}", "/v1/prefetch/items/v1", expect: 200)
                api.call("GET", "/v1/prefetch/items/{id}", "/v1/prefetch/items/nope", expect: 404)
                api.call("GET", "/v1/prefetch/items/{id}/play-url", "/v1/prefetch/items/v1/play-url", expect: 200)
                api.call("GET", "/v1/prefetch/items/{id}/play-url", "/v1/prefetch/items/h1/play-url", expect: 200)
                api.call("GET", "/v1/prefetch/items/{id}/play-url", "/v1/prefetch/items/nope/play-url", expect: 404)
                api.call("GET", "/v1/prefetch/items/{id}/file", "/v1/prefetch/items/v1/file", headers: ["Range": "bytes=0-9"], expect: 409)
                api.call("GET", "/v1/prefetch/items/{id}/file", "/v1/prefetch/items/nope/file", expect: 404)
                api.call("GET", "/v1/prefetch/hls/{id}/{name}", "/v1/prefetch/hls/h1/index.m3u8", expect: 200)
                api.call("GET", "/v1/prefetch/hls/{id}/{name}", "/v1/prefetch/hls/h1/m-0.ts", expect: 200)
                api.call("GET", "/v1/prefetch/hls/{id}/{name}", "/v1/prefetch/hls/h1/m-0.ts", headers: ["Range": "bytes=0-9"], expect: 206)
                api.call("GET", "/v1/prefetch/hls/{id}/{name}", "/v1/prefetch/hls/h1/layout.json", expect: 404)
                api.call("GET", "/v1/prefetch/hls/{id}/{name}", "/v1/prefetch/hls/v1/index.m3u8", expect: 409)
                api.call("POST", "/v1/prefetch/download", json: #"{"ids":["v1","nope"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/download", json: #"{"ids":[]}"#, expect: 400)
                api.call("POST", "/v1/prefetch/pause", json: #"{"ids":["v1"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/resume", json: #"{"ids":["v1"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/save", json: #"{"ids":["v1"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/unsave", json: #"{"ids":["v1"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/lock", json: #"{"ids":["v1"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/unlock", json: #"{"ids":["v1"]}"#, expect: 200)
                api.call("POST", "/v1/prefetch/cancel", expect: 200)
                api.call("POST", "/v1/prefetch/fill", expect: 200)
                api.call("POST", "/v1/prefetch/delete", json: #"{"ids":["v1"],"files_only":true,"keep_thumbnail":true}"#, expect: 200)
                api.call("POST", "/v1/prefetch/consume", json: #"{"id":"v1","start":0,"end":12.5}"#, expect: 201)
                api.call("POST", "/v1/prefetch/consume", json: #"{"id":"v1","start":10,"end":5}"#, expect: 400)
                api.call("POST", "/v1/prefetch/consume", json: #"{"id":"nope","start":0,"end":1}"#, expect: 404)
                api.call("POST", "/v1/prefetch/purge", expect: 200)
                api.call("GET", "/v1/prefetch/lookup", "/v1/prefetch/lookup?source=acme&content_id=354", expect: 200)
                api.call("GET", "/v1/prefetch/lookup", "/v1/prefetch/lookup?content_id=354", expect: 400)
                api.call(
                    "POST", "/v1/prefetch/import",
                    json: #"{"ContentId":"77","Provider":"acme","DownloadStatus":"PartiallyDownloaded","Title":"Old"}"#,
                    expect: 200)
                api.call("POST", "/v1/prefetch/import", json: #"{"ContentId":"77"}"#, expect: 400)
                api.call("GET", "/v1/prefetch/policy", expect: 200)
                api.call("PUT", "/v1/prefetch/policy", json: #"{"network_selection":"both"}"#, expect: 200)
                api.call("PUT", "/v1/prefetch/policy", json: #"{"network_selection":"satellite"}"#, expect: 400)
                catalog.license = "another-licence"
                api.call("POST", "/v1/prefetch/register", expect: 409)
                api.call("POST", "/v1/prefetch/sync", expect: 409)

                // A failing content service: the sync answers 502 and the previous bundle stays active.
                service.metadata = (503, "{}")
                api.call("POST", "/v1/hub/sync", expect: 502)
                try api.write(to: folder + "/exchanges.json")
            }
        }
        try validate(["--exchanges", folder + "/exchanges.json"])
    }

    /// A query value, percent-encoded.
    private static func q(_ value: String) -> String {
        value.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")) ?? value
    }

    /// Two campaigns: "welcome" (app start, offers an opt-out) and "promo" (a custom trigger, no opt-out).
    private static let campaigns = """
        {"currentPingMillis": 0, "nextPingMillis": 3600000, "data": [
          {"campaignData": {"campaignId": "welcome", "maxImpressions": 3, "type": 1, "isTest": false,
            "triggers": [{"type": 1, "eventType": 1, "eventName": "app_start", "attributes": []}],
            "messagePayload": {"title": "Welcome", "header": "Hello", "messageBody": "Welcome to hubhost",
              "titleColor": "#222222", "backgroundColor": "#ffffff",
              "messageSettings": {"displaySettings": {"optOut": true, "delay": 0},
                "controlSettings": {"buttons": [{"buttonText": "OK", "buttonTextColor": "#ffffff",
                  "buttonBackgroundColor": "#1a73e8", "buttonBehavior": {"action": 3}}]}}}}},
          {"campaignData": {"campaignId": "promo", "maxImpressions": 1, "type": 2, "isTest": false,
            "triggers": [{"type": 1, "eventType": 4, "eventName": "PROMO SEEN", "attributes": []}],
            "messagePayload": {"title": "[home] Promo", "messageSettings": {"displaySettings": {"optOut": false}}}}}
        ]}

        """
}

/// Calls `hubhost serve` over plain sockets (any Host, Origin or content type; the answer's head
/// and body as sent, chunked bodies decoded; a stream read only until its first event) and records
/// every exchange for validate.py.
private final class LiveAPI {
    struct Exchange: Encodable {
        var method: String
        var path: String
        var target: String
        var requestContentType: String?
        var requestBody: String?
        var expectedStatus: Int
        var status: Int
        var contentType: String?
        var headers: [String: String]
        var body: String
        var bodyTruncated: Bool
    }

    struct Answer {
        var status = 0
        var headers: [String: String] = [:]
        var body = Data()
        var truncated = false
        var failure: String?
    }

    let port: Int
    let token: String
    private(set) var exchanges: [Exchange] = []

    init(port: Int, token: String) {
        self.port = port
        self.token = token
    }

    /// One request to the route `template` (`target` defaults to it); `json` is sent as
    /// application/json, `body` with `contentType`. The token is sent unless `authorized` is false.
    @discardableResult
    func call(
        _ method: String, _ template: String, _ target: String? = nil, json: String? = nil, body: String? = nil,
        contentType: String? = nil, headers: [String: String] = [:], authorized: Bool = true, expect: Int,
        stream: Bool = false
    ) -> Answer {
        let target = target ?? template
        let payload = json ?? body
        let type = json != nil ? "application/json" : contentType
        var head = "\(method) \(target) HTTP/1.1\r\nConnection: close\r\n"
        var fields = ["Host": "127.0.0.1:\(port)", "Accept": "*/*"]
        if authorized { fields["Authorization"] = "Bearer \(token)" }
        if let type { fields["Content-Type"] = type }
        if let payload { fields["Content-Length"] = String(payload.utf8.count) } else if method != "GET" { fields["Content-Length"] = "0" }
        fields.merge(headers) { _, given in given }
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        let request = Data((head + "\r\n").utf8) + Data((payload ?? "").utf8)
        let answer = Self.exchange(port: port, request: request, stream: stream)
        exchanges.append(
            Exchange(
                method: method, path: template, target: target, requestContentType: type, requestBody: payload,
                expectedStatus: expect, status: answer.status, contentType: answer.headers["content-type"],
                headers: answer.headers, body: answer.failure ?? String(decoding: answer.body, as: UTF8.self),
                bodyTruncated: answer.truncated))
        return answer
    }

    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(["exchanges": exchanges]).write(to: URL(fileURLWithPath: path))
    }

    /// Sends `request` and reads the answer until the server closes (every read bounded by 10 s, the
    /// whole by 30 s); a stream is read until its first complete `data:` event (10 s at most).
    static func exchange(port: Int, request: Data, stream: Bool) -> Answer {
        var answer = Answer()
        let client: RawHTTPClient
        do { client = try RawHTTPClient(port: port) } catch {
            answer.failure = "\(error)"
            return answer
        }
        let fd = client.fd
        request.withUnsafeBytes { raw in
            var sent = 0
            for _ in 0..<10_000 where sent < raw.count {
                let count = send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if count <= 0 { break }  // the server may answer (413) and close before reading it all
                sent += count
            }
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(stream ? 10 : 30)
        for _ in 0..<100_000 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
            if stream, hasCompleteEvent(data) {
                answer.truncated = true
                break
            }
            if Date() > deadline {
                answer.truncated = true
                break
            }
        }
        guard let headEnd = data.range(of: Data("\r\n\r\n".utf8)) else {
            answer.failure = "no HTTP answer (\(data.count) bytes): \(String(decoding: data.prefix(200), as: UTF8.self))"
            return answer
        }
        let head = String(decoding: data[data.startIndex..<headEnd.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        answer.status = head.first.flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } } ?? 0
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            answer.headers[name] = answer.headers[name].map { "\($0), \(value)" } ?? value
        }
        let body = Data(data[headEnd.upperBound...])
        if answer.headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            let (decoded, complete) = dechunk(body)
            answer.body = decoded
            if !complete { answer.truncated = true }
        } else {
            answer.body = body
        }
        return answer
    }

    /// Whether a stream's bytes hold a whole server-sent event with data (`data: ...` then a blank line).
    static func hasCompleteEvent(_ data: Data) -> Bool {
        guard let headEnd = data.range(of: Data("\r\n\r\n".utf8)),
            let dataLine = data.range(of: Data("\ndata: ".utf8), in: headEnd.upperBound..<data.endIndex)
        else { return false }
        return data.range(of: Data("\n\n".utf8), in: dataLine.upperBound..<data.endIndex) != nil
    }

    /// A chunked body's bytes, and whether its last chunk arrived.
    static func dechunk(_ data: Data) -> (Data, Bool) {
        var decoded = Data()
        var index = data.startIndex
        let crlf = Data("\r\n".utf8)
        for _ in 0..<1_000_000 {
            guard let lineEnd = data.range(of: crlf, in: index..<data.endIndex) else { return (decoded, false) }
            let sizeText = String(decoding: data[index..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return (decoded, false) }
            if size == 0 { return (decoded, true) }
            let start = lineEnd.upperBound
            guard start + size <= data.endIndex else {
                decoded.append(data[start..<data.endIndex])
                return (decoded, false)
            }
            decoded.append(data[start..<(start + size)])
            index = min(start + size + 2, data.endIndex)
        }
        return (decoded, false)
    }
}
