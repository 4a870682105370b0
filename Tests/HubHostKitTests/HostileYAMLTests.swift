import Foundation
import XCTest

@testable import HubHostKit

/// YAML as an attacker writes it: aliases nested to stand for billions of nodes (as values and as
/// mapping keys, whose duplicate check walks every node), a file past the size limit, a device or a
/// FIFO named as the manifest, and thousands of keys. Each is refused (or checked) with a clear
/// message at once, and a reload meeting one is refused without holding later reloads up.
final class HostileYAMLTests: FolderTestCase {
    /// Nine levels of nine aliases each: about 387 million nodes in 1.4 KB. `asKeys` puts the
    /// aliases in mapping keys (the form that hung the duplicate-key check).
    static func aliasBomb(asKeys: Bool) -> String {
        var lines = ["a0: &a0 {x: 1, y: 2, z: 3}"]
        for level in 1..<10 {
            let previous = "*a\(level - 1)"
            let items = (0..<9).map { n in asKeys ? "? [\(previous), \(n)] : \(n)" : "k\(n): \(previous)" }
            lines.append("a\(level): &a\(level) {\(items.joined(separator: ", "))}")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Loads `path` on another thread; fails the test when it has not returned within `seconds`.
    private func loadWithin(_ seconds: Double, _ path: String) -> [String]? {
        TestSupport.within(seconds, "loading \(path)") {
            do {
                return try HostManifest.load(path: path).diagnostics.map(\.description)
            } catch let error as ManifestError {
                return error.diagnostics.map(\.description)
            } catch {
                return ["\(error)"]
            }
        }
    }

    func testAnAliasBombIsRefusedBeforeItsTreeIsWalked() throws {
        for asKeys in [true, false] {
            let path = folder + "/bomb-\(asKeys).yaml"
            try TestSupport.write("data_dir: data\n" + Self.aliasBomb(asKeys: asKeys) + "plugins: []\n", to: path)
            let problems = try XCTUnwrap(loadWithin(20, path))
            XCTAssertEqual(
                problems,
                [
                    "\(path):1:1: aliases make the document stand for more than 1000000 nodes (an alias counts as every node of its anchor); write the values out, or use fewer nested aliases"
                ])
        }
        XCTAssertNotNil(YAMLLimits.problem(Self.aliasBomb(asKeys: true)))
        // A few aliases, as a real file uses them, are fine.
        XCTAssertNil(YAMLLimits.problem("base: &base {a: 1, b: 2}\none: *base\ntwo: {<<: *base, c: 3}\n"))
    }

    /// The same bomb as a plugin's plugin.yaml: that instance is refused with the reason.
    func testAnAliasBombInAPluginManifestDisablesOnlyItsInstance() throws {
        try TestSupport.write("abi: \"1.0\"\nid: bomb\n" + Self.aliasBomb(asKeys: true), to: folder + "/bomb/plugin.yaml")
        try TestSupport.write("data_dir: data\nplugins:\n  - id: bomb\n    use: bomb/plugin.yaml\n", to: folder + "/plugins.yaml")
        let problems = try XCTUnwrap(loadWithin(20, folder + "/plugins.yaml"))
        XCTAssertTrue(
            problems.contains { $0.hasPrefix(folder + "/bomb/plugin.yaml:1:1: aliases make the document stand for more than") }, "\(problems)")
    }

    /// A reload that meets a bomb is refused at once, and the next reload works.
    func testAReloadMeetingAnAliasBombIsRefusedAndLaterReloadsWork() throws {
        let manifest = folder + "/plugins.yaml"
        try TestSupport.write("data_dir: data\nplugins:\n  - id: noop\n    use: \(TestSupport.plugin("Noop"))\n", to: manifest)
        let host = try HubHost(manifestPath: manifest)
        defer { host.shutdown() }
        try TestSupport.write("data_dir: data\n" + Self.aliasBomb(asKeys: true) + "plugins: []\n", to: manifest)
        let refused = host.reload()
        XCTAssertEqual(refused.outcome, .refused)
        XCTAssertTrue(refused.problems.first?.contains("aliases make the document stand for more than") == true, "\(refused)")
        try TestSupport.write("data_dir: data\nplugins: []\n", to: manifest)
        XCTAssertEqual(host.reload().removed, ["noop"])
    }

    func testAFilePastTheSizeLimitADeviceAndAFIFOAreRefusedWithoutReadingThem() throws {
        let big = folder + "/big.yaml"
        try TestSupport.write("data_dir: data\n# " + String(repeating: "x", count: YAMLLimits.maxBytes) + "\n", to: big)
        XCTAssertEqual(mkfifo(folder + "/fifo.yaml", 0o600), 0)
        let expected = [
            big: "\(big):1:1: it is \(YAMLLimits.maxBytes + 18) bytes, more than the 4 MiB it may be",
            "/dev/zero": "/dev/zero:1:1: not a regular file",
            folder + "/fifo.yaml": "\(folder)/fifo.yaml:1:1: not a regular file"
        ]
        for (path, problem) in expected {
            XCTAssertEqual(loadWithin(20, path), [problem])
        }
    }

    /// Ten thousand unknown config keys on one instance: each is reported once, with its line.
    func testTenThousandConfigKeysAreEachReportedOnce() throws {
        var text = "data_dir: data\nplugins:\n  - id: noop\n    use: \(TestSupport.plugin("Noop"))\n    config:\n"
        for n in 0..<10_000 { text += "      k\(n): \(n)\n" }
        try TestSupport.write(text, to: folder + "/plugins.yaml")
        let problems = try XCTUnwrap(loadWithin(60, folder + "/plugins.yaml"))
        XCTAssertEqual(problems.count, 10_000)
        XCTAssertEqual(Set(problems).count, 10_000)
        XCTAssertTrue(
            problems[9_999].hasPrefix("\(folder)/plugins.yaml:10005:7: plugins[0].config.k9999: unknown config key 'k9999'"), problems[9_999])
    }
}

/// A `use:` that names something other than a plugin.yaml: the problem is said with the path and
/// the line that names it, never with the file's content.
final class UsePathTests: FolderTestCase {
    func testAReloadNamingAnotherFileQuotesOnlyItsPathAndTheProblem() throws {
        let manifest = folder + "/plugins.yaml"
        try TestSupport.write("data_dir: data\nplugins: []\n", to: manifest)
        let host = try HubHost(manifestPath: manifest)
        defer { host.shutdown() }
        let capture = LogCapture()
        host.pipeline.attach([capture])
        for (name, secret) in [("plain.txt", "TOPSECRET plain text line\nand another"), ("keys.yaml", "password: TOPSECRET\nuser: admin\n")] {
            try TestSupport.write(secret, to: folder + "/" + name)
            try TestSupport.write("data_dir: data\nplugins:\n  - id: x\n    use: \(name)\n", to: manifest)
            let report = host.reload()
            XCTAssertEqual(report.outcome, .refused)
            XCTAssertEqual(
                report.problems,
                ["\(folder)/\(name):1:1: this is not a plugin manifest: a plugin.yaml is a mapping with abi, id, name, version, library and exports"])
        }
        XCTAssertFalse(capture.messages.contains { $0.contains("TOPSECRET") }, "\(capture.messages)")
        XCTAssertEqual(
            YAMLReader(file: "x").describe(.init(String(repeating: "s", count: 500))),
            "the string \"\(String(repeating: "s", count: 64))... (500 bytes)\"")
    }

    func testAUseNamingAFolderIsReportedAtTheLineThatNamesIt() throws {
        try FileManager.default.createDirectory(atPath: folder + "/Plugins/Thing", withIntermediateDirectories: true)
        try TestSupport.write("abi: \"1.0\"\n", to: folder + "/Plugins/Thing/plugin.yaml")
        try TestSupport.write("data_dir: data\nplugins:\n  - id: x\n    use: Plugins/Thing\n", to: folder + "/plugins.yaml")
        let problems = try HostManifest.load(path: folder + "/plugins.yaml").diagnostics.map(\.description)
        XCTAssertEqual(
            problems,
            [
                "\(folder)/plugins.yaml:4:10: plugins[0].use: 'Plugins/Thing' is a folder, not a plugin manifest; name its plugin.yaml: Plugins/Thing/plugin.yaml"
            ])
    }
}
