import Foundation
import HubHostTools
import XCTest

/// `hubhost plugins test` on event_sink plugins (Tests/Fixtures/test_sink.c): a good sink passes
/// every test; one that answers garbage outcomes, crashes or hangs fails the test that met it,
/// with its cause, and the run goes on.
final class EventSinkValidatorTests: XCTestCase {
    private func validate(mode: String, _ extra: [String] = []) throws -> (status: Int32, report: PluginsTestReport) {
        let folder = try TestSupport.temporaryFolder(self)
        let (status, report, _) = try PluginsTestReport.run(try EventSinkTests.sinkFixture(in: folder, mode: mode), extra)
        return (status, report)
    }

    func testAGoodSinkPassesEveryTest() throws {
        let (status, report) = try validate(mode: "deliver")
        XCTAssertEqual(status, 0)
        XCTAssertEqual(report.failed, 0, "\(report.results.filter { $0.outcome == .failed })")
        XCTAssertEqual(
            Set(report.results.map(\.name)).isSuperset(of: ["test-sink/deliver-batch", "test-sink/deliver-one", "test-sink/deliver-largest"]), true)
        XCTAssertEqual(report.passed, 2 + 4 + 3)  // library, lifecycle, the sink's own
    }

    func testGarbageCrashesAndHangsAreEachReported() throws {
        let cases: [(mode: String, check: (ConformanceResult) -> Bool)] = [
            ("garbage", { $0.message.contains("answered outcome 12345, which the ABI does not define") }),
            ("crash", { $0.signal == SIGSEGV }),
            ("hang", { $0.timedOut })
        ]
        for (mode, check) in cases {
            let (status, report) = try validate(mode: mode, ["--call-budget", "1500", "--filter", "deliver-batch"])
            XCTAssertEqual(status, 1, mode)
            let result = try XCTUnwrap(report.result("test-sink/deliver-batch"), mode)
            XCTAssertEqual(result.outcome, .failed, mode)
            XCTAssertTrue(check(result), "\(mode): \(result)")
        }
    }

    /// The bundled Kafka and NATS sinks pass with their test_config (nothing listens there: every
    /// answer is a retry, within the call budget).
    func testTheBundledSinksPassThePluginTest() throws {
        for name in ["KafkaSink", "NatsSink"] {
            let (status, report, _) = try PluginsTestReport.run(TestSupport.plugin(name))
            XCTAssertEqual(status, 0, name)
            XCTAssertEqual(report.failed, 0, "\(name): \(report.results.filter { $0.outcome == .failed })")
            XCTAssertEqual(report.passed, 2 + 4 + 3, name)
        }
    }
}
