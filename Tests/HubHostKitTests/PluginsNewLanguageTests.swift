import Foundation
import XCTest

@testable import HubHostTools

/// `hubhost plugins new --lang rust` and `--lang swift`, as a plugin author with only an installed
/// hubhost uses them: the folder is written outside the checkout by the installed hubhost, built by
/// its own Makefile (cargo, offline; swiftc with the installed module map) with the installed
/// hubhost first on PATH, passes the conformance suite and does what its README says.
final class PluginsNewLanguageTests: XCTestCase {
    /// One installation for every test of the class: scripts/install from the build folder into a
    /// temporary prefix, outside the checkout.
    static let installation: Result<String, any Error> = Result {
        try TestSupport.install(into: NSTemporaryDirectory() + "hubhost-templates-" + UUID().uuidString)
    }

    override class func tearDown() {
        if case .success(let prefix) = installation { try? FileManager.default.removeItem(atPath: prefix) }
        super.tearDown()
    }

    /// The folder holding cargo: rustup puts it in ~/.cargo/bin, which a test's PATH may lack.
    static var cargoFolder: String? {
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (path + [home + "/.cargo/bin", "/usr/bin"]).first { FileManager.default.isExecutableFile(atPath: $0 + "/cargo") }
    }

    /// An environment with the installed hubhost first on PATH and no hubhost of the build folder or
    /// the checkout on it, so the Makefile finds only what the installation gives.
    func installedEnvironment(_ prefix: String) -> [String: String] {
        let system = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
            .filter { $0 != TestSupport.buildFolder }
        return ["PATH": ([prefix + "/bin"] + (Self.cargoFolder.map { [$0] } ?? []) + system).joined(separator: ":")]
    }

    /// Writes the plugin with the installed hubhost into a new folder outside the checkout, builds it
    /// with `make`, runs `make test` and returns the folder and the installed hubhost.
    func scaffoldBuildAndTest(
        _ name: String, kind: String, lang: String, files: [String], file: StaticString = #filePath, line: UInt = #line
    ) throws -> (folder: String, hubhost: String, environment: [String: String], built: CommandResult) {
        let prefix = try Self.installation.get()
        let hubhost = prefix + "/bin/hubhost"
        let environment = installedEnvironment(prefix)
        let folder = try TestSupport.temporaryFolder(self) + "/" + name
        XCTAssertFalse(folder.hasPrefix(TestSupport.repository), file: file, line: line)
        try TestSupport.run(hubhost, ["plugins", "new", name, "--kind", kind, "--lang", lang, "--dir", folder], environment: environment, timeout: 60)
            .expect(0, file: file, line: line)
        for expected in files + ["plugin.yaml", "Makefile", "README.md"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/" + expected), "no \(expected)", file: file, line: line)
        }
        let built = try TestSupport.run("/usr/bin/env", ["make"], environment: environment, currentDirectory: folder, timeout: 300)
        try built.expect(0, file: file, line: line)
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/lib\(name).so"), "\(built)", file: file, line: line)
        let tested = try TestSupport.run("/usr/bin/env", ["make", "test"], environment: environment, currentDirectory: folder, timeout: 300)
        XCTAssertEqual(tested.status, 0, "\(tested)", file: file, line: line)
        XCTAssertTrue(tested.stdout.contains(" passed, 0 failed"), tested.stdout, file: file, line: line)
        return (folder, hubhost, environment, built)
    }

    /// plugins.yaml beside the plugin's folder, with one instance of it.
    func manifest(_ folder: String, _ name: String, config: String) throws -> String {
        let path = (folder as NSString).deletingLastPathComponent + "/plugins.yaml"
        try TestSupport.write("data_dir: data\nplugins:\n  - id: \(name)\n    use: \(name)/plugin.yaml\n    config: \(config)\n", to: path)
        return path
    }

    func assertOperator(_ name: String, hubhost: String, manifest: String, file: StaticString = #filePath, line: UInt = #line) throws {
        for (trigger, event, expected) in [("3", "5", "true"), ("5", "5", "true"), ("5", "3", "false")] {
            let answer = try TestSupport.run(
                hubhost, ["operators", "test", name, "--type", "int", "--trigger", trigger, "--event", event, "--manifest", manifest], timeout: 60)
            XCTAssertEqual(
                answer.stdout.trimmingCharacters(in: .whitespacesAndNewlines), expected, "\(trigger) vs \(event): \(answer)", file: file, line: line)
        }
    }

    func assertAugmentation(_ hubhost: String, manifest: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let tracked = try TestSupport.run(hubhost, ["track", "TEMPLATE", "--json", "--manifest", manifest], timeout: 60).expect(
            0, file: file, line: line)
        let event = try tracked.json(as: [String: Any].self)
        XCTAssertEqual((event["attributes"] as? [String: Any])?["Source"] as? String, "templated", "\(tracked)", file: file, line: line)
    }

