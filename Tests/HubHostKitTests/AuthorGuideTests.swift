import Foundation
import XCTest
@testable import HubHostKit
import HubHostTools

/// The README's plugin author's guide must work as written: its C plugin and plugin.yaml are
/// taken from README.md, compiled with strict flags, inspected and loaded through the real loader.
final class AuthorGuideTests: XCTestCase {
    /// The fenced block that follows `<!-- guide: NAME -->` in README.md.
    private func guideBlock(_ name: String) throws -> String {
        let readme = try String(contentsOfFile: TestSupport.repository + "/README.md", encoding: .utf8)
        let marker = try XCTUnwrap(readme.range(of: "<!-- guide: \(name) -->"), "README has no guide block \(name)")
        let afterMarker = readme[marker.upperBound...]
        let fenceStart = try XCTUnwrap(afterMarker.range(of: "```"))
        let bodyStart = try XCTUnwrap(afterMarker[fenceStart.upperBound...].firstIndex(of: "\n"))
        let body = afterMarker[afterMarker.index(after: bodyStart)...]
        let fenceEnd = try XCTUnwrap(body.range(of: "```"))
        return String(body[..<fenceEnd.lowerBound])
    }

    func testTheGuidesCPluginBuildsLoadsAndWorks() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(try guideBlock("contains.c"), to: folder + "/contains/contains.c")
        try TestSupport.write(try guideBlock("plugin.yaml"), to: folder + "/contains/plugin.yaml")
        let cc = try TestSupport.run("/usr/bin/env", ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared", "-fPIC",
                                                       "-I", TestSupport.repository + "/Protocols/include",
                                                       "-o", folder + "/contains/libcontains.so", folder + "/contains/contains.c"])
        XCTAssertEqual(cc.status, 0, cc.stderr)

        let inspection = PluginInspection.inspect(path: folder + "/contains/plugin.yaml")
        XCTAssertTrue(inspection.isConsistent, "\(inspection.manifestProblems) \(inspection.binaryProblem ?? "") \(inspection.disagreements)")
        let validation = try TestSupport.run(TestSupport.hubhostExecutable, ["plugins", "test", folder + "/contains/plugin.yaml"])
        XCTAssertEqual(validation.status, 0, validation.stdout)
        XCTAssertTrue(validation.stdout.contains("8 passed, 0 failed"), validation.stdout)

        try TestSupport.write("""
        plugins:
          - id: contains
            use: contains/plugin.yaml
            config:
              ignore_case: true
          - id: strict
            use: contains/plugin.yaml
        """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let operators = host.registry.plugins(of: .triggerOperator).map(TriggerOperatorPlugin.init)
        XCTAssertEqual(operators.map(\.operatorName), ["CONTAINS", "CONTAINS"])
        XCTAssertTrue(operators[0].compare(event: .string("Summer Sale"), trigger: .string("sale")).result)
        XCTAssertFalse(operators[1].compare(event: .string("Summer Sale"), trigger: .string("sale")).result)
        XCTAssertTrue(operators[1].compare(event: .string("Summer Sale"), trigger: .string("Sale")).result)
        XCTAssertFalse(operators[0].compare(event: .string("Summer"), trigger: .string("winter")).result)
        XCTAssertEqual(operators[0].compare(event: .int(3), trigger: .string("3")).status, 4 /* HH_ERR_TYPE_MISMATCH */)
    }

    /// Builds a guide block's C plugin and manifest into `folder`/`name`/, runs `hubhost plugins
    /// test` on it, and returns the plugin.yaml's path.
    private func buildGuidePlugin(_ name: String, in folder: String) throws -> String {
        let dir = folder + "/" + name
        try TestSupport.write(try guideBlock(name + ".c"), to: dir + "/\(name).c")
        try TestSupport.write(try guideBlock(name + ".yaml"), to: dir + "/plugin.yaml")
        let cc = try TestSupport.run("/usr/bin/env", ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared", "-fPIC",
                                                       "-I", TestSupport.repository + "/Protocols/include",
                                                       "-o", dir + "/lib\(name).so", dir + "/\(name).c"])
        XCTAssertEqual(cc.status, 0, cc.stderr)
        let validation = try TestSupport.run(TestSupport.hubhostExecutable, ["plugins", "test", dir + "/plugin.yaml"])
        XCTAssertEqual(validation.status, 0, validation.stdout)
        XCTAssertTrue(validation.stdout.contains("9 passed, 0 failed"), validation.stdout)
        return dir + "/plugin.yaml"
    }

    func testTheGuidesABI11PluginsBuildLoadAndWork() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let network = try buildGuidePlugin("fixed-network", in: folder)
        let bearer = try buildGuidePlugin("bearer-token", in: folder)
        try TestSupport.write("""
        data_dir: data
        plugins:
          - id: network
            use: \(network)
            config: {network: cellular}
          - id: bearer
            use: \(bearer)
            config: {token: abc123}
        """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let conditions = try DeviceConditionsPlugin(try XCTUnwrap(host.registry.plugins(of: .deviceConditions).first)).read(dataDirectory: folder)
        XCTAssertEqual(conditions.network, .cellular)
        XCTAssertNil(conditions.batteryLevel)
        XCTAssertNotNil(conditions.freeBytes)
        let converter = DownloadRequestPlugin(try XCTUnwrap(host.registry.plugins(of: .downloadRequest).first))
        let secure = DownloadRequest(url: "https://cdn.example.com/a.mp4", headers: [:], itemId: "i", fileRole: "main")
        XCTAssertEqual(try converter.convert(secure).headers, ["Authorization": "Bearer abc123"])
        let plain = DownloadRequest(url: "http://cdn.example.com/a.mp4", headers: [:], itemId: "i", fileRole: "main")
        XCTAssertEqual(try converter.convert(plain), plain, "no token over plain http")
    }
}
