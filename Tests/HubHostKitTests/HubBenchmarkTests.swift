import XCTest

@testable import HubHostKit
@testable import HubHostTools

/// The hub benchmark's parts that can be checked without timing anything.
final class HubBenchmarkTests: XCTestCase {
    func testSelectionAgreesWithTheSQLBaseline() throws {
        let result = try HubSelectionBenchmark(hubs: 40, articles: 400, selections: 30).run()
        XCTAssertEqual(result.selections, 30)
        XCTAssertEqual(result.agreeing, 30, "tailoring and the SQL query must choose the same hub for every user")
    }

    func testSyntheticBundleShape() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let ids = try SyntheticBundle(hubs: 3, channelsPerHub: 5, articles: 32).write(to: folder + "/b.sqlite3")
        let bundle = try ContentBundle(path: folder + "/b.sqlite3")
        XCTAssertEqual(bundle.hubs.count, 3)
        XCTAssertEqual(bundle.hubs.flatMap(\.channels).count, 15)
        XCTAssertEqual(bundle.hubs.flatMap(\.channels).flatMap(\.articles).map(\.id).sorted(), ids.sorted())
        XCTAssertNotNil(bundle.body(ofArticle: ids[0]))
    }

    /// `bench floor-server`, the HTTP framework alone that bench hub and bench ingest measure beside
    /// serve: every exported page by its path, byte for byte; 404 for any other; POST /v1/events
    /// answers 201 with the body it was sent.
    func testFloorServerAnswersFromMemory() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let pages = [
            "/hub": "<html>hub</html>", "/hub/article/a1": "<html>article \u{00e9}</html>", "/hub/channel/c1": String(repeating: "x", count: 70_000)
        ]
        for (path, body) in pages {
            try FileManager.default.createDirectory(atPath: folder + "/pages" + path, withIntermediateDirectories: true)
            try TestSupport.write(body, to: folder + "/pages" + path + "/index.html")
        }
        let server = try ServeProcess(command: ["bench", "floor-server", "--pages", folder + "/pages", "--port", "0"])
        for (path, body) in pages {
            let response = try server.http.fetch("GET", server.base + path, timeoutSeconds: 10).get()
            XCTAssertEqual(response.status, 200, path)
            XCTAssertEqual(response.body, Data(body.utf8), path)
        }
        XCTAssertEqual(try server.http.fetch("GET", server.base + "/hub/nothing", timeoutSeconds: 10).get().status, 404)
        let event = #"{"type":"named_event","name":"E"}"#
        let posted = try server.http.fetch(
            "POST", server.base + "/v1/events", headers: ["Content-Type": "application/json"],
            body: Data(event.utf8), timeoutSeconds: 10
        ).get()
        XCTAssertEqual(posted.status, 201)
        XCTAssertEqual(posted.body, Data(event.utf8))
        // A port out of range is refused before anything listens.
        let refused = try TestSupport.hubhost(["bench", "floor-server", "--port", "70000"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("--port must be 0 to 65535"), refused.stderr)
        // A --pages folder that is missing, or holds no page, is refused before anything listens.
        let missing = try TestSupport.hubhost(["bench", "floor-server", "--pages", folder + "/none"], timeout: 20)
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("not a folder that can be read"), missing.stderr)
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        let empty = try TestSupport.hubhost(["bench", "floor-server", "--pages", folder + "/empty"], timeout: 20)
        XCTAssertNotEqual(empty.status, 0)
        XCTAssertTrue(empty.stderr.contains("no <path>/index.html"), empty.stderr)
    }

    /// The page's own work in process: every presented page in rotation, each view recorded by
    /// the time it returns, and the middleware figure (set by the CLI) in the sum.
    func testPageStepMeasuresThePagesOfThePresentedHub() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let bundlePath = try HubSelectionBenchmark(hubs: 4, articles: 40).writeBundle(to: folder + "/bundle.sqlite3")
        var benchmark = PageStepBenchmark(bundlePath: bundlePath, views: 300)
        benchmark.middlewareStep = { requests in
            XCTAssertEqual(requests, 300)
            return 1.5
        }
        let result = try benchmark.run()
        let presented = try XCTUnwrap(Presentation(bundle: try ContentBundle(path: bundlePath), counts: [:]))
        XCTAssertEqual(result.pages, 1 + presented.channels.count + presented.channels.flatMap(\.articles).count)
        XCTAssertEqual(result.views, 300)
        XCTAssertGreaterThan(result.pageStepMicroseconds, 0)
        XCTAssertGreaterThan(result.pageStepWallMicroseconds, 0)
        XCTAssertGreaterThanOrEqual(result.recorderMicrosecondsPerView, 0)
        XCTAssertTrue((0...300).contains(result.fellBackToShow), "\(result)")
        XCTAssertEqual(result.middlewareMicroseconds, 1.5)
        XCTAssertEqual(
            result.totalMicroseconds, result.pageStepMicroseconds + result.recorderMicrosecondsPerView + 1.5, accuracy: 1e-9)
        XCTAssertThrowsError(try PageStepBenchmark(bundlePath: bundlePath, views: 0).run())
    }

    /// A short real run of `bench hub` (serve, wrk, nginx, the floor): the JSON carries the page's
    /// own work, measured in process before serve started; --skip-pages leaves it out.
    func testAShortRunOfBenchHubReportsThePageStep() throws {
        let small = ["bench", "hub", "--hubs", "4", "--articles", "40", "--selections", "5"]
        let result = try TestSupport.hubhost(small + ["--seconds", "1", "--connections", "2", "--views", "500", "--json"], timeout: 180)
        XCTAssertEqual(result.status, 0, result.stderr)
        let report = try result.json(as: [String: Any].self)
        XCTAssertNotNil(report["pages"] as? [String: Any], "\(report)")
        let step = try XCTUnwrap(report["pageStep"] as? [String: Any], "\(report)")
        XCTAssertEqual(step["views"] as? Int, 500)
        XCTAssertGreaterThan(step["pages"] as? Int ?? 0, 1, "\(step)")
        XCTAssertGreaterThan(step["pageStepMicroseconds"] as? Double ?? 0, 0, "\(step)")
        XCTAssertGreaterThan(step["pageStepWallMicroseconds"] as? Double ?? 0, 0, "\(step)")
        XCTAssertGreaterThanOrEqual(step["recorderMicrosecondsPerView"] as? Double ?? -1, 0, "\(step)")
        XCTAssertGreaterThan(step["middlewareMicroseconds"] as? Double ?? 0, 0, "serve's middlewares measured: \(step)")
        XCTAssertGreaterThan(step["totalMicroseconds"] as? Double ?? 0, 0, "\(step)")

        let selectionOnly = try TestSupport.hubhost(small + ["--skip-pages", "--json"], timeout: 60)
        XCTAssertEqual(selectionOnly.status, 0, selectionOnly.stderr)
        XCTAssertNil(try selectionOnly.json(as: [String: Any].self)["pageStep"])
        let refused = try TestSupport.hubhost(small + ["--skip-pages", "--views", "0"], timeout: 60)
        XCTAssertEqual(refused.status, 64)
        XCTAssertTrue(refused.stderr.contains("--views must be 1 to 10000000"), refused.stderr)
    }

    func testWrkOutputIsRead() throws {
        let output = """
            Running 5s test @ http://127.0.0.1:8080
              2 threads and 16 connections
              Thread Stats   Avg      Stdev     Max   +/- Stdev
                Latency   512.31us  100.00us   3.00ms   90.00%
              Latency Distribution
                 50%  480.00us
                 75%  600.00us
                 90%  700.00us
                 99%    1.25ms
              150000 requests in 5.00s, 100.00MB read
              Non-2xx or 3xx responses: 12
            Requests/sec:  30000.50
            Transfer/sec:     20.00MB
            """
        let figures = try PageServingBenchmark.parseWrk(output)
        XCTAssertEqual(figures.requestsPerSecond, 30000.50)
        XCTAssertEqual(figures.p50Ms, 0.48, accuracy: 1e-9)
        XCTAssertEqual(figures.p99Ms, 1.25, accuracy: 1e-9)
        XCTAssertEqual(figures.non2xx, 12)
        XCTAssertThrowsError(try PageServingBenchmark.parseWrk("unable to connect"))
    }
}
