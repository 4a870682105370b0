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
        // Each server's CPU per request, read from its threads' counters around each run.
        func cpuMicroseconds(_ run: [String: Any]) -> Double { (run["cpu"] as? [String: Any])?["microseconds"] as? Double ?? 0 }
        for run in runs {
            XCTAssertGreaterThan(run["requestsPerSecond"] as? Double ?? 0, 0, "\(run)")
            XCTAssertEqual(run["non2xx"] as? Int, 0, "\(run)")
            XCTAssertGreaterThan(cpuMicroseconds(run), 0, "\(run)")
        }
        XCTAssertGreaterThan(report["inProcessEventsPerSecond"] as? Double ?? 0, 0)
        // The HTTP framework alone under the same one-event loads (no batched run).
        let floor = try XCTUnwrap(report["floor"] as? [[String: Any]])
        XCTAssertEqual(floor.map { $0["connections"] as? Int }, [1, 4])
        for run in floor {
            XCTAssertGreaterThan(run["requestsPerSecond"] as? Double ?? 0, 0, "\(run)")
            XCTAssertEqual(run["non2xx"] as? Int, 0, "\(run)")
            XCTAssertGreaterThan(cpuMicroseconds(run), 0, "\(run)")
        }
        // The durable floor was measured in the same scratch folder.
        XCTAssertGreaterThan(report["durableCommitMs"] as? Double ?? 0, 0)
    }

    /// The durable bound: connections over (the framework's own cycle plus one shared commit).
    func testDurableBoundAddsOneCommitPerCycle() throws {
        // 1 connection, framework 5,000/s (0.2 ms a request), commit 0.2 ms: half the framework.
        XCTAssertEqual(try XCTUnwrap(IngestBenchmark.durableBound(connections: 1, frameworkPerSecond: 5_000, commitMs: 0.2)), 0.5, accuracy: 1e-9)
        // 32 connections, framework 32,000/s (1 ms a cycle), commit 0.25 ms: 0.8.
        XCTAssertEqual(try XCTUnwrap(IngestBenchmark.durableBound(connections: 32, frameworkPerSecond: 32_000, commitMs: 0.25)), 0.8, accuracy: 1e-9)
        XCTAssertEqual(IngestBenchmark.durableBound(connections: 8, frameworkPerSecond: 10_000, commitMs: 0), 1)
        // Out-of-range figures give no bound rather than a division by zero or a negative rate.
        XCTAssertNil(IngestBenchmark.durableBound(connections: 0, frameworkPerSecond: 5_000, commitMs: 0.2))
        XCTAssertNil(IngestBenchmark.durableBound(connections: 1, frameworkPerSecond: 0, commitMs: 0.2))
        XCTAssertNil(IngestBenchmark.durableBound(connections: 1, frameworkPerSecond: .nan, commitMs: 0.2))
        XCTAssertNil(IngestBenchmark.durableBound(connections: 1, frameworkPerSecond: 5_000, commitMs: -1))
    }

    /// One durable commit is measured on a real store file: positive, and every row is on disk.
    func testDurableCommitIsTimedOnARealStore() throws {
        let folder = NSTemporaryDirectory() + "hubhost-durable-commit-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let ms = try IngestBenchmark.durableCommitMs(folder: folder, commits: 20)
        XCTAssertGreaterThan(ms, 0)
        XCTAssertLessThan(ms, 10_000)
        XCTAssertEqual(try EventStore.open(path: folder + "/durable-commit.sqlite").store.count(status: .notPosted), 20)
    }
}
