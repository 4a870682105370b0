import XCTest

@testable import HubHostKit

final class LibraryLocatorTests: XCTestCase {
    func testLookupOrderIsManifestFolderThenPluginPathThenExecutableFolder() throws {
        let root = try TestSupport.temporaryFolder(self)
        for folder in ["manifest", "path1", "path2", "exe"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(folder)", withIntermediateDirectories: true)
        }
        let locator = LibraryLocator(environment: ["HUBHOST_PLUGIN_PATH": "\(root)/path1:\(root)/path2"], executableFolder: "\(root)/exe")
        XCTAssertEqual(
            locator.folders(manifestFolder: "\(root)/manifest"),
            ["\(root)/manifest", "\(root)/path1", "\(root)/path2", "\(root)/exe"])

        try TestSupport.write("x", to: "\(root)/exe/libp.so")
        XCTAssertEqual(try locator.locate(library: "libp.so", manifestFolder: "\(root)/manifest").get(), "\(root)/exe/libp.so")
        try TestSupport.write("x", to: "\(root)/path2/libp.so")
        XCTAssertEqual(try locator.locate(library: "libp.so", manifestFolder: "\(root)/manifest").get(), "\(root)/path2/libp.so")
        try TestSupport.write("x", to: "\(root)/manifest/libp.so")
        XCTAssertEqual(try locator.locate(library: "libp.so", manifestFolder: "\(root)/manifest").get(), "\(root)/manifest/libp.so")

        guard case .failure(.libraryNotFound(let name, let searched)) = locator.locate(library: "libq.so", manifestFolder: "\(root)/manifest")
        else { return XCTFail("found a library that does not exist") }
        XCTAssertEqual(name, "libq.so")
        XCTAssertEqual(searched.count, 4)
    }

    func testPluginPathIsUsedByTheHost() throws {
        let root = try TestSupport.temporaryFolder(self)
        _ = try TestSupport.compileFixture(into: root + "/lib", name: "libelsewhere.so")
        try TestSupport.write(TestSupport.fixtureManifest(library: "libelsewhere.so"), to: root + "/manifest/plugin.yaml")
        try TestSupport.write("plugins:\n  - id: op\n    use: manifest/plugin.yaml\n", to: root + "/plugins.yaml")
        let result = try TestSupport.hubhost(
            ["plugins", "list", "--json", "--manifest", root + "/plugins.yaml"],
            environment: ["HUBHOST_PLUGIN_PATH": root + "/lib"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("\"library\" : \"\(root)/lib/libelsewhere.so\""), result.stdout)
        let without = try TestSupport.hubhost(["plugins", "list", "--manifest", root + "/plugins.yaml"])
        XCTAssertEqual(without.status, 1)
        XCTAssertTrue(without.stdout.contains("library libelsewhere.so not found"), without.stdout)
    }
}
