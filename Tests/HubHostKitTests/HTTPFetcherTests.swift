import Foundation
import HubHostTools
import NIOPosix
import XCTest

@testable import HubHostKit

/// The blocking HTTP client over AsyncHTTPClient: never blocks an event loop, and a refused
/// connection is an error at once (not a retry until the deadline).
final class HTTPFetcherTests: XCTestCase {
    func testARequestOnAnEventLoopIsRefusedInsteadOfDeadlockingIt() throws {
        let collector = try TestCollector()
        defer { collector.stop() }
        let fetcher = HTTPFetcher()
        let result = try MultiThreadedEventLoopGroup.singleton.next().submit {
            fetcher.fetch("GET", collector.url, timeoutSeconds: 5)
        }.wait()
        guard case .failure(.unreachable(let why)) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(why.contains("event loop"), why)
        XCTAssertEqual(collector.paths.count, 0, "nothing was sent")
    }

    func testARefusedConnectionFailsWithItsCause() throws {
        let collector = try TestCollector()
        let url = collector.url
        collector.stop()
        guard case .failure(.unreachable(let why)) = HTTPFetcher().fetch("POST", url, body: Data("{}".utf8), timeoutSeconds: 60) else {
            return XCTFail("a stopped server answered")
        }
        XCTAssertTrue(why.contains(url), why)
    }

    func testAnswersCarryStatusHeadersAndBody() throws {
        let collector = try TestCollector()
        defer { collector.stop() }
        collector.routes = ["/x": (201, "{\"ok\":true}")]
        let response = try HTTPFetcher().fetch("GET", collector.url("/x"), headers: ["X-Test": "1"], timeoutSeconds: 10).get()
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "{\"ok\":true}")
        XCTAssertNotNil(response.headers["content-length"])
    }
}

/// Redirects are followed hop by hop, each checked before anything is sent to it: two loopback
/// servers on different names (127.0.0.1 and 127.0.0.2), and `localhost` as a third name.
final class HTTPRedirectTests: XCTestCase {
    var a: LoopbackHTTPServer!
    var b: LoopbackHTTPServer!
    /// What B received (method, path, headers, body).
    var reachedB: [LoopbackHTTPServer.Request] { received.requests }
    private let received = ReceivedRequests()

    /// Requests a server handler records. Safe to share: `all` is read and written under `lock`.
    final class ReceivedRequests: @unchecked Sendable {
        private let lock = NSLock()
        private var all: [LoopbackHTTPServer.Request] = []
        func add(_ request: LoopbackHTTPServer.Request) { lock.withLock { all.append(request) } }
        var requests: [LoopbackHTTPServer.Request] { lock.withLock { all } }
    }

