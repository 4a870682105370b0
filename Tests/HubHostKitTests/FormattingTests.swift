import Foundation
import XCTest

/// The repository's sources are kept in the style its formatter configurations describe:
/// `.swift-format` (the toolchain's `swift format`) for Swift, `.clang-format` for C. A change
/// that is not formatted fails here, with the formatter's own diagnostics; `swift format
/// --in-place --recursive Host Tests Plugins Examples Package.swift` and `git ls-files '*.c' '*.h'
/// | xargs clang-format -i` put it right.
final class FormattingTests: XCTestCase {
    func testSwiftSourcesFollowTheSwiftFormatConfiguration() throws {
        let lint = try TestSupport.run(
            "/usr/bin/env",
            ["swift", "format", "lint", "--strict", "--recursive", "--parallel", "Host", "Tests", "Plugins", "Examples", "Package.swift"],
            currentDirectory: TestSupport.repository, timeout: 300)
        XCTAssertEqual(lint.status, 0, "swift format lint:\n" + lint.stderr + lint.stdout)
        XCTAssertEqual(lint.stderr.trimmingCharacters(in: .whitespacesAndNewlines), "", "no diagnostic at all")
    }

    func testCSourcesFollowTheClangFormatConfiguration() throws {
        let files = try TestSupport.run(
            "/usr/bin/env", ["git", "ls-files", "*.c", "*.h"], currentDirectory: TestSupport.repository)
        XCTAssertEqual(files.status, 0, files.stderr)
        let paths = files.stdout.split(separator: "\n").map(String.init)
        XCTAssertGreaterThan(paths.count, 30, "the plugins, the ABI headers and the fixtures are C")
        let check = try TestSupport.run(
            "/usr/bin/env", ["clang-format", "--dry-run", "--Werror"] + paths,
            currentDirectory: TestSupport.repository, timeout: 120)
        XCTAssertEqual(check.status, 0, "clang-format (scripts/debian-packages.txt installs it):\n" + check.stderr)
    }

    /// The check above is worth something only if the configuration is the one read: a file
    /// formatted against it is left as it is, and one that is not is reported.
    func testTheFormattersReportAnUnformattedFile() throws {
        let folder = try TestSupport.temporaryFolder(self)
        for config in [".swift-format", ".clang-format"] {
            try FileManager.default.copyItem(atPath: TestSupport.repository + "/" + config, toPath: folder + "/" + config)
        }
        try TestSupport.write("func   f( ) -> Int {return 1}\n", to: folder + "/Bad.swift")
        try TestSupport.write("int f(void){return 1;}\n", to: folder + "/bad.c")
        // Four spaces: the formatters' own defaults (two) would report these.
        try TestSupport.write("func f() -> Int {\n    return 1\n}\n", to: folder + "/Good.swift")
        try TestSupport.write("int f(void) {\n    return 1;\n}\n", to: folder + "/good.c")
        let goodSwift = try TestSupport.run("/usr/bin/env", ["swift", "format", "lint", "--strict", "Good.swift"], currentDirectory: folder)
        XCTAssertEqual(goodSwift.status, 0, goodSwift.stderr)
        let goodC = try TestSupport.run("/usr/bin/env", ["clang-format", "--dry-run", "--Werror", "good.c"], currentDirectory: folder)
        XCTAssertEqual(goodC.status, 0, goodC.stderr)
        let swift = try TestSupport.run("/usr/bin/env", ["swift", "format", "lint", "--strict", "Bad.swift"], currentDirectory: folder)
        XCTAssertNotEqual(swift.status, 0)
        XCTAssertTrue(swift.stderr.contains("Bad.swift:1:"), swift.stderr)
        let c = try TestSupport.run("/usr/bin/env", ["clang-format", "--dry-run", "--Werror", "bad.c"], currentDirectory: folder)
        XCTAssertNotEqual(c.status, 0)
        XCTAssertTrue(c.stderr.contains("bad.c:1:"), c.stderr)
    }
}
