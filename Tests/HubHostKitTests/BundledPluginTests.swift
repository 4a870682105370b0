import Foundation
import HubHostTools
import XCTest

@testable import HubHostKit

/// Every bundled plugin, loaded through the real loader from its plugin.yaml.
final class BundledPluginTests: FolderTestCase {
    private func host(_ plugins: String, logging: String = "{severity: info, verbosity: debug}") throws -> HubHost {
        try TestSupport.write("data_dir: data\nlogging: \(logging)\nplugins:\n\(plugins)", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    func testEveryBundledPluginLoadsFromTheDefaultManifestAndAgreesWithItsManifest() throws {
        let bundled = try FileManager.default.contentsOfDirectory(atPath: TestSupport.repository + "/Plugins").sorted()
        XCTAssertEqual(
            bundled,
            [
                "ConsoleLogger", "DownloadRequestHeader", "ExtraOperators", "FixedDeviceConditions", "FixedLocation", "HTTPContentProvider",
                "JSONLinesLogger", "KafkaSink", "LinuxDeviceConditions", "LocalContentProvider", "LocationAugmentation", "NatsSink", "Noop",
                "StandardOperators", "StaticAdvertiserID", "UUIDGenerator", "WeatherAugmentation"
            ])
        for name in bundled {
            let inspection = PluginInspection.inspect(path: TestSupport.plugin(name))
            XCTAssertTrue(
                inspection.isConsistent, "\(name): \(inspection.manifestProblems) \(inspection.binaryProblem ?? "") \(inspection.disagreements)")
            XCTAssertEqual(inspection.binary?.plugins.map(\.id), inspection.manifest?.exports.map(\.id), name)
        }
        let manifest = try HostManifest.load(path: TestSupport.repository + "/plugins.yaml")
        var relocated = manifest
        relocated.dataDirectory = folder + "/data"
        let host = try HubHost(manifest: relocated)
        defer { host.shutdown() }
        XCTAssertEqual(host.registry.entries.map(\.state), manifest.instances.map { $0.enabled ? .loaded : .disabled })
        XCTAssertEqual(host.registry.entries.filter { $0.state == .disabled }.map(\.id), ["content", "weather"])
    }

    func testJSONLinesLoggerWritesValidJSONAndRotatesBySize() throws {
        let host = try host(
            """
              - id: file
                use: \(TestSupport.plugin("JSONLinesLogger"))
                config: {path: logs/app.jsonl, max_bytes: 1024, max_files: 2}
            """)
        let message = "line with \"quotes\", a tab\t, a newline\n and ünïcödé"
        for i in 0..<40 { host.pipeline.log(.error, .debug, source: "test", "\(i) \(message)") }
        host.shutdown()
        let base = folder + "/data/logs/app.jsonl"
        let fm = FileManager.default
        XCTAssertTrue(fm.fileExists(atPath: base))
        XCTAssertTrue(fm.fileExists(atPath: base + ".1"))
        XCTAssertTrue(fm.fileExists(atPath: base + ".2"))
        XCTAssertFalse(fm.fileExists(atPath: base + ".3"), "max_files: 2 keeps two rotated files")
        var numbers: [Int] = []
        for file in [base + ".2", base + ".1", base] {
            let size = try XCTUnwrap(fm.attributesOfItem(atPath: file)[.size] as? Int)
            XCTAssertLessThanOrEqual(size, 1024, file)
            for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") {
                let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                XCTAssertEqual(object["severity"] as? String, "error")
                XCTAssertEqual(object["source"] as? String, "test")
                let text = try XCTUnwrap(object["message"] as? String)
                XCTAssertTrue(text.hasSuffix(message), text)
                numbers.append(Int(text.split(separator: " ")[0])!)
            }
        }
        // The newest records survive rotation, in order, none duplicated.
        XCTAssertEqual(numbers, Array((40 - numbers.count)..<40))
        XCTAssertGreaterThan(numbers.count, 5)
    }

    func testJSONLinesLoggerRejectsATinyRotationSize() throws {
        let host = try host(
            """
              - id: file
                use: \(TestSupport.plugin("JSONLinesLogger"))
                config: {max_bytes: 10}
            """)
        guard case .failed(let error) = host.registry.entries[0].state else { return XCTFail("loaded with max_bytes 10") }
        XCTAssertTrue(error.description.hasSuffix("create failed (HH_ERR_CONFIG): max_bytes must be at least 1024 (got 10)"), error.description)
    }

    func testConsoleLoggerWritesFilteredRecordsToStderr() throws {
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: info, verbosity: debug}
            plugins:
              - id: console
                use: \(TestSupport.plugin("ConsoleLogger"))
                config: {timestamps: false}
              - id: broken
                use: \(TestSupport.plugin("FixedLocation"))
                config: {latitude: 1}
            """, to: folder + "/plugins.yaml")
        let result = try TestSupport.hubhost(["plugins", "list", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(result.status, 1, "a failed instance makes plugins list exit 1")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("INFO     [hubhost.loader] instance 'console' loaded: console-logger (logging)"), result.stderr)
        XCTAssertTrue(
            lines.contains(
                "ERROR    [hubhost.loader] instance 'broken' not loaded: instance 'broken' disabled: fixed-location create failed (HH_ERR_CONFIG): set both 'latitude' and 'longitude', or neither"
            ), result.stderr)
    }

    func testConsoleLoggerStaysQuietBelowTheSeverity() throws {
        try TestSupport.write(
            """
            logging: {severity: error}
            plugins:
              - id: console
                use: \(TestSupport.plugin("ConsoleLogger"))
            """, to: folder + "/plugins.yaml")
        let result = try TestSupport.hubhost(["plugins", "list", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stderr, "", "info records are filtered at severity error")
    }

    func testStaticAdvertiserIDFromConfigAndEnvironment() throws {
        let host = try host(
            """
              - id: ads
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                config: {advertiser_id: from-config}
            """)
        XCTAssertEqual(host.advertiserID(), AdvertiserIDDecision(advertiserID: "from-config", limitAdTracking: false, decidedBy: "ads", reason: nil))

        let variable = "HUBHOST_TEST_AD_\(UInt32.random(in: 0...UInt32.max))"
        setenv(variable, "from-env", 1)
        setenv(variable + "_LIMIT", "yes", 1)
        defer {
            unsetenv(variable)
            unsetenv(variable + "_LIMIT")
        }
        let fromEnvironment = try self.host(
            """
              - id: ads
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                config: {advertiser_id: from-config, advertiser_id_env: \(variable)}
            """)
        XCTAssertEqual(fromEnvironment.advertiserID().advertiserID, "from-env")
        let limited = try self.host(
            """
              - id: ads
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                config: {advertiser_id: from-config, limit_ad_tracking_env: \(variable)_LIMIT}
            """)
        let decision = limited.advertiserID()
        XCTAssertNil(decision.advertiserID, "limit ad tracking: no advertiser ID at all")
        XCTAssertTrue(decision.limitAdTracking)
    }

    func testAdvertiserIDChainAsksInOrderUntilOneDecides() throws {
        let host = try host(
            """
              - id: silent
                use: \(TestSupport.plugin("StaticAdvertiserID"))
              - id: second
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                config: {advertiser_id: second-id}
              - id: third
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                config: {advertiser_id: third-id}
            """)
        XCTAssertEqual(host.advertiserID().advertiserID, "second-id")
        XCTAssertEqual(host.advertiserID().decidedBy, "second")

        let none = try self.host(
            """
              - id: silent
                use: \(TestSupport.plugin("StaticAdvertiserID"))
            """)
        XCTAssertNil(none.advertiserID().advertiserID)
        XCTAssertEqual(none.advertiserID().reason, "no advertiser_id delegate has an ID: none is used")
        let empty = try self.host("")
        XCTAssertEqual(empty.advertiserID().reason, "no advertiser_id delegate is loaded: none is used")
    }

    func testFixedLocationAnswersConcurrently() throws {
        let host = try host(
            """
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config: {latitude: 47.6097, longitude: -122.3422, location_id: pike-1, name: Pike Place Market, address: 85 Pike St}
            """)
        let expected = Location(
            latitude: 47.6097, longitude: -122.3422, accuracyMeters: nil, timeMs: nil,
            locationID: "pike-1", name: "Pike Place Market", address: "85 Pike St")
        let plugin = LocationPlugin(try XCTUnwrap(host.registry.plugins(of: .location).first))
        final class Mismatches: @unchecked Sendable {
            var count = 0
            let lock = NSLock()
        }
        let mismatches = Mismatches()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<500 where plugin.current() != .location(expected) {
                mismatches.lock.withLock { mismatches.count += 1 }
            }
        }
        XCTAssertEqual(mismatches.count, 0)
    }

    func testFixedLocationRejectsOutOfRangeCoordinates() throws {
        let host = try host(
            """
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config: {latitude: 91, longitude: 0}
            """)
        guard case .failed(let error) = host.registry.entries[0].state else { return XCTFail("loaded latitude 91") }
        XCTAssertTrue(error.description.contains("'latitude' must be within -90..90"), error.description)
        XCTAssertNil(host.location())
    }

    func testNoopPluginsLoadAsOneLibraryWithTwoKinds() throws {
        let host = try host(
            """
              - id: noop
                use: \(TestSupport.plugin("Noop"))
            """)
        XCTAssertEqual(host.registry.entries[0].plugins.map(\.kind), [.triggerOperator, .augmentation])
        let op = TriggerOperatorPlugin(try XCTUnwrap(host.registry.plugins(of: .triggerOperator).first))
        XCTAssertEqual(op.operatorName, "NOOP")
        XCTAssertTrue(op.compare(event: .string("a"), trigger: .null).result)
    }
}
