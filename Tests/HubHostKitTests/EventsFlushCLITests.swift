import Foundation
import XCTest

/// `hubhost events flush` says why nothing was posted: no collector configured is a choice (exit
/// 0), a chosen sink that is not loaded is a failure that names its reason (exit 1).
final class EventsFlushCLITests: XCTestCase {
    private func flush(events: String, plugins: String = "[]") throws -> CommandResult {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("data_dir: data\nevents: \(events)\nplugins: \(plugins)\n", to: folder + "/plugins.yaml")
        let tracked = try TestSupport.hubhost(["track", "FLUSH", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(tracked.status, 0, tracked.stderr)
        return try TestSupport.hubhost(["events", "flush", "--manifest", folder + "/plugins.yaml"])
    }

    func testNoCollectorIsAChoiceAndAnUnloadedSinkNamesItsReason() throws {
        let none = try flush(events: "{}")
        XCTAssertEqual(none.status, 0, none.stderr)
        XCTAssertTrue(none.stdout.contains("no collector_url in events: nothing posted"), none.stdout)

        let missing = try flush(events: "{sink: no-such-sink}")
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stdout.contains("nothing posted: events.sink: no plugin instance 'no-such-sink'"), missing.stdout)
        XCTAssertFalse(missing.stdout.contains("collector_url"), "a sink was chosen: the collector is not the reason: \(missing.stdout)")

        // A Kafka sink whose instance is disabled: the reason names the instance, not the collector.
        let disabled = try flush(
            events: "{sink: kafka}",
            plugins: """

                  - id: kafka
                    use: \(TestSupport.plugin("KafkaSink"))
                    enabled: false
                """)
        XCTAssertEqual(disabled.status, 1)
        XCTAssertTrue(disabled.stdout.hasPrefix("nothing posted: "), disabled.stdout)
        XCTAssertTrue(disabled.stdout.contains("kafka"), disabled.stdout)
        XCTAssertFalse(disabled.stdout.contains("collector_url"), disabled.stdout)
    }
}
