import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost top` against a real serve: an augmentation's calls per second while a client posts
/// events, read from serve's own /metrics and GET /v1/plugins.
final class TopCommandTests: XCTestCase {
    func testTopShowsTheCallsPerSecondOfAnInstanceWhileEventsArePosted() async throws {
        let folder = try TestSupport.temporaryFolder(self)
        let plugin = try TestSupport.faultyFixture(nil, in: folder + "/src")
        try TestSupport.write(
            """
            data_dir: data
            server: {host: 127.0.0.1, port: 0}
            plugins:
              - {id: tagger, use: \(plugin)}
            """, to: folder + "/plugins.yaml")
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml") { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                let stop = DispatchSemaphore(value: 0)
                let posted = DispatchGroup()
                posted.enter()
                Thread {
                    defer { posted.leave() }
                    for n in 0..<5_000 {
                        if stop.wait(timeout: .now()) == .success { break }
                        _ = try? serve.call("POST", "/v1/events", #"{"type":"named_event","name":"E\#(n)"}"#)
                    }
                }.start()
                let top = try TestSupport.hubhost(
                    ["top", "--url", serve.base, "--interval", "1", "--count", "2", "--json"], manifest: folder + "/plugins.yaml", in: folder)
                stop.signal()
                XCTAssertEqual(posted.wait(timeout: .now() + 60), .success)
                XCTAssertEqual(top.status, 0, top.description)
                // One JSON object per refresh, each printed whole.
                let refreshes = top.stdout.components(separatedBy: "\n}\n").filter { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
                XCTAssertEqual(refreshes.count, 2, top.stdout)
                let last = try TestSupport.json(refreshes[1] + "\n}", as: [String: Any].self)
                let row = try XCTUnwrap((last["instances"] as? [[String: Any]])?.first { $0["id"] as? String == "tagger" }, "\(last)")
                XCTAssertEqual(row["state"] as? String, "loaded")
                XCTAssertGreaterThan(row["callsPerSecond"] as? Double ?? 0, 0, "events were augmented during the interval: \(row)")
                XCTAssertEqual(row["errorsPerSecond"] as? Double, 0)
                let p99 = try XCTUnwrap(row["p99Milliseconds"] as? Double, "the calls' 99th percentile: \(row)")
                XCTAssertTrue(p99 > 0 && p99 <= 30_000, "a bucket bound: \(p99)")
                // No collector_url: every event posted waits, and the sink's backlog shows them.
                let sink = try XCTUnwrap(last["sink"] as? [String: Any], "the sink's row: \(last)")
                XCTAssertEqual(sink["sink"] as? String, "http-collector")
                XCTAssertGreaterThan(sink["backlog"] as? Double ?? 0, 0, "\(sink)")
                XCTAssertEqual(sink["postedPerSecond"] as? Double, 0)

                let none = try TestSupport.hubhost(
                    ["top", "--url", "http://127.0.0.1:9", "--count", "1"], manifest: folder + "/plugins.yaml", in: folder)
                XCTAssertEqual(none.status, 1)
                XCTAssertTrue(none.stderr.contains("no hubhost serve"), none.stderr)
            }
        }
    }

    /// The 99th percentile between two samples, from the histogram's cumulative buckets summed over
    /// an instance's kinds: the first bound that holds 99% of the calls made in between.
    func testTheP99IsTheFirstBucketHoldingNinetyNinePercentOfTheCallsBetweenSamples() {
        func series(_ kind: String, _ le: String) -> String {
            PrometheusText.key("hubhost_plugin_call_duration_seconds_bucket", ["instance": "a", "kind": kind, "le": le])
        }
        let before: [String: Double] = [series("augmentation", "0.001"): 10, series("augmentation", "0.1"): 10, series("augmentation", "+Inf"): 10]
        // 100 calls in between: 97 within 1 ms (augmentation), 2 more within 100 ms (one per kind), 1 slower.
        let after: [String: Double] = [
            series("augmentation", "0.001"): 107, series("augmentation", "0.1"): 108, series("augmentation", "+Inf"): 109,
            series("event_sink", "0.001"): 0, series("event_sink", "0.1"): 1, series("event_sink", "+Inf"): 1,
            PrometheusText.key("hubhost_plugin_call_duration_seconds_bucket", ["instance": "b", "kind": "event_sink", "le": "+Inf"]): 5
        ]
        XCTAssertEqual(PrometheusText.quantile(0.99, of: "hubhost_plugin_call_duration_seconds", instance: "a", before: before, after: after), 0.1)
        XCTAssertEqual(
            PrometheusText.quantile(0.99, of: "hubhost_plugin_call_duration_seconds", instance: "a", before: after, after: after), nil,
            "no calls in between")
        XCTAssertEqual(
            PrometheusText.quantile(0.99, of: "hubhost_plugin_call_duration_seconds", instance: "c", before: before, after: after), nil,
            "another instance's series")
    }
}
