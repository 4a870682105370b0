import Foundation
import XCTest

@testable import HubHostKit
@testable import HubHostTools

/// `hubhost bench ingest`: its scratch manifest, wrk's error line, and a short real run of the
/// command (serve, wrk, the in-process yardstick) printing its figures. Not timed: it checks that
/// every measurement ran and every request was answered 201.
final class IngestBenchmarkTests: XCTestCase {
    func testScratchManifestKeepsThePluginsAndMovesTheData() {
        let text = """
            # comment
            data_dir: .hubhost
            hub:
              preloaded_bundle: Examples/content
            plugins:
              - id: location
                use: Plugins/FixedLocation/plugin.yaml   # trailing comment
              - id: pinned
                use: /abs/plugin.yaml
            """
        let scratch = IngestBenchmark.scratchManifest(from: text, folder: "/repo", dataDirectory: "/tmp/x/data")
        XCTAssertEqual(
            scratch.split(separator: "\n").map(String.init),
            [
                "# comment", "data_dir: /tmp/x/data", "hub:", "  preloaded_bundle: /repo/Examples/content", "plugins:",
                "  - id: location", "    use: /repo/Plugins/FixedLocation/plugin.yaml", "  - id: pinned", "    use: /abs/plugin.yaml"
            ])
        XCTAssertTrue(IngestBenchmark.scratchManifest(from: "plugins: []", folder: "/r", dataDirectory: "/d").hasPrefix("data_dir: /d\n"))
    }

    func testWrkSocketErrorsAreSummed() {
        XCTAssertEqual(IngestBenchmark.socketErrors("  Socket errors: connect 1, read 2, write 0, timeout 3\nRequests/sec: 5"), 6)
        XCTAssertEqual(IngestBenchmark.socketErrors("Requests/sec: 5"), 0)
    }

    func testAShortRunMeasuresEveryConnectionCount() throws {
        let result = try TestSupport.hubhost(
            [
                "bench", "ingest", "--manifest", TestSupport.repository + "/plugins.yaml", "--plugins", TestSupport.repository + "/Plugins",
                "--seconds", "1", "--connections", "1,4", "--batch-connections", "2", "--batch-size", "10", "--count", "2000", "--json"
            ], timeout: 120)
        XCTAssertEqual(result.status, 0, result.stderr)
        let report = try result.json(as: [String: Any].self)
        let runs = try XCTUnwrap(report["runs"] as? [[String: Any]])
        XCTAssertEqual(runs.map { $0["connections"] as? Int }, [1, 4, 2])
        XCTAssertEqual(runs.map { $0["eventsPerRequest"] as? Int }, [1, 1, 10])
        for run in runs {
            XCTAssertGreaterThan(run["requestsPerSecond"] as? Double ?? 0, 0, "\(run)")
            XCTAssertEqual(run["non2xx"] as? Int, 0, "\(run)")
        }
        XCTAssertGreaterThan(report["inProcessEventsPerSecond"] as? Double ?? 0, 0)
        // The HTTP framework alone under the same one-event loads (no batched run).
        let floor = try XCTUnwrap(report["floor"] as? [[String: Any]])
        XCTAssertEqual(floor.map { $0["connections"] as? Int }, [1, 4])
        for run in floor {
            XCTAssertGreaterThan(run["requestsPerSecond"] as? Double ?? 0, 0, "\(run)")
            XCTAssertEqual(run["non2xx"] as? Int, 0, "\(run)")
        }
    }
}