    override func setUpWithError() throws {
        a = try LoopbackHTTPServer(address: "127.0.0.1")
        b = try LoopbackHTTPServer(address: "127.0.0.2")
        let aPort = a.port
        let bBase = "http://127.0.0.2:\(b.port)"
        a.start { fd, request in
            let redirects: [String: (Int, String)] = [
                "/to-b": (302, bBase + "/b"), "/post-to-b": (307, bBase + "/b"), "/to-a": (302, "/final"),
                "/see-other": (303, "/final"), "/to-localhost": (302, "http://localhost:\(aPort)/final"),
                "/loop": (302, "/loop"), "/to-file": (302, "file:///etc/passwd")
            ]
            if let (status, location) = redirects[request.path] {
                LoopbackHTTPServer.respond(fd, status, headers: ["Location": location], Data())
            } else {
                LoopbackHTTPServer.respond(fd, 200, Data("a \(request.method) \(request.body.count)".utf8))
            }
        }
        let received = self.received
        b.start { fd, request in
            received.add(request)
            LoopbackHTTPServer.respond(fd, 200, Data("b".utf8))
        }
        addTeardownBlock { [a, b] in
            a?.stop()
            b?.stop()
        }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(a.port)\(path)" }

    func testAHopOutsideTheAllowListIsRefusedNamingItsHostAndNothingReachesIt() {
        let result = HTTPFetcher().fetch(
            "GET", url("/to-b"), timeoutSeconds: 10, redirects: .allowedHosts(["127.0.0.1"], owner: "catalog"))
        guard case .failure(.redirectRefused(let why)) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(why.contains("127.0.0.2") && why.contains("http_allow of instance 'catalog'"), why)
        XCTAssertEqual(reachedB.count, 0)
        // Another name for the same machine is another host.
        let named = HTTPFetcher().fetch(
            "GET", url("/to-localhost"), timeoutSeconds: 10, redirects: .allowedHosts(["127.0.0.1"], owner: "catalog"))
        guard case .failure(.redirectRefused(let namedWhy)) = named else { return XCTFail("\(named)") }
        XCTAssertTrue(namedWhy.contains("localhost"), namedWhy)
    }

    func testTheHostsOwnRequestsFollowRedirectsOnlyOnTheirHost() throws {
        guard case .failure(.redirectRefused(let why)) = HTTPFetcher().fetch("GET", url("/to-b"), timeoutSeconds: 10) else {
            return XCTFail("followed to another host")
        }
        XCTAssertTrue(why.contains("only redirects on 127.0.0.1"), why)
        XCTAssertEqual(reachedB.count, 0)
        let same = try HTTPFetcher().fetch("GET", url("/to-a"), timeoutSeconds: 10).get()
        XCTAssertEqual(String(decoding: same.body, as: UTF8.self), "a GET 0")
    }

    func testAnAllowedHopIsFollowedWithoutTheCredentials() throws {
        let response = try HTTPFetcher().fetch(
            "POST", url("/post-to-b"), headers: ["Authorization": "Bearer secret", "X-Kept": "1"], body: Data("{}".utf8),
            timeoutSeconds: 10, redirects: .allowedHosts(["127.0.0.1", "127.0.0.2"], owner: "catalog")
        ).get()
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "b")
        let request = try XCTUnwrap(reachedB.first)
        XCTAssertEqual(request.method, "POST", "307 keeps the method")
        XCTAssertEqual(request.body, Data("{}".utf8), "and the body")
        XCTAssertNil(request.headers["authorization"], "no credentials to another host")
        XCTAssertEqual(request.headers["x-kept"], "1")
    }

    func testA303BecomesAGetAndLoopsAndOtherSchemesStop() throws {
        let seeOther = try HTTPFetcher().fetch("POST", url("/see-other"), body: Data("xyz".utf8), timeoutSeconds: 10).get()
        XCTAssertEqual(String(decoding: seeOther.body, as: UTF8.self), "a GET 0")
        guard case .failure(.redirectRefused(let loop)) = HTTPFetcher().fetch("GET", url("/loop"), timeoutSeconds: 10) else {
            return XCTFail("a redirect loop was followed for ever")
        }
        XCTAssertTrue(loop.contains("more than \(HTTPFetcher.maxRedirects) redirects"), loop)
        guard case .failure(.redirectRefused(let file)) = HTTPFetcher().fetch("GET", url("/to-file"), timeoutSeconds: 10) else {
            return XCTFail("a file: redirect was followed")
        }
        XCTAssertTrue(file.contains("not an http(s) URL"), file)
        let none = try HTTPFetcher().fetch("GET", url("/to-b"), timeoutSeconds: 10, redirects: .none).get()
        XCTAssertEqual(none.status, 302)
        XCTAssertEqual(reachedB.count, 0)
    }
}

