import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost serve` tried as an attacker would, where it takes a real socket: other web pages and
/// rebinding names (the Host header), idle connections, TLS, and a non-loopback address without a
/// token. serve's API listens in this process (InProcessAPI) but for TLS, which serve sets up
/// itself, and the refusal to start, which is serve's exit status. The guard's other refusals are
/// tested without a socket (HTTPAPIRouteTests).
final class ServeSecurityTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
    }

    /// serve's API on `server:` listening in this process while `body` runs off Swift concurrency's
    /// threads with its client.
    private func serve(server: String = "{port: 0}", _ body: @escaping @Sendable (ListeningAPI) throws -> Void) async throws {
        try await InProcessAPI.listening(
            manifest: "data_dir: data\nserver: \(server)\nevents: {cache_size: 1000}\nplugins: []\n", in: folder, services: true
        ) { port, _ in
            try await TestSupport.offPool { try body(ListeningAPI(port: port)) }
        }
    }

    private static func storedCount(_ server: any JSONCalls) throws -> Int {
        let (_, stats) = try server.call("GET", "/v1/events/stats")
        return ((stats as? [String: Int]) ?? [:]).values.reduce(0, +)
    }

    func testOtherWebPagesCannotWriteAndRebindingNamesCannotRead() async throws {
        try await serve { server in
            let json = ["Content-Type": "application/json"]
            // A cross-site "simple" POST (text/plain, foreign Origin), as any page the user visits could send.
            var answer = try RawHTTPClient(port: server.port).request(
                "POST", "/v1/events", headers: ["Content-Type": "text/plain", "Origin": "http://evil.example"], body: #"{"name":"x"}"#)
            XCTAssertEqual(answer.status, 403, answer.body)
            XCTAssertTrue(answer.body.contains(#""code":"foreign_origin""#), answer.body)
            // The same with a JSON content type still comes from a foreign origin.
            answer = try RawHTTPClient(port: server.port).request(
                "POST", "/v1/events", headers: json.merging(["Origin": "http://evil.example"]) { a, _ in a }, body: #"{"name":"x"}"#)
            XCTAssertEqual(answer.status, 403, answer.body)
            // No Origin (a command-line client), but not JSON: refused, nothing stored.
            answer = try RawHTTPClient(port: server.port).request(
                "POST", "/v1/events", headers: ["Content-Type": "text/plain"], body: #"{"name":"x"}"#)
            XCTAssertEqual(answer.status, 415, answer.body)
            XCTAssertEqual(try Self.storedCount(server), 0)
            // DNS rebinding: a page whose name now points at 127.0.0.1 sends its own Host.
            answer = try RawHTTPClient(port: server.port).request("GET", "/v1/events", headers: ["Host": "evil.example:\(server.port)"])
            XCTAssertEqual(answer.status, 421, answer.body)
            XCTAssertFalse(answer.body.contains("timestampMs"))
            // The server's own origin and loopback names work.
            answer = try RawHTTPClient(port: server.port).request(
                "POST", "/v1/events",
                headers: json.merging(["Origin": "http://127.0.0.1:\(server.port)", "Host": "127.0.0.1:\(server.port)"]) { a, _ in a },
                body: #"{"name":"ok"}"#)
            XCTAssertEqual(answer.status, 201, answer.body)
            XCTAssertEqual(
                try RawHTTPClient(port: server.port).request("GET", "/v1/health", headers: ["Host": "localhost:\(server.port)"]).status, 200)
        }
    }

    func testIdleConnectionsAreClosed() async throws {
        try await serve(server: "{port: 0, idle_timeout: 0.5}") { server in
            let idle = try RawHTTPClient(port: server.port)
            idle.send("GET /v1/health HTTP/1.1\r\n")  // a head that never ends
            XCTAssertTrue(idle.isClosedByServer(), "the idle connection is closed after idle_timeout")
            XCTAssertEqual(try server.call("GET", "/v1/health").0, 200)
        }
    }

    func testATokenIsRequiredWhenConfiguredAndOffLoopback() async throws {
        try "s3cret-token\n".write(toFile: folder + "/token", atomically: true, encoding: .utf8)
        try await serve(server: "{port: 0, auth_token_file: token}") { server in
            XCTAssertEqual(try RawHTTPClient(port: server.port).request("GET", "/v1/events").status, 401)
            XCTAssertEqual(
                try RawHTTPClient(port: server.port).request("GET", "/v1/events", headers: ["Authorization": "Bearer s3cret-tokeX"]).status, 401)
            XCTAssertEqual(
                try RawHTTPClient(port: server.port).request("GET", "/v1/events", headers: ["Authorization": "Bearer s3cret-token"]).status, 200)
            XCTAssertEqual(try RawHTTPClient(port: server.port).request("GET", "/v1/health").status, 200, "health stays open for probes")
        }

        // Listening beyond loopback without a token: serve refuses to start, with the reason.
        try TestSupport.write("data_dir: data\nserver: {host: 0.0.0.0, port: 0}\nplugins: []\n", to: folder + "/open.yaml")
        let result = try TestSupport.hubhost(["serve", "--manifest", folder + "/open.yaml"])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("not a loopback address"), result.stderr)
    }
}

extension ServeSecurityTests {
    /// server.tls_certificate and server.tls_key: serve speaks HTTPS (checked with the openssl
    /// command as the client), and plain HTTP to that port gets no answer.
    func testTLSFromCertificateAndKeyFiles() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let made = try TestSupport.run(
            "/usr/bin/env",
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                "-days", "1", "-keyout", folder + "/key.pem", "-out", folder + "/cert.pem"
            ])
        XCTAssertEqual(made.status, 0, made.stderr)
        try TestSupport.write(
            "data_dir: data\nserver: {port: 0, tls_certificate: cert.pem, tls_key: key.pem}\nplugins: []\n", to: folder + "/plugins.yaml")
        let server = try ServeProcess(manifest: folder + "/plugins.yaml", scheme: "https")
        let request = "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nConnection: close\r\n\r\n"
        let answer = try TestSupport.run(
            "/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-quiet"],
            timeout: 30, input: request)
        XCTAssertTrue(answer.stdout.contains("HTTP/1.1 200"), answer.stdout + answer.stderr)
        XCTAssertTrue(answer.stdout.contains(#"{"status":"ok"}"#), answer.stdout)
        let plain = try? RawHTTPClient(port: server.port).request("GET", "/v1/health")
        XCTAssertNotEqual(plain?.status, 200, "plain HTTP gets no answer from the TLS port")
    }
}

extension ServeSecurityTests {
    /// Delivery never runs on a request's path: with cache_size reached and a collector that hangs,
    /// POST /v1/events is still answered at once (the delivery service posts in the background).
    func testAHangingCollectorNeverHoldsUpARequest() async throws {
        let folder = try TestSupport.temporaryFolder(self)
        let collector = try TestCollector()
        defer { collector.stop() }
        collector.script([.hang, .hang, .hang], then: .hang)
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {cache_size: 1, collector_url: "\(collector.url)", post_timeout: 1 hr, flush_interval: 1 hr}
            plugins: []
            """, to: folder + "/plugins.yaml")
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                // The first event wakes delivery, whose POST then hangs for the hour of post_timeout.
                XCTAssertEqual(try server.call("POST", "/v1/events", #"{"name":"first"}"#).0, 201)
                for _ in 0..<100 where collector.paths.isEmpty { usleep(50_000) }
                XCTAssertFalse(collector.paths.isEmpty, "delivery started and is now hanging on the collector")
                // Requests still get their answers while that delivery hangs (each within call's 10 s).
                for n in 0..<5 {
                    XCTAssertEqual(try server.call("POST", "/v1/events", #"{"name":"more-\#(n)"}"#).0, 201)
                }
                XCTAssertEqual(try server.call("GET", "/v1/health").0, 200)
                collector.stop()  // the hanging POSTs end: serve's shutdown (a last flush) waits on none
            }
        }
    }
}

/// What counts as a loopback address for `server.host` (serve listens without a token only there):
/// parsed as an address, never by its first characters.
final class LoopbackAddressTests: XCTestCase {
    func testOnlyLoopbackAddressesCountAndANameStartingWith127DoesNot() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.255.0.9", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "[::ffff:7f00:1]"] {
            XCTAssertTrue(ServerSettings.isLoopback(host), host)
        }
        for host in [
            "127.attacker.example", "127.0.0.1.nip.io", "0.0.0.0", "::", "10.0.0.1", "::ffff:10.0.0.1", "128.0.0.1", "localhost.example", "", "[::1"
        ] {
            XCTAssertFalse(ServerSettings.isLoopback(host), host)
        }
    }
}
