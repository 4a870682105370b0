import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

@testable import HubHostKit
@testable import HubHostServer

/// The HTTP API's routes and its request guard, in process (InProcessAPI): the same router and
/// middlewares as `hubhost serve`, hostile and out-of-range requests included.
final class HTTPAPIRouteTests: FolderTestCase {
    private func manifest(server: String = "{port: 0}") -> String {
        "data_dir: data\nserver: \(server)\nevents: {cache_size: 1000}\nplugins: []\n"
    }

    private static func storedCount(_ client: any TestClientProtocol) async throws -> Int {
        let stats = try await client.send(.get, "/v1/events/stats")
        XCTAssertEqual(stats.status, .ok, stats.text)
        return ((stats.json as? [String: Int]) ?? [:]).values.reduce(0, +)
    }

    func testRefusedListsStoreNothingAndRepeatedIDsAnswer409() async throws {
        try await InProcessAPI.test(manifest: manifest(), in: folder) { client, _ in
            var answer = try await client.send(.post, "/v1/events", json: #"[{"id":"a1","name":"x"},{"id":"a1","name":"y"}]"#)
            XCTAssertEqual(answer.status, .conflict, answer.text)
            XCTAssertEqual(answer.errorCode, "duplicate_id")
            let storedAfterDuplicates = try await Self.storedCount(client)
            XCTAssertEqual(storedAfterDuplicates, 0, "none of the refused list is stored")
            answer = try await client.send(.post, "/v1/events", json: #"[{"id":"b1","name":"x"},{"name":"y","timestamp":-9223372036854775808}]"#)
            XCTAssertEqual(answer.status, .badRequest, answer.text)
            let storedAfterBadTimestamp = try await Self.storedCount(client)
            XCTAssertEqual(storedAfterBadTimestamp, 0)
            let firstStatus = try await client.send(.post, "/v1/events", json: #"{"id":"c1","name":"x"}"#).status
            XCTAssertEqual(firstStatus, .created)
            let stored = try await Self.storedCount(client)
            XCTAssertGreaterThan(stored, 0, "the accepted c1 is counted: the count reads the stats")
            answer = try await client.send(.post, "/v1/events", json: #"[{"id":"c2","name":"x"},{"id":"c1","name":"again"}]"#)
            XCTAssertEqual(answer.status, .conflict, answer.text)
            let storedAfterRepeat = try await Self.storedCount(client)
            XCTAssertEqual(storedAfterRepeat, stored, "c2 is not stored beside the repeated c1")
            // The timestamp that once crash-looped serve: refused, and the API still answers.
            let hugeTimestampStatus = try await client.send(.post, "/v1/events", json: #"{"name":"x","timestamp":1e300}"#).status
            XCTAssertEqual(hugeTimestampStatus, .badRequest)
            let laterStatus = try await client.send(.post, "/v1/events", json: #"{"name":"after"}"#).status
            XCTAssertEqual(laterStatus, .created)
        }
    }

    func testBodiesAndAttributesOverTheLimitsAnswer413() async throws {
        let big = String(repeating: "a", count: 5000)
        try await InProcessAPI.test(manifest: manifest(server: "{port: 0, max_body_size: 4096}"), in: folder) { client, _ in
            let answer = try await client.send(.post, "/v1/events", json: #"{"name":"x","attributes":{"s":"\#(big)"}}"#)
            XCTAssertEqual(answer.status, .contentTooLarge, answer.text)
            XCTAssertTrue(answer.text.contains("4096"), "the limit is in the message: \(answer.text)")
            let storedAfterTooLarge = try await Self.storedCount(client)
            XCTAssertEqual(storedAfterTooLarge, 0)
        }
        let many = (0...EventLimits.maxAttributes).map { "\"a\($0)\":1" }.joined(separator: ",")
        try await InProcessAPI.test(manifest: manifest(), in: folder) { client, _ in
            let answer = try await client.send(.post, "/v1/events", json: #"{"name":"x","attributes":{\#(many)}}"#)
            XCTAssertEqual(answer.status, .contentTooLarge, answer.text)
            XCTAssertTrue(answer.text.contains("\(EventLimits.maxAttributes)"), answer.text)
        }
    }

    /// The guard's refusals that need no socket: foreign origins (403), bodies that are not JSON
    /// (415), a missing or wrong bearer token (401, with WWW-Authenticate); each in the one error shape.
    func testForeignOriginsForeignContentTypesAndMissingTokensAreRefusedInTheOneErrorShape() async throws {
        try TestSupport.write("s3cret\n", to: folder + "/token")
        try await InProcessAPI.test(manifest: manifest(server: "{port: 0, auth_token_file: token}"), in: folder) { client, _ in
            let bearer: HTTPFields = [.authorization: "Bearer s3cret"]
            var answer = try await client.send(
                .post, "/v1/events", json: #"{"name":"x"}"#,
                headers: [.origin: "http://evil.example", .authorization: "Bearer s3cret"])
            XCTAssertEqual(answer.status, .forbidden, answer.text)
            XCTAssertEqual(answer.errorCode, "foreign_origin")
            answer = try await client.execute(
                uri: "/v1/events", method: .post, headers: [.contentType: "text/plain", .authorization: "Bearer s3cret"],
                body: ByteBuffer(string: #"{"name":"x"}"#))
            XCTAssertEqual(answer.status, .unsupportedMediaType, answer.text)
            XCTAssertNotNil(answer.errorCode, answer.text)
            answer = try await client.send(.get, "/v1/events")
            XCTAssertEqual(answer.status, .unauthorized, answer.text)
            XCTAssertEqual(answer.headers[.wwwAuthenticate], "Bearer")
            XCTAssertNotNil(answer.errorCode, answer.text)
            answer = try await client.send(.get, "/v1/events", headers: [.authorization: "Bearer s3cre"])
            XCTAssertEqual(answer.status, .unauthorized, "a token one character short is refused")
            let healthStatus = try await client.send(.get, "/v1/health").status
            XCTAssertEqual(healthStatus, .ok, "health needs no token")
            let metricsStatus = try await client.send(.get, "/metrics").status
            XCTAssertEqual(metricsStatus, .unauthorized)
            let authenticatedStatus = try await client.send(.post, "/v1/events", json: #"{"name":"ok"}"#, headers: bearer).status
            XCTAssertEqual(authenticatedStatus, .created)
            answer = try await client.send(.get, "/v1/events?limit=50", headers: bearer)
            XCTAssertEqual(answer.status, .ok, answer.text)
            let names = ((answer.json as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
            XCTAssertTrue(names.contains("ok"), answer.text)
            XCTAssertFalse(names.contains("x"), "none of the refused requests stored its event: \(names)")
        }
    }

    /// A field sent twice counts as HTTPFields joins it ("a, b"): a second Content-Type or a second
    /// Origin cannot slip past the guard behind a first one it accepts, and a second Authorization
    /// spoils the token. The guard's one-pass reading agrees with HTTPFields' subscript field by field.
    func testRepeatedFieldsAreReadJoinedAsHTTPFieldsJoinsThem() async throws {
        var fields: HTTPFields = [.contentType: "application/json", .origin: "http://localhost"]
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        fields.append(HTTPField(name: .origin, value: "http://evil.example"))
        fields.append(HTTPField(name: .authorization, value: "Bearer s3cret"))
        fields.append(HTTPField(name: .accept, value: "*/*"))
        let read = RequestGuardMiddleware<BasicRequestContext>.GuardedHeaders(fields)
        XCTAssertEqual(read.contentType, fields[.contentType])
        XCTAssertEqual(read.contentType, "application/json, text/plain")
        XCTAssertEqual(read.origin, fields[.origin])
        XCTAssertEqual(read.authorization, fields[.authorization])
        XCTAssertNil(read.contentLength)
        XCTAssertNil(read.transferEncoding)
        // Many repeats are joined as the subscript joins them (appended in place, not copied each time).
        var many = HTTPFields()
        for n in 0..<5_000 { many.append(HTTPField(name: .origin, value: "http://o\(n).example")) }
        XCTAssertEqual(RequestGuardMiddleware<BasicRequestContext>.GuardedHeaders(many).origin, many[.origin])

        try TestSupport.write("s3cret\n", to: folder + "/token")
        try await InProcessAPI.test(manifest: manifest(server: "{port: 0, auth_token_file: token}"), in: folder) { client, _ in
            var twoTypes: HTTPFields = [.contentType: "application/json", .authorization: "Bearer s3cret"]
            twoTypes.append(HTTPField(name: .contentType, value: "text/plain"))
            var answer = try await client.execute(uri: "/v1/events", method: .post, headers: twoTypes, body: ByteBuffer(string: #"{"name":"x"}"#))
            XCTAssertEqual(answer.status, .unsupportedMediaType, answer.text)
            var twoOrigins: HTTPFields = [.origin: "http://localhost", .authorization: "Bearer s3cret"]
            twoOrigins.append(HTTPField(name: .origin, value: "http://evil.example"))
            answer = try await client.send(.post, "/v1/events", json: #"{"name":"x"}"#, headers: twoOrigins)
            XCTAssertEqual(answer.status, .forbidden, answer.text)
            var twoTokens: HTTPFields = [.authorization: "Bearer s3cret"]
            twoTokens.append(HTTPField(name: .authorization, value: "Bearer s3cret"))
            answer = try await client.send(.get, "/v1/events", headers: twoTokens)
            XCTAssertEqual(answer.status, .unauthorized, answer.text)
            answer = try await client.send(.get, "/v1/events/stats", headers: [.authorization: "Bearer s3cret"])
            XCTAssertEqual(answer.status, .ok, answer.text)
            XCTAssertEqual(((answer.json as? [String: Int]) ?? [:]).values.reduce(0, +), 0, "none of the refused requests stored its event")
        }
    }

    /// What another site's page can make a browser send to `/hub/app-action` (a GET from an
    /// `<img>` or a link, a POST from a form with its own or a `null` Origin) never reaches the
    /// app, with a token set or not; only a POST from the hub's own origin (hubhost.js) does.
    func testAppActionsActOnlyOnAPostFromTheServersOwnOrigin() async throws {
        for (run, server) in ["{port: 0}", "{port: 0, auth_token_file: token}"].enumerated() {
            let place = folder + "/run\(run)"  // a store of its own: the counts below start at 0
            try TestSupport.write("s3cret\n", to: place + "/token")
            let yaml = manifest(server: server) + "hub: {custom_url_schemes: [myapp]}\n"
            try await InProcessAPI.test(manifest: yaml, in: place) { client, host in
                let bearer: HTTPFields = server.contains("token") ? [.authorization: "Bearer s3cret"] : [:]
                @Sendable func appActions() async throws -> (notified: [String], tracked: [String]) {
                    let notified = host.notifications.recentNotifications().filter { $0.name == HostNotification.Name.appAction }
                    let events = try await client.send(.get, "/v1/events?limit=100", headers: bearer)
                    XCTAssertEqual(events.status, .ok, events.text)
                    let tracked = ((events.json as? [[String: Any]]) ?? []).filter { $0["name"] as? String == "App Action" }
                    return (
                        notified.compactMap { if case .string(let url)? = $0.payload["url"] { url } else { nil } },
                        tracked.compactMap { ($0["attributes"] as? [String: Any])?["URL"] as? String }
                    )
                }
                let target = "/hub/app-action?url=myapp%3A%2F%2Ftransfer%3Famount%3D1000"
                let crossSite: HTTPFields = [HTTPField.Name("Sec-Fetch-Site")!: "cross-site", HTTPField.Name("Sec-Fetch-Dest")!: "image"]
                let getHeaders: [HTTPFields] = [[:], [.origin: "http://evil.example"], crossSite]
                for headers in getHeaders {
                    let answer = try await client.send(.get, target, headers: headers)
                    XCTAssertEqual(answer.status, .methodNotAllowed, "GET \(headers): \(answer.text)")
                    XCTAssertEqual(answer.errorCode, "method_not_allowed", answer.text)
                    XCTAssertEqual(answer.headers[.allow], "POST")
                }
                for origin in ["http://evil.example", "null", "http://localhost.evil.example"] {
                    let answer = try await client.send(.post, target, headers: [.origin: origin])
                    XCTAssertEqual(answer.status, .forbidden, "POST from \(origin): \(answer.text)")
                    XCTAssertEqual(answer.errorCode, "foreign_origin", answer.text)
                }
                let refused = try await appActions()
                XCTAssertEqual(refused.notified, [], "\(server): no refused request reached the app")
                XCTAssertEqual(refused.tracked, [], "\(server): no refused request was tracked")

                // The hub page's own POST (its origin is the server's: the test client's Host is localhost).
                let own = try await client.send(.post, target, headers: [.origin: "http://localhost"])
                XCTAssertEqual(own.status, .noContent, own.text)
                let sent = try await appActions()
                XCTAssertEqual(sent.notified, ["myapp://transfer?amount=1000"], server)
                XCTAssertEqual(sent.tracked, ["myapp://transfer?amount=1000"], server)
            }
        }
    }

    /// The HTTP request metrics at /metrics, by route, method and status as Hummingbird's
    /// MetricsMiddleware names them: an answer in memory (a JSON route, a hub route's redirect) is
    /// counted when the route returns it, any other (the OpenAPI document) once its body is
    /// written, and a refusal also as an error.
    func testRequestMetricsCountEveryKindOfAnswerByRouteMethodAndStatus() async throws {
        try await InProcessAPI.test(manifest: manifest(), in: folder) { client, _ in
            @Sendable func count(_ name: String, _ route: String, _ status: Int) async throws -> Double {
                let text = try await client.send(.get, "/metrics").text
                let statusLabel = name == "hubhost_http_request_errors_total" ? "error_type" : "http_response_status_code"
                for line in text.split(separator: "\n")
                where line.hasPrefix(name + "{") && line.contains("http_route=\"\(route)\"") && line.contains("http_request_method=\"GET\"")
                    && line.contains("\(statusLabel)=\"\(status)\"")
                {
                    return Double(line.split(separator: " ").last ?? "") ?? -1
                }
                return 0
            }
            let health = try await count("hubhost_http_requests_total", "/v1/health", 200)
            let home = try await count("hubhost_http_requests_total", "/hub/home", 303)
            let unknown = try await count("hubhost_http_request_errors_total", "NotFound", 404)
            let document = try await count("hubhost_http_requests_total", "/openapi.yaml", 200)
            for _ in 0..<2 { _ = try await client.send(.get, "/v1/health") }
            let served = try await client.send(.get, "/openapi.yaml").status
            XCTAssertEqual(served, .ok)
            let redirect = try await client.send(.get, "/hub/home")
            XCTAssertEqual(redirect.status, .seeOther, "no hub session: the hub page leads to /hub")
            _ = try await client.send(.get, "/v1/no-such-route")
            let healthAfter = try await count("hubhost_http_requests_total", "/v1/health", 200)
            let homeAfter = try await count("hubhost_http_requests_total", "/hub/home", 303)
            let unknownAfter = try await count("hubhost_http_request_errors_total", "NotFound", 404)
            XCTAssertEqual(healthAfter, health + 2)
            XCTAssertEqual(homeAfter, home + 1)
            XCTAssertEqual(unknownAfter, unknown + 1)
            let documentAfter = try await count("hubhost_http_requests_total", "/openapi.yaml", 200)
            XCTAssertEqual(documentAfter, document + 1)
        }
    }

    /// /metrics after traffic of many kinds passes Prometheus' own linter (Debian's promtool): every
    /// metric has HELP text and Prometheus' naming. Every exported name has its text in the table.
    func testMetricsPassPromtoolAfterTrafficOfEveryKind() async throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool"), "promtool is needed (scripts/debian-packages.txt)")
        // Instances of every state the per-instance metrics show: one called, one disabled.
        let instances = """
            data_dir: data
            server: {port: 0}
            events: {cache_size: 1000}
            plugins:
              - {id: promtool-noop, use: noop}
              - {id: promtool-spare, use: noop, enabled: false}

            """
        let text = try await InProcessAPI.test(manifest: instances, in: folder) { client, host in
            _ = try await client.send(.post, "/v1/events", json: #"{"name":"promtool"}"#)
            _ = try await client.send(.post, "/v1/events", json: #"{"name":"#)
            _ = try await client.send(.get, "/v1/health")
            _ = try await client.send(.get, "/v1/no-such-route")
            _ = try await client.send(.get, "/hub/home")
            _ = host.reload()
            return try await client.send(.get, "/metrics").text
        }
        let families = Set(text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) })
        XCTAssertTrue(
            families.isSuperset(of: ["hubhost_http_requests_total", "hubhost_events_tracked_total", "hubhost_reloads_total"]), "\(families)")
        XCTAssertEqual(families.subtracting(MetricsRoutes.help.keys), [], "every exported metric has its HELP text")
        let lines = text.split(separator: "\n").map(String.init)
        func value(_ series: String) -> Double? {
            lines.first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        // The registry is the process's (other tests tracked too): at least this test's batch, and
        // never more batches than events.
        XCTAssertGreaterThanOrEqual(value("hubhost_event_batches_total") ?? 0, 1, text)
        XCTAssertLessThanOrEqual(value("hubhost_event_batches_total") ?? .infinity, value("hubhost_events_tracked_total") ?? 0, text)
        XCTAssertEqual(value(#"hubhost_plugin_up{instance="promtool-noop"}"#), 1, text)
        XCTAssertEqual(value(#"hubhost_plugin_up{instance="promtool-spare"}"#), 0, text)
        XCTAssertEqual(value(#"hubhost_plugin_state{instance="promtool-spare",state="disabled"}"#), 1, text)
        XCTAssertEqual(value(#"hubhost_plugin_state{instance="promtool-spare",state="loaded"}"#), 0, text)
        XCTAssertEqual(value(#"hubhost_plugin_state{instance="promtool-noop",state="loaded"}"#), 1, text)
        XCTAssertGreaterThanOrEqual(value(#"hubhost_plugin_calls_total{instance="promtool-noop"}"#) ?? 0, 1, "the event was augmented: \(text)")
        XCTAssertEqual(value(#"hubhost_plugin_call_errors_total{instance="promtool-noop",kind="timeout"}"#), 0, text)
        XCTAssertEqual(value(#"hubhost_plugin_call_errors_total{instance="promtool-spare",kind="error"}"#), 0, "every instance shows from start")
        try TestSupport.write(text, to: folder + "/metrics.txt")
        let check = try TestSupport.run("/bin/sh", ["-c", "promtool check metrics < \"$0\"", folder + "/metrics.txt"])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        XCTAssertEqual((check.stdout + check.stderr).trimmingCharacters(in: .whitespacesAndNewlines), "")
    }

    /// Unknown routes and malformed JSON answer in the one error shape; the document is served.
    func testUnknownRoutesAndMalformedBodiesAnswerInTheOneErrorShape() async throws {
        try await InProcessAPI.test(manifest: manifest(), in: folder) { client, _ in
            var answer = try await client.send(.get, "/v1/no-such-route")
            XCTAssertEqual(answer.status, .notFound, answer.text)
            XCTAssertNotNil(answer.errorCode, answer.text)
            for body in [#"{"name":"#, "[", #"{"name":"x","attributes":[1,2]}"#, "\u{0}", #"{"type":"no_such_type","name":"x"}"#] {
                answer = try await client.send(.post, "/v1/events", json: body)
                XCTAssertEqual(answer.status, .badRequest, "\(body): \(answer.text)")
                let message = ((answer.json as? [String: Any])?["error"] as? [String: Any])?["message"] as? String
                XCTAssertFalse(message?.isEmpty ?? true, "\(body): a message says what is wrong: \(answer.text)")
            }
            let storedAfterMalformed = try await Self.storedCount(client)
            XCTAssertEqual(storedAfterMalformed, 0, "nothing malformed was stored")
            answer = try await client.send(.get, "/openapi.yaml")
            XCTAssertEqual(answer.status, .ok)
            XCTAssertTrue(answer.text.hasPrefix("openapi:"), String(answer.text.prefix(80)))
        }
    }
}
