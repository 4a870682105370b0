import Foundation
import PluginTestKit
import XCTest

/// The bundled plugins, each loaded alone with PluginTestKit: no plugins.yaml, no host data
/// directory, no network; fixtures in, results and logs out. This is how plugin authors test theirs.
final class PluginTestKitTests: XCTestCase {
    func testFixedLocationAnswersItsConfig() throws {
        let harness = try PluginHarness(
            manifest: TestSupport.plugin("FixedLocation"),
            config: ["latitude": .double(48.8584), "longitude": .int(2), "location_id": .string("eiffel")])
        defer { harness.destroy() }
        guard case .location(let location) = harness.location() else { return XCTFail("no location") }
        XCTAssertEqual(location.latitude, 48.8584)
        XCTAssertEqual(location.longitude, 2)
        XCTAssertEqual(location.locationID, "eiffel")
        XCTAssertNil(location.name)
    }

    func testTheABI11KindsThroughTheHarness() throws {
        let conditions = try PluginHarness(
            manifest: TestSupport.plugin("FixedDeviceConditions"),
            config: ["network": .string("wifi"), "battery_level": .double(0.3)])
        defer { conditions.destroy() }
        XCTAssertEqual(try conditions.deviceConditions(), DeviceConditions(network: .wifi, metered: false, batteryLevel: 0.3))
        let header = try PluginHarness(manifest: TestSupport.plugin("DownloadRequestHeader"), config: ["headers": .string("X-A: 1")])
        defer { header.destroy() }
        let request = DownloadRequest(url: "https://a.example/x", itemId: "i", fileRole: "main")
        XCTAssertEqual(try header.convert(request).headers, ["X-A": "1"])
    }

    func testConfigIsCheckedAgainstTheSchema() throws {
        XCTAssertThrowsError(try PluginHarness(manifest: TestSupport.plugin("FixedLocation"), config: ["latitud": .double(1)])) { error in
            XCTAssertTrue("\(error)".contains("unknown config key 'latitud' (did you mean 'latitude'?)"), "\(error)")
        }
        XCTAssertThrowsError(try PluginHarness(manifest: TestSupport.plugin("FixedLocation"), config: ["latitude": .string("north")])) { error in
            XCTAssertTrue("\(error)".contains("'latitude' expects double, got string north"), "\(error)")
        }
        // A plugin's own refusal comes back with its message.
        XCTAssertThrowsError(try PluginHarness(manifest: TestSupport.plugin("FixedLocation"), config: ["latitude": .double(1)])) { error in
            XCTAssertTrue("\(error)".contains("set both 'latitude' and 'longitude', or neither"), "\(error)")
        }
    }

    func testStaticAdvertiserID() throws {
        let harness = try PluginHarness(manifest: TestSupport.plugin("StaticAdvertiserID"), config: ["advertiser_id": .string("abc")])
        XCTAssertEqual(harness.advertiserID(), .id("abc"))
        let limited = try PluginHarness(
            manifest: TestSupport.plugin("StaticAdvertiserID"),
            config: ["advertiser_id": .string("abc"), "limit_ad_tracking": .bool(true)])
        XCTAssertEqual(limited.advertiserID(), .limitAdTracking)
        let silent = try PluginHarness(manifest: TestSupport.plugin("StaticAdvertiserID"))
        XCTAssertEqual(silent.advertiserID(), .noOpinion)
    }

