import Foundation
import XCTest

@testable import HubHostKit

/// Every bundled C plugin compiles as pedantic C11 with every warning an error. The package does
/// not build them with these flags (unsafe flags would stop apps adding hubhost by version), so
/// this test is where a warning in a bundled plugin fails.
final class CStrictnessTests: XCTestCase {
    func testEveryBundledCPluginCompilesWithStrictWarnings() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let plugins = TestSupport.repository + "/Plugins"
        var sources: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: plugins).sorted() {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: plugins + "/" + name)) ?? []
            sources += files.filter { $0.hasSuffix(".c") }.sorted().map { plugins + "/" + name + "/" + $0 }
        }
        XCTAssertGreaterThanOrEqual(sources.count, 8, "\(sources)")
        // Every C plugin folder is picked up by listing, new ones included.
        for file in [
            "LinuxDeviceConditions/linux_device_conditions.c", "FixedDeviceConditions/fixed_device_conditions.c",
            "DownloadRequestHeader/download_request_header.c"
        ] {
            XCTAssertTrue(sources.contains(plugins + "/" + file), file)
        }
        for (index, source) in sources.enumerated() {
            let result = try TestSupport.run(
                "/usr/bin/env",
                [
                    "cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fPIC", "-c",
                    "-I", TestSupport.repository + "/Protocols/include",
                    "-I", (source as NSString).deletingLastPathComponent,
                    source, "-o", folder + "/\(index).o"
                ])
            XCTAssertEqual(result.status, 0, "\(source): \(result.stderr)")
        }
    }
}
