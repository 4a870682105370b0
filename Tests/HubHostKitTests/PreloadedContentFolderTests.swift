import XCTest

@testable import HubHostKit

/// `hub.preloaded_bundle` naming a content folder: built into the data directory on first use,
/// rebuilt only when the folder changes, presented at once.
final class PreloadedContentFolderTests: XCTestCase {
    func testAContentFolderIsBuiltOnceAndRebuiltWhenItChanges() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let content = folder + "/content"
        try FileManager.default.copyItem(atPath: TestSupport.repository + "/Tests/Fixtures/content", toPath: content)
        try TestSupport.write("data_dir: data\nhub:\n  preloaded_bundle: content\n", to: folder + "/plugins.yaml")

        func openHub() throws -> (HubHost, HubEngine) {
            let host = try HubHost(manifestPath: folder + "/plugins.yaml")
            return (host, try XCTUnwrap(try host.hub()))
        }
        var (host, hub) = try openHub()
        let first = try XCTUnwrap(hub.activeBundle)
        XCTAssertEqual(first.hubs.map(\.id), ["news", "cooking"])
        XCTAssertTrue(first.path.hasPrefix(folder + "/data/hub/preloaded/"), first.path)
        XCTAssertTrue(hub.state.isReady)
        let builtAt = try FileManager.default.attributesOfItem(atPath: first.path)[.modificationDate] as? Date
        host.shutdown()

        (host, hub) = try openHub()
        XCTAssertEqual(
            try FileManager.default.attributesOfItem(atPath: try XCTUnwrap(hub.activeBundle).path)[.modificationDate] as? Date, builtAt,
            "an unchanged folder is not rebuilt")
        host.shutdown()

        // A new article (a later modification time) makes the next start rebuild.
        Thread.sleep(forTimeInterval: 1.1)  // file times have one-second granularity on some filesystems
        try TestSupport.write("---\ntitle: Fresh\ntags: [news]\n---\nNew.\n", to: content + "/news/sports/fresh.md")
        (host, hub) = try openHub()
        defer { host.shutdown() }
        XCTAssertNotNil(hub.activeBundle?.article("news/sports/fresh"))
    }

    func testABrokenContentFolderIsReportedAndNothingIsActive() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try FileManager.default.createDirectory(atPath: folder + "/content/news/sports", withIntermediateDirectories: true)
        try TestSupport.write("---\ntitle: [unclosed\n---\nx\n", to: folder + "/content/news/sports/bad.md")
        try TestSupport.write("data_dir: data\nhub:\n  preloaded_bundle: content\n", to: folder + "/plugins.yaml")
        let capture = LogCapture()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml", extraDestinations: [capture])
        defer { host.shutdown() }
        let hub = try XCTUnwrap(try host.hub())
        XCTAssertNil(hub.activeBundle)
        XCTAssertTrue(capture.messages.contains { $0.contains("bad.md") }, "\(capture.messages)")
    }
}
