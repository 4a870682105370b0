import XCTest
@testable import HubHostKit

/// The ABI headers are the contract: they must compile as plain, pedantic C11 (and C++) with no
/// warnings, so a plugin author's compiler never trips on them.
final class ABIHeaderTests: XCTestCase {
    func testHeadersCompileAsStrictC11AndCxx() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let headers = try FileManager.default.contentsOfDirectory(atPath: TestSupport.repository + "/Protocols/include/hubhost")
            .filter { $0.hasSuffix(".h") }.sorted()
        XCTAssertEqual(headers.count, 9)
        for header in headers {
            // Each header must stand alone, included first.
            let source = "#include <hubhost/\(header)>\nint hubhost_header_test(void);\nint hubhost_header_test(void) { return 0; }\n"
            try TestSupport.write(source, to: folder + "/c_test.c")
            let c = try TestSupport.run("/usr/bin/env", ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                                                          "-I", TestSupport.repository + "/Protocols/include", folder + "/c_test.c", "-o", folder + "/c.o"])
            XCTAssertEqual(c.status, 0, "\(header) as C11: \(c.stderr)")
            try TestSupport.write(source, to: folder + "/cxx_test.cpp")
            let cxx = try TestSupport.run("/usr/bin/env", ["c++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                                                            "-I", TestSupport.repository + "/Protocols/include", folder + "/cxx_test.cpp", "-o", folder + "/cxx.o"])
            XCTAssertEqual(cxx.status, 0, "\(header) as C++17: \(cxx.stderr)")
        }
    }

    func testHostAndHeaderVersionsAgree() {
        XCTAssertEqual(ABIVersion.host, ABIVersion(major: 1, minor: 0, patch: 0))
        XCTAssertEqual(PluginKind.allCases.map(\.code), [1, 2, 3, 4, 5, 6])
    }
}
