import Foundation
import XCTest

@testable import HubHostKit

/// The default plugins.yaml travels: copied into any folder it loads the same plugins (they are
/// named by id), its demo content is still found, and every page its comments point at exists.
/// A plugin named by id is found in HUBHOST_PLUGIN_PATH as well as among the bundled ones.
final class DefaultManifestTests: FolderTestCase {
    func testEveryDocsReferenceInItsCommentsExists() throws {
        let text = try String(contentsOfFile: TestSupport.repository + "/plugins.yaml", encoding: .utf8)
        let references = text.split(separator: "\n").filter { $0.contains("#") }.flatMap { line in
            line.split(whereSeparator: { " ()\",;".contains($0) }).filter { $0.hasPrefix("docs/") || $0.hasPrefix("README") }.map(String.init)
        }
        XCTAssertGreaterThanOrEqual(references.count, 3, "\(references)")
        XCTAssertFalse(text.contains("README.md, \""), "a comment points at a README section")
        for reference in references {
            let parts = reference.trimmingCharacters(in: CharacterSet(charactersIn: ".")).split(separator: "#", maxSplits: 1).map(String.init)
            let page = TestSupport.repository + "/" + parts[0]
            XCTAssertTrue(FileManager.default.fileExists(atPath: page), "plugins.yaml names \(reference)")
            if parts.count == 2 {
                let anchors = DocumentationLinks.anchors(in: try String(contentsOfFile: page, encoding: .utf8))
                XCTAssertTrue(anchors.contains(parts[1]), "plugins.yaml names \(reference): no such heading")
            }
        }
    }

    func testACopyInAnotherFolderLoadsEveryPluginAndFindsTheDemoContent() throws {
        try FileManager.default.copyItem(atPath: TestSupport.repository + "/plugins.yaml", toPath: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(manifest.diagnostics.map(\.description), [])
        XCTAssertTrue(manifest.instances.allSatisfy { $0.use.hasPrefix(TestSupport.repository + "/Plugins/") }, "\(manifest.instances.map(\.use))")
        let hub = manifest.section(HubSettings.self)
        XCTAssertEqual(hub.preloadedBundle, TestSupport.repository + "/Examples/content")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        for entry in host.registry.entries where entry.configuration.enabled {
            XCTAssertEqual(entry.state, .loaded, entry.id)
        }
        XCTAssertEqual(try host.events().track(Event(type: .namedEvent, name: "COPIED"))[attribute: "Location Name"], .string("Pike Place Market"))
    }

    func testAPluginNamedByIDIsFoundInThePluginPathAndAnUnknownIDSaysWhereItLooked() throws {
        // A plugin outside any checkout, in a folder named otherwise than its id.
        try FileManager.default.createDirectory(atPath: folder + "/shelf/ops-copy", withIntermediateDirectories: true)
        let bundled = try String(contentsOfFile: TestSupport.repository + "/Plugins/ExtraOperators/plugin.yaml", encoding: .utf8)
        try TestSupport.write(
            bundled.replacingOccurrences(of: "id: extra-operators", with: "id: shelf-operators"), to: folder + "/shelf/ops-copy/plugin.yaml")
        let search = PluginSearchPath(folders: [folder + "/shelf"])
        XCTAssertEqual(search.manifest(of: "shelf-operators"), folder + "/shelf/ops-copy/plugin.yaml")
        XCTAssertNil(search.manifest(of: "nothing-here"))
        XCTAssertEqual(PluginSearchPath.standard(environment: ["HUBHOST_PLUGIN_PATH": folder + "/shelf"]).folders.last, folder + "/shelf")
        XCTAssertTrue(PluginSearchPath.isPluginID("standard-operators"))
        XCTAssertFalse(PluginSearchPath.isPluginID("plugin.yaml"))
        XCTAssertFalse(PluginSearchPath.isPluginID("a/b"))
        // Through plugins.yaml, with the search path from the environment (the child process).
        try TestSupport.write(
            "data_dir: data\nplugins:\n  - id: a\n    use: shelf-operators\n  - id: b\n    use: no-such-plugin\n", to: folder + "/plugins.yaml")
        let check = try TestSupport.hubhost(["manifest", "check", folder + "/plugins.yaml"], environment: ["HUBHOST_PLUGIN_PATH": folder + "/shelf"])
        XCTAssertEqual(check.status, 1, check.stdout + check.stderr)
        XCTAssertTrue(
            check.stderr.contains(
                "plugins[1].use: no plugin with id 'no-such-plugin' in the plugin path (looked in: \(TestSupport.repository)/Plugins, \(folder)/shelf)"
            ), check.stderr)
        XCTAssertFalse(check.stderr.contains("plugins[0]"), check.stderr)
    }
}
