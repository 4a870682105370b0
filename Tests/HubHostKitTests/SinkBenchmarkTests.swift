import Foundation
import XCTest

/// `hubhost bench sinks` works end to end on a small count (it measures; this checks it runs and
/// reports every sink beside its raw client and the store ceiling, never a speed).
final class SinkBenchmarkTests: XCTestCase {
    func testEverySinkIsMeasuredBesideItsRawClient() throws {
        let run = try TestSupport.hubhost(["bench", "sinks", "--count", "300", "--batch-size", "100", "--json"], timeout: 300)
        XCTAssertEqual(run.status, 0, run.stderr)
        let result = try run.json(as: [String: Any].self)
        let rows = try XCTUnwrap(result["rows"] as? [[String: Any]])
        // The store ceiling (plain SQLite claim + delivered cursor) was measured in the run, and every
        // sink is given beside it: its rate over the ceiling's. So was the ceiling with a status
        // written per delivered event, the store before the cursor.
        let ceiling = try XCTUnwrap(result["storeCeilingPerSecond"] as? Double, "\(result)")
        XCTAssertGreaterThan(ceiling, 0)
        XCTAssertTrue(ceiling.isFinite)
        let before = try XCTUnwrap(result["storeCeilingStatusPerEventPerSecond"] as? Double, "\(result)")
        XCTAssertGreaterThan(before, 0)
        XCTAssertTrue(before.isFinite)
        XCTAssertEqual(rows.compactMap { $0["sink"] as? String }, ["http-collector", "kafka-sink", "nats-sink"])
        for row in rows {
            XCTAssertGreaterThan(row["eventsPerSecond"] as? Double ?? 0, 0, "\(row)")
            XCTAssertGreaterThan(row["rawPerSecond"] as? Double ?? 0, 0, "\(row)")
            let eventsPerSecond = row["eventsPerSecond"] as? Double ?? 0
            XCTAssertEqual(
                row["ceilingRatio"] as? Double ?? 0, eventsPerSecond / ceiling, accuracy: 1e-9 * max(1, eventsPerSecond / ceiling), "\(row)")
            // Where the time went: the sink's calls happened within the run, and the store had its part.
            let seconds = row["seconds"] as? Double ?? 0
            XCTAssertGreaterThan(row["sinkSeconds"] as? Double ?? 0, 0, "\(row)")
            XCTAssertLessThanOrEqual(row["sinkSeconds"] as? Double ?? .infinity, seconds, "\(row)")
            XCTAssertGreaterThan(row["storeSeconds"] as? Double ?? 0, 0, "\(row)")
            XCTAssertLessThanOrEqual(row["waitingForSinkSeconds"] as? Double ?? .infinity, seconds, "\(row)")
        }
        XCTAssertEqual(result["count"] as? Int, 300)
    }
}
