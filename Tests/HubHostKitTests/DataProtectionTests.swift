import Foundation
import XCTest

@testable import HubHostKit

/// What hubhost writes to disk is its user's only, and hub pages cannot be framed by other sites.
final class DataProtectionTests: XCTestCase {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    func testTheDataDirectoryAndItsDatabasesAreOwnerOnly() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try FileManager.default.createDirectory(
            atPath: folder + "/loose", withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        try TestSupport.write("data_dir: loose\nplugins: []\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        try host.events().track(Event(type: .namedEvent, name: "x"))
        XCTAssertEqual(try mode(folder + "/loose"), 0o700, "an existing, looser data directory is tightened")
        for file in DataDirectory.sqliteFiles(folder + "/loose/events.sqlite") where FileManager.default.fileExists(atPath: file) {
            XCTAssertEqual(try mode(file), 0o600, file)
        }
    }

    func testHubPagesMayBeFramedOnlyByTheHubsOwnOriginByDefault() throws {
        let policy = ContentSecurityPolicy(settings: HubSettings())
        XCTAssertTrue(policy.header.contains("frame-ancestors 'self'"), policy.header)
        XCTAssertEqual(policy.pageHeaders["X-Frame-Options"], "SAMEORIGIN")
        var local = HubSettings()
        local.contentSource = .localOnly
        local.frameAncestors = "https://app.example"
        let configured = ContentSecurityPolicy(settings: local)
        XCTAssertTrue(configured.header.contains("frame-ancestors https://app.example"), configured.header)
        XCTAssertNil(configured.pageHeaders["X-Frame-Options"], "X-Frame-Options cannot name an origin: CSP alone decides")
    }

    func testAFrameAncestorsValueCannotSmuggleADirective() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("data_dir: data\nhub: {frame_ancestors: \"'self'; script-src *\"}\nplugins: []\n", to: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(manifest.diagnostics.map(\.key), ["hub.frame_ancestors"])
        XCTAssertEqual(manifest.hub.frameAncestors, "'self'")
    }
}