/// An answer far past the limit (1 GiB, chunked, or declared) is stopped as the limit is crossed:
/// the client reads at most about the limit, whoever asked (a plugin, the web hub's whitelisted
/// fetch, the host's own requests).
final class HTTPBodyLimitTests: XCTestCase {
    /// Bytes of body the server managed to send before the client went away.
    final class Sent: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add(_ n: Int) { lock.withLock { count += n } }
        var bytes: Int { lock.withLock { count } }
    }

    /// A server answering every request with up to 1 GiB of body: chunked, or with a declared length.
    private func hugeServer(chunked: Bool) throws -> (LoopbackHTTPServer, Sent) {
        let server = try LoopbackHTTPServer()
        let sent = Sent()
        server.start { fd, _ in
            let head = chunked ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" : "HTTP/1.1 200 OK\r\nContent-Length: \(1 << 30)\r\n\r\n"
            guard LoopbackHTTPServer.sendAll(fd, Data(head.utf8)) else { return }
            let block = Data(repeating: UInt8(ascii: "x"), count: 1 << 20)
            let chunk = chunked ? Data("100000\r\n".utf8) + block + Data("\r\n".utf8) : block
            for _ in 0..<1024 {  // 1 GiB at most
                guard LoopbackHTTPServer.sendAll(fd, chunk) else { return }
                sent.add(block.count)
            }
            if chunked { _ = LoopbackHTTPServer.sendAll(fd, Data("0\r\n\r\n".utf8)) }
        }
        return (server, sent)
    }

    /// A gigabyte (`chunked`, or its length declared) fetched with a 4 MiB limit: the fetch fails
    /// naming the limit, and the server could send little past it. Returns the reason.
    private func fetchAGigabyte(chunked: Bool) throws -> String {
        let (server, sent) = try hugeServer(chunked: chunked)
        defer { server.stop() }
        let result = HTTPFetcher().fetch("GET", server.url("/big"), timeoutSeconds: 60, maxBodyBytes: 4 << 20)
        guard case .failure(.unreachable(let why)) = result else {
            XCTFail("\(result)")
            return ""
        }
        XCTAssertTrue(why.contains("larger than 4 MiB"), why)
        usleep(200_000)
        XCTAssertLessThan(sent.bytes, 64 << 20, "the client stopped reading near the limit")
        return why
    }

    func testAChunkedGigabyteIsStoppedAsTheLimitIsCrossed() throws {
        let why = try fetchAGigabyte(chunked: true)
        XCTAssertTrue(why.hasSuffix("the answer is larger than 4 MiB, the most hubhost reads of it"), why)
    }

    func testADeclaredGigabyteIsRefusedBeforeItsBodyIsRead() throws {
        _ = try fetchAGigabyte(chunked: false)
    }

    /// A plugin's request (the largest limit, 256 MiB) against 1 GiB: stopped at the limit, and
    /// the process's resident memory grows by about the limit, not the answer.
    func testAPluginsRequestStopsAtItsLimitAndMemoryStaysNearIt() throws {
        let (server, sent) = try hugeServer(chunked: true)
        defer { server.stop() }
        let before = ReloadTests.residentMB()
        let result = HTTPFetcher().fetch("GET", server.url("/big"), timeoutSeconds: 120)
        guard case .failure(.unreachable(let why)) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(why.contains("larger than 256 MiB"), why)
        usleep(200_000)
        XCTAssertLessThan(sent.bytes, 320 << 20, "sent \(sent.bytes >> 20) MiB")
        XCTAssertLessThan(ReloadTests.residentMB() - before, 700, "resident memory after the refusal")
    }

    /// The web hub's `/hub/whitelisted` fetch passes on at most 16 MiB.
    func testTheWhitelistedFetchHasItsOwnSmallerLimit() throws {
        XCTAssertEqual(WebContentHub.maxWhitelistedBytes, 16 << 20)
        let (server, sent) = try hugeServer(chunked: true)
        defer { server.stop() }
        let result = HTTPFetcher().fetch("GET", server.url("/page"), timeoutSeconds: 60, maxBodyBytes: WebContentHub.maxWhitelistedBytes)
        guard case .failure(.unreachable(let why)) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(why.contains("larger than 16 MiB"), why)
        usleep(200_000)
        XCTAssertLessThan(sent.bytes, 80 << 20)
    }
}
