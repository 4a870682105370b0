import Foundation
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