    /// `make package` in the scaffolded `folder` makes NAME-0.1.0.hhp.
    private func assertPackages(_ folder: String, _ name: String, environment: [String: String]) throws {
        let packed = try TestSupport.run("/usr/bin/env", ["make", "package"], environment: environment, currentDirectory: folder, timeout: 120)
        XCTAssertEqual(packed.status, 0, "\(packed)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/\(name)-0.1.0.hhp"), "\(packed)")
    }

    func testRustAugmentationBuildsOfflineWithCargoPassesAndAddsItsAttribute() throws {
        try XCTSkipIf(Self.cargoFolder == nil, "cargo is not installed (the Rust toolchain)")
        let made = try scaffoldBuildAndTest("rust-tag", kind: "augmentation", lang: "rust", files: ["Cargo.toml", "src/lib.rs"])
        XCTAssertTrue(made.built.stdout.contains("--offline"), "\(made.built)")
        try assertAugmentation(made.hubhost, manifest: try manifest(made.folder, "rust-tag", config: "{value: templated}"))
        try assertPackages(made.folder, "rust-tag", environment: made.environment)
    }

    func testRustTriggerOperatorBuildsOfflineWithCargoPassesAndCompares() throws {
        try XCTSkipIf(Self.cargoFolder == nil, "cargo is not installed (the Rust toolchain)")
        let made = try scaffoldBuildAndTest("rust-at-least", kind: "trigger_operator", lang: "rust", files: ["Cargo.toml", "src/lib.rs"])
        try assertOperator("RUST_AT_LEAST", hubhost: made.hubhost, manifest: try manifest(made.folder, "rust-at-least", config: "{}"))
    }

    func testSwiftAugmentationBuildsWithTheInstalledModuleMapPassesAndAddsItsAttribute() throws {
        let made = try scaffoldBuildAndTest("swift-tag", kind: "augmentation", lang: "swift", files: ["swift-tag.swift"])
        let prefix = try Self.installation.get()
        XCTAssertTrue(made.built.stdout.contains("-fmodule-map-file=\(prefix)/include/hubhost/hubhost.modulemap"), "\(made.built)")
        try assertAugmentation(made.hubhost, manifest: try manifest(made.folder, "swift-tag", config: "{value: templated}"))
        try assertPackages(made.folder, "swift-tag", environment: made.environment)
    }

    func testSwiftTriggerOperatorBuildsWithTheInstalledModuleMapPassesAndCompares() throws {
        let made = try scaffoldBuildAndTest("swift-at-least", kind: "trigger_operator", lang: "swift", files: ["swift-at-least.swift"])
        try assertOperator("SWIFT_AT_LEAST", hubhost: made.hubhost, manifest: try manifest(made.folder, "swift-at-least", config: "{}"))
    }

    func testInstalledSDKPrintsTheSwiftFlagsOfItsModuleMap() throws {
        let prefix = try Self.installation.get()
        XCTAssertTrue(FileManager.default.fileExists(atPath: prefix + "/include/hubhost/hubhost.modulemap"))
        let flags = try TestSupport.run(
            prefix + "/bin/hubhost", ["plugins", "sdk", "--swift-flags"], currentDirectory: NSTemporaryDirectory(), timeout: 30
        )
        .expect(0)
        XCTAssertEqual(flags.stdout, "-I\(prefix)/include -Xcc -fmodule-map-file=\(prefix)/include/hubhost/hubhost.modulemap\n")
    }

    func testOtherKindsAreRefusedNamingTheKindsEachLanguageWrites() throws {
        let scratch = try TestSupport.temporaryFolder(self)
        for lang in ["rust", "swift"] {
            let refused = try TestSupport.hubhost(
                ["plugins", "new", "later", "--kind", "logging", "--lang", lang, "--dir", scratch + "/" + lang], timeout: 30)
            XCTAssertEqual(refused.status, 64, "\(refused)")
            XCTAssertTrue(refused.stderr.contains("--lang \(lang) does not write logging plugins yet"), "\(refused)")
            XCTAssertTrue(refused.stderr.contains("it writes augmentation, trigger_operator"), "\(refused)")
            XCTAssertTrue(refused.stderr.contains("--lang c writes it"), "\(refused)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: scratch + "/" + lang))
        }
        let unknown = try TestSupport.hubhost(["plugins", "new", "later", "--kind", "logging", "--lang", "go", "--dir", scratch + "/go"], timeout: 30)
        XCTAssertEqual(unknown.status, 64, "\(unknown)")
        XCTAssertTrue(unknown.stderr.contains("unknown language 'go': one of c, swift, rust"), "\(unknown)")
    }
}
