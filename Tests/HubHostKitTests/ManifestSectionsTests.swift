import Foundation
import XCTest

@testable import HubHostKit

/// The configuration floor: each engine parses its own section of plugins.yaml, the Manifest layer
/// only hands sections out, and `manifest check --resolved` shows every section's effective values.
final class ManifestSectionsTests: XCTestCase {
    func testResolvedShowsEverySectionWithDurationsInSeconds() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0, idle_timeout: 2m}
            events: {augmentation_timeout: 1m 30s, cache_size: 7}
            campaigns: {context_rule: any}
            hub: {frame_ancestors: "'none'"}
            plugins: []
            """, to: folder + "/plugins.yaml")
        let result = try TestSupport.hubhost(["manifest", "check", folder + "/plugins.yaml", "--resolved", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let report = try result.json(as: [String: Any].self)
        let resolved = try XCTUnwrap(report["resolved"] as? [String: Any])
        let events = try XCTUnwrap(resolved["events"] as? [String: Any])
        XCTAssertEqual(events["augmentation_timeout"] as? Double, 90)
        XCTAssertEqual(events["cache_size"] as? Int, 7)
        XCTAssertEqual(events["flush_interval"] as? Double, 60, "defaults are filled in")
        XCTAssertEqual((resolved["server"] as? [String: Any])?["idle_timeout"] as? Double, 120)
        XCTAssertEqual((resolved["campaigns"] as? [String: Any])?["context_rule"] as? String, "any")
        XCTAssertEqual((resolved["hub"] as? [String: Any])?["frame_ancestors"] as? String, "'none'")
        XCTAssertNotNil(resolved["deep_links"])
    }

    func testConfigShowReportsTheSameValuesWithTheirSource() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            "data_dir: data\nevents: {augmentation_timeout: 2m}\nhub: {color_scheme: light}\nplugins: []\n", to: folder + "/plugins.yaml")
        let result = try TestSupport.hubhost(["config", "show", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = try result.json(as: [[String: Any]].self)
        func row(_ key: String) -> [String: Any]? { rows.first { $0["key"] as? String == key } }
        XCTAssertEqual(row("events.augmentation_timeout")?["value"] as? Double, 120)
        XCTAssertEqual(row("events.augmentation_timeout")?["source"] as? String, folder + "/plugins.yaml:2")
        XCTAssertEqual(row("hub.color_scheme")?["value"] as? String, "light")
        XCTAssertEqual(row("server.port")?["source"] as? String, "default")
        XCTAssertNotNil(row("campaigns.context_rule"))
    }

    func testEveryEngineReportsItsOwnProblemsWithPositions() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 70000}
            events: {cache_sise: 3}
            campaigns: {context_rule: most}
            plugins: []
            """, to: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(Set(manifest.diagnostics.map(\.key)), ["server.port", "events.cache_sise", "campaigns.context_rule"])
        XCTAssertTrue(manifest.diagnostics.allSatisfy { $0.line >= 2 && $0.line <= 4 }, "\(manifest.diagnostics)")
        XCTAssertTrue(manifest.diagnostics.contains { $0.message.contains("did you mean 'cache_size'") })
    }

    /// Manifest/ knows no engine: the engines' settings types conform to ManifestSection in their
    /// own folders and the runtime lists them.
    func testTheManifestLayerNamesNoEngineType() throws {
        let folder = TestSupport.repository + "/Host/HubHostKit/Manifest"
        let engineTypes = [
            "EventSettings", "EventEngine", "CampaignSettings", "CampaignEngine", "HubSettings", "HubEngine",
            "ContentDelivery", "DeepLinkRouter", "ServerSettings"
        ]
        for file in try FileManager.default.contentsOfDirectory(atPath: folder) where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            for name in engineTypes {
                XCTAssertFalse(text.contains(name), "Manifest/\(file) names \(name)")
            }
        }
    }
}
