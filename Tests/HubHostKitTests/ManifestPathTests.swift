import Foundation
import XCTest

@testable import HubHostKit

/// A manifest path that names a folder says so, and names the plugin.yaml inside when there is one.
final class ManifestPathTests: XCTestCase {
    func testAFolderWhereAManifestIsExpectedIsNamedAsAFolder() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        try TestSupport.write(
            """
            plugins:
              - id: noop
                use: \(TestSupport.repository)/Plugins/Noop
              - id: empty
                use: empty
            """, to: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        // Said at the plugins.yaml line that names the folder.
        XCTAssertEqual(
            manifest.diagnostics.map(\.description),
            [
                "\(folder)/plugins.yaml:3:10: plugins[0].use: '\(TestSupport.repository)/Plugins/Noop' is a folder, not a plugin manifest; name its plugin.yaml: \(TestSupport.repository)/Plugins/Noop/plugin.yaml",
                "\(folder)/plugins.yaml:5:10: plugins[1].use: 'empty' is a folder, not a plugin manifest; name a plugin.yaml file"
            ])
        // The host manifest itself given as a folder: the same words, exit 2 (unusable).
        let check = try TestSupport.hubhost(["manifest", "check", folder])
        XCTAssertEqual(check.status, 2)
        XCTAssertTrue((check.stdout + check.stderr).contains("this is a folder, not a manifest file"), check.stdout + check.stderr)
    }
}
