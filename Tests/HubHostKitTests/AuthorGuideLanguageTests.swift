import Foundation
import XCTest

@testable import HubHostKit

/// The plugin author's guide's examples beyond the trigger operator, as a reader would build them:
/// an augmentation in C, a trigger operator in Swift (swiftc against this package's HubHostABI and
/// HubHostPluginSupport) and the same operator in Rust (cargo), each run through `hubhost plugins
/// test` and used by a host.
final class AuthorGuideLanguageTests: XCTestCase {
    private func guideBlock(_ name: String) throws -> String {
        try DocumentationText.block(after: "<!-- guide: \(name) -->")
    }

    private func pluginsTest(_ manifest: String) throws -> String {
        let run = try TestSupport.run(TestSupport.hubhostExecutable, ["plugins", "test", manifest])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertTrue(run.stdout.contains(" passed, 0 failed"), run.stdout)
        return run.stdout
    }

    func testTheGuidesAugmentationInCBuildsPassesAndAddsTheAppVersion() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(try guideBlock("app-version.c"), to: folder + "/app-version/app-version.c")
        try TestSupport.write(try guideBlock("app-version.yaml"), to: folder + "/app-version/plugin.yaml")
        let cc = try TestSupport.compilePlugin(folder + "/app-version/app-version.c", to: folder + "/app-version/libapp-version.so")
        XCTAssertEqual(cc.status, 0, cc.stderr)
        let report = try pluginsTest(folder + "/app-version/plugin.yaml")
        XCTAssertTrue(report.contains("augment"), report)
        try TestSupport.write(
            """
            data_dir: data
            plugins:
              - id: app-version
                use: app-version/plugin.yaml
                config: {version: 2.4.1}
            """, to: folder + "/plugins.yaml")
        func track(_ arguments: [String]) throws -> [String: Any] {
            let run = try TestSupport.run(TestSupport.hubhostExecutable, ["track"] + arguments + ["--json", "--manifest", folder + "/plugins.yaml"])
            XCTAssertEqual(run.status, 0, run.stderr)
            let event = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
            return try XCTUnwrap(event?["attributes"] as? [String: Any], run.stdout)
        }
        XCTAssertEqual(try track(["GUIDE"])["App Version"] as? String, "2.4.1")
        XCTAssertEqual(try track(["GUIDE", "--string", "App Version=9.9"])["App Version"] as? String, "9.9", "an app's own value is kept")
        // Without its required key the instance does not load, and says why.
        try TestSupport.write("plugins:\n  - id: app-version\n    use: app-version/plugin.yaml\n", to: folder + "/bad.yaml")
        let check = try TestSupport.run(TestSupport.hubhostExecutable, ["manifest", "check", folder + "/bad.yaml"])
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue((check.stdout + check.stderr).contains("version"), check.stdout + check.stderr)
    }

    func testTheGuidesSwiftPluginBuildsAgainstThePackagesModulesAndPasses() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(try guideBlock("EndsWith.swift"), to: folder + "/EndsWith.swift")
        let build = TestSupport.buildFolder
        let support = try FileManager.default.contentsOfDirectory(atPath: build + "/HubHostPluginSupport.build")
            .filter { $0.hasSuffix(".swift.o") }.map { build + "/HubHostPluginSupport.build/" + $0 }
        XCTAssertFalse(support.isEmpty, "HubHostPluginSupport's objects are in the build folder")
        let swiftc = try TestSupport.run(
            "/usr/bin/env",
            [
                "swiftc", "-emit-library", "-parse-as-library", "-module-name", "EndsWith",
                "-swift-version", "5", "-I", build + "/Modules",
                "-Xcc", "-fmodule-map-file=\(build)/HubHostABI.build/module.modulemap",
                "-Xcc", "-I\(TestSupport.repository)/Protocols/include",
                folder + "/EndsWith.swift"
            ] + support + ["-o", folder + "/libends-with.so"])
        XCTAssertEqual(swiftc.status, 0, swiftc.stderr)
        try TestSupport.write(Self.endsWithManifest(library: "libends-with.so"), to: folder + "/plugin.yaml")
        _ = try pluginsTest(folder + "/plugin.yaml")
        try assertEndsWithAnswers(manifestFolder: folder)
    }

    func testTheGuidesRustPluginBuildsWithCargoAndPasses() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(try guideBlock("Cargo.toml"), to: folder + "/Cargo.toml")
        try TestSupport.write(try guideBlock("lib.rs"), to: folder + "/src/lib.rs")
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
        let cargo = ["/usr/bin/cargo", home + "/.cargo/bin/cargo"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let cargoPath = try XCTUnwrap(
            cargo
                ?? ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":")
                .map { "\($0)/cargo" }.first { FileManager.default.isExecutableFile(atPath: $0) }, "cargo is not installed (the Rust toolchain)")
        let built = try TestSupport.run(cargoPath, ["build", "--release", "--offline", "--quiet"], currentDirectory: folder, timeout: 300)
        XCTAssertEqual(built.status, 0, built.stderr)
        try TestSupport.write(Self.endsWithManifest(library: "target/release/libends_with.so"), to: folder + "/plugin.yaml")
        _ = try pluginsTest(folder + "/plugin.yaml")
        try assertEndsWithAnswers(manifestFolder: folder)
    }

    /// The plugin.yaml the guide describes for its ENDS_WITH operator.
    private static func endsWithManifest(library: String) -> String {
        "abi: \"1.0\"\nid: ends-with\nname: Ends with\nversion: 1.0.0\nlibrary: \(library)\nexports:\n  - id: ends-with\n    kind: trigger_operator\n"
    }

    private func assertEndsWithAnswers(manifestFolder folder: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try TestSupport.write("plugins:\n  - id: ends-with\n    use: plugin.yaml\n", to: folder + "/plugins.yaml")
        for (trigger, event, expected) in [("sale", "Summer sale", "true"), ("Sum", "Summer sale", "false"), ("", "x", "true")] {
            let run = try TestSupport.run(
                TestSupport.hubhostExecutable,
                [
                    "operators", "test", "ENDS_WITH", "--type", "string", "--trigger", trigger,
                    "--event", event, "--manifest", folder + "/plugins.yaml"
                ])
            XCTAssertEqual(
                run.stdout.trimmingCharacters(in: .whitespacesAndNewlines), expected, "\(trigger) / \(event): \(run.stderr)", file: file, line: line)
        }
    }
}
