import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost top` against a real serve: an augmentation's calls per second while a client posts
/// events, read from serve's own /metrics and GET /v1/plugins.
final class TopCommandTests: XCTestCase {
    func testTopShowsTheCallsPerSecondOfAnInstanceWhileEventsArePosted() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let plugin = try TestSupport.faultyFixture(nil, in: folder + "/src")
        try TestSupport.write(
            """
            data_dir: data
            server: {host: 127.0.0.1, port: 0}
            plugins:
              - {id: tagger, use: \(plugin)}
            """, to: folder + "/plugins.yaml")
        let serve = try ServeProcess(manifest: folder + "/plugins.yaml")
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

        let none = try TestSupport.hubhost(["top", "--url", "http://127.0.0.1:9", "--count", "1"], manifest: folder + "/plugins.yaml", in: folder)
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("no hubhost serve"), none.stderr)
    }
}