    func testJSONLinesLoggerWritesIntoTheScratchDataDirectory() throws {
        let harness = try PluginHarness(manifest: TestSupport.plugin("JSONLinesLogger"))
        harness.log(.warning, "hello from the harness", source: "kit")
        harness.flushLogging()
        let text = try String(contentsOfFile: harness.dataDirectory + "/logs/hubhost.jsonl", encoding: .utf8)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        XCTAssertEqual(object["message"] as? String, "hello from the harness")
        XCTAssertEqual(object["severity"] as? String, "warning")
        XCTAssertEqual(object["source"] as? String, "kit")
        let folder = harness.dataDirectory
        harness.destroy()
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder), "destroy removes the scratch data directory")
    }

    /// log and flush are [host-serialized]: threads sharing one harness reach the plugin one call at
    /// a time (one adapter per instance), so the Swift plugin's buffer is never written by two at once.
    func testLoggingCallsFromManyThreadsAreSerializedPerInstance() throws {
        let harness = try PluginHarness(manifest: TestSupport.plugin("JSONLinesLogger"))
        defer { harness.destroy() }
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for n in 0..<200 {
                harness.log(.warning, "thread \(thread) record \(n)", source: "kit")
                if n % 50 == 0 { harness.flushLogging() }
            }
        }
        harness.flushLogging()
        let text = try String(contentsOfFile: harness.dataDirectory + "/logs/hubhost.jsonl", encoding: .utf8)
        let lines = text.split(separator: "\n")
        XCTAssertEqual(lines.count, 8 * 200)
        let messages = Set(
            lines.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["message"] as? String
            })
        XCTAssertEqual(messages.count, 8 * 200, "every record is one whole line")
    }

    func testConsoleLoggerWritesOneLinePerRecord() throws {
        let harness = try PluginHarness(manifest: TestSupport.plugin("ConsoleLogger"), config: ["timestamps": .bool(false)])
        defer { harness.destroy() }
        let output = try captureStandardError {
            harness.log(.criticalError, "disk full", source: "store")
            harness.log(.info, "two\nlines", source: "engine")
            harness.flushLogging()
        }
        XCTAssertEqual(output, "CRITICAL [store] disk full\nINFO     [engine] two\nlines\n")
    }

    func testNoopPluginsThroughTheKit() throws {
        let harness = try PluginHarness(manifest: TestSupport.plugin("Noop"))
        defer { harness.destroy() }
        XCTAssertTrue(harness.compare(.int(1), .string("anything")))
        let event = PluginHarness.event(name: "PLAYER LOADED", attributes: [("Level", .int(3))])
        let outcome = harness.augment(event)
        XCTAssertEqual(outcome.status, 0)
        XCTAssertEqual(outcome.event, event, "the no-op augmentation changes nothing")
    }

    func testAugmentationEditsAndCapturedLogs() throws {
        let folder = try TestSupport.temporaryFolder(self)
        _ = try TestSupport.compileFixture("faulty_plugins.c", into: folder, name: "libfaulty.so")
        let harness = try PluginHarness(library: folder + "/libfaulty.so")
        defer { harness.destroy() }
        XCTAssertEqual(harness.logged.map(\.message), ["faulty fixture created", "faulty fixture created"])
        XCTAssertEqual(Set(harness.logged.map(\.source)), ["faulty-augmentation", "faulty-operator"])
        let outcome = harness.augment(PluginHarness.event(attributes: [("Fixture", .int(1)), ("Other", .bool(true))]))
        XCTAssertEqual(outcome.status, 0)
        XCTAssertEqual(outcome.event[attribute: "Fixture"], .string("augmented"), "replaced in place")
        XCTAssertEqual(outcome.event.attributes.map(\.name), ["Fixture", "Other"])
        XCTAssertTrue(harness.compare(.int(5), .int(5), operator: "faulty-operator"))
        XCTAssertFalse(harness.compare(.string("5"), .int(5)), "a type mismatch answers false")
    }

    /// Runs `body` with fd 2 pointed at a temporary file and returns what was written there.
    private func captureStandardError(_ body: () -> Void) throws -> String {
        let path = try TestSupport.temporaryFolder(self) + "/stderr.txt"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        fflush(nil)  // every C stream, stderr included
        let saved = dup(2)
        dup2(fd, 2)
        body()
        fflush(nil)
        dup2(saved, 2)
        close(saved)
        close(fd)
        return try String(contentsOfFile: path, encoding: .utf8)
    }
}
