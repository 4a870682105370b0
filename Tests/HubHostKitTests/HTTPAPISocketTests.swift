import Foundation
import XCTest

@testable import HubHostKit

/// The HTTP API's request guard over a loopback socket, in process (InProcessAPI.listening), for
/// what the router test client cannot send: a chunked body (it always declares Content-Length)
/// and any Host header (it always says `localhost`).
final class HTTPAPISocketTests: FolderTestCase {
    /// One exchange on a new connection, on the blocking pool (RawHTTPClient waits in recv).
    private static func exchange(_ port: Int, _ request: String) async throws -> (status: Int, body: String) {
        try await BlockingPool.run { try RawHTTPClient(port: port).exchange(request) }
    }

    private static func errorCode(_ body: String) -> String? {
        let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (json?["error"] as? [String: Any])?["code"] as? String
    }

    /// Every route openapi.yaml documents with a request body, as `METHOD path` (a path parameter
    /// filled in), so that a route added with a body is tried here too.
    private static func routesWithABody() throws -> [(method: String, path: String)] {
        let text = try String(contentsOfFile: TestSupport.repository + "/openapi.yaml", encoding: .utf8)
        var routes: [(method: String, path: String)] = []
        var path = ""
        var method = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                method = String(line.dropFirst(4).dropLast()).uppercased()
            } else if line == "      requestBody:", !path.isEmpty {
                let filled = path.replacingOccurrences(of: #"\{[^}]*\}"#, with: "x", options: .regularExpression)
                routes.append((method, filled))
            }
        }
        return routes
    }

    /// A body sent in chunks, without Content-Length, past server.max_body_size: refused 413 in
    /// the one error shape by every route that reads a body (their engines on, so that each reads
    /// it), as a declared body of that size is before it is read; never NIO's "too many bytes" as
    /// a 500. Nothing is stored; a chunked body within the limit is still read.
    func testChunkedBodiesPastTheLimitAnswer413OnEveryRouteWithABody() async throws {
        let routes = try Self.routesWithABody()
        XCTAssertGreaterThan(routes.count, 20, "openapi.yaml was read: \(routes)")
        let manifest = """
            data_dir: data
            server: {port: 0, max_body_size: 4096}
            events: {cache_size: 1000}
            prefetch: {enabled: true, item_download_behavior: none}
            plugins: []

            """
        try await InProcessAPI.listening(manifest: manifest, in: folder) { port, _ in
            let chunk = String(repeating: "a", count: 2000)
            let chunked = (0..<3).map { _ in String(2000, radix: 16) + "\r\n" + chunk + "\r\n" }.joined() + "0\r\n\r\n"
            @Sendable func head(_ method: String, _ path: String) -> String {
                "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Type: application/json\r\n"
            }
            // The declared body the guard refuses today: the shape chunked bodies must match.
            let declared = try await Self.exchange(
                port, head("POST", "/v1/events") + "Content-Length: 6000\r\n\r\n" + String(repeating: "a", count: 6000))
            XCTAssertEqual(declared.status, 413, declared.body)
            XCTAssertEqual(Self.errorCode(declared.body), "payload_too_large", declared.body)

            for (method, path) in routes {
                let answer = try await Self.exchange(port, head(method, path) + "Transfer-Encoding: chunked\r\n\r\n" + chunked)
                XCTAssertEqual(answer.status, 413, "\(method) \(path): \(answer.body)")
                XCTAssertEqual(Self.errorCode(answer.body), "payload_too_large", "\(method) \(path): \(answer.body)")
                XCTAssertTrue(answer.body.contains("server.max_body_size is 4096"), "\(method) \(path): \(answer.body)")
            }
            // A chunked body within the limit is still read.
            let small = #"{"name":"within"}"#
            let accepted = try await Self.exchange(
                port,
                head("POST", "/v1/events") + "Transfer-Encoding: chunked\r\n\r\n" + String(small.utf8.count, radix: 16) + "\r\n" + small
                    + "\r\n0\r\n\r\n")
            XCTAssertEqual(accepted.status, 201, accepted.body)
            let stored = try await Self.exchange(port, "GET /v1/events?limit=100 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            let events = (try? JSONSerialization.jsonObject(with: Data(stored.body.utf8))) as? [[String: Any]]
            let named = events?.filter { $0["type"] as? String == "named_event" }.compactMap { $0["name"] as? String }
            XCTAssertEqual(named, ["within"], "none of the refused bodies was stored: \(stored.body)")
        }
    }

    /// `server.host: "::ffff:127.0.0.1"` answers its own Host, bracketed as a Host header always
    /// is, and the same address written another way; IPv6 names of server.allowed_hosts are
    /// accepted with or without brackets; every other name, and every malformed Host, is still 421.
    func testIPv6LiteralHostsMatchWithAndWithoutBracketsAndOtherNamesAreStillRefused() async throws {
        let manifest = """
            data_dir: data
            server: {host: "::ffff:127.0.0.1", port: 0, allowed_hosts: "[fd00::1], FD00::2, hub.example.lan"}
            events: {cache_size: 1000}
            plugins: []

            """
        try await InProcessAPI.listening(manifest: manifest, in: folder) { port, _ in
            @Sendable func status(_ hostHeader: String) async throws -> Int {
                try await Self.exchange(port, "GET /v1/health HTTP/1.1\r\nHost: \(hostHeader)\r\nConnection: close\r\n\r\n").status
            }
            let answered = [
                "[::ffff:127.0.0.1]:\(port)", "[::ffff:127.0.0.1]", "[::FFFF:127.0.0.1]:\(port)", "[::ffff:7f00:1]:\(port)",
                "[0:0:0:0:0:ffff:7f00:1]:\(port)", "[fd00::1]:\(port)", "[fd00:0::2]:\(port)", "hub.example.lan:\(port)",
                "127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "[::1]:\(port)", "[0::1]", "::1"
            ]
            for name in answered {
                let answer = try await status(name)
                XCTAssertEqual(answer, 200, "Host: \(name)")
            }
            let refused = [
                "evil.example:\(port)", "evil.example", "[::ffff:127.0.0.2]:\(port)", "[::ffff:127.0.0.1]evil.example",
                "[::ffff:127.0.0.1]:\(port)evil", "[::ffff:127.0.0.1", "::ffff:127.0.0.1]", "[evil.example]:\(port)",
                "[::2]:\(port)", "[fd00::3]", "127.0.0.1.evil.example", "localhost.evil.example:\(port)", "localhost:evil",
                ":localhost", ":\(port)", "[::1]@evil.example", "evil.example@localhost", "ffff", "1", "",
                "[fe80::1%25lo]:\(port)", "::ffff:127.0.0.1.evil.example"
            ]
            for name in refused {
                let answer = try await status(name)
                XCTAssertEqual(answer, 421, "Host: \(name)")
            }
        }
    }
}
