import Foundation
import XCTest

@testable import HubHostTools

/// `hubhost plugins new`, `hubhost plugins sdk` and scripts/install, as a plugin author without a
/// checkout uses them: every new plugin is built by its own Makefile in a folder outside the
/// repository, with only the flags the CLI gives, and passes the conformance suite.
final class PluginsNewTests: XCTestCase {
    /// An environment where the built hubhost is first on PATH and pkg-config finds no installed
    /// hubhost-plugin.pc, so `make` takes its flags from `hubhost plugins sdk --cflags`.
    func checkoutEnvironment(_ scratch: String) throws -> [String: String] {
        let empty = scratch + "/no-pkgconfig"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        return [
            "PATH": TestSupport.buildFolder + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            "PKG_CONFIG_LIBDIR": empty, "PKG_CONFIG_PATH": "", "HUBHOST_CFLAGS": ""
        ]
    }

    func testEachCKindIsWrittenBuiltByItsMakefileAndPassesTheConformanceSuite() throws {
        let scratch = try TestSupport.temporaryFolder(self)
        let environment = try checkoutEnvironment(scratch)
        let kinds = PluginScaffold.cKinds.map(\.rawValue)
        XCTAssertEqual(kinds, ["augmentation", "trigger_operator", "logging", "advertiser_id", "location"])
        try TestSupport.concurrently(kinds.count) { index in
            let kind = kinds[index]
            let name = "my-" + kind.replacingOccurrences(of: "_", with: "-")
            let folder = scratch + "/" + name
            let created = try TestSupport.hubhost(["plugins", "new", name, "--kind", kind, "--lang", "c", "--dir", folder], timeout: 60)
            try created.expect(0)
            for file in ["\(name).c", "plugin.yaml", "Makefile", "README.md"] {
                XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/" + file), "\(kind): no \(file)")
            }
            let made = try TestSupport.run("/usr/bin/env", ["make"], environment: environment, currentDirectory: folder, timeout: 120)
            try made.expect(0)
            // The headers came from the CLI (the checkout it was built from), not from pkg-config.
            XCTAssertTrue(made.stdout.contains("-I\(TestSupport.repository)/Protocols/include"), "\(kind): \(made)")
            XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/lib\(name).so"), kind)
            let tested = try TestSupport.run(
                TestSupport.hubhostExecutable, ["plugins", "test", "plugin.yaml"], environment: environment, currentDirectory: folder,
                timeout: 300)
            XCTAssertEqual(tested.status, 0, "\(kind): \(tested)")
        }
    }

    func testSDKNamesTheCheckoutHeaders() throws {
        let include = TestSupport.repository + "/Protocols/include"
        let flags = try TestSupport.hubhost(["plugins", "sdk", "--cflags"], in: NSTemporaryDirectory(), timeout: 30).expect(0)
        XCTAssertEqual(flags.stdout, "-I\(include)\n")
        let json = try TestSupport.hubhost(["plugins", "sdk", "--json"], timeout: 30).expect(0).json(as: [String: Any].self)
        XCTAssertEqual(json["include"] as? String, include)
        XCTAssertEqual(json["cflags"] as? String, "-I\(include)")
        XCTAssertEqual(json["wasm_builder"] as? String, TestSupport.repository + "/scripts/build-wasm-plugin")
        XCTAssertEqual(json["module_map"] as? String, include + "/hubhost/hubhost.modulemap")
        let swift = try TestSupport.hubhost(["plugins", "sdk", "--swift-flags"], in: NSTemporaryDirectory(), timeout: 30).expect(0)
        XCTAssertEqual(swift.stdout, "-I\(include) -Xcc -fmodule-map-file=\(include)/hubhost/hubhost.modulemap\n")
    }

    func testRefusesAnInvalidIDAKindOrLanguageNotWrittenAndANonEmptyFolder() throws {
        let scratch = try TestSupport.temporaryFolder(self)
        let badID = try TestSupport.hubhost(["plugins", "new", "My_Plugin", "--kind", "augmentation", "--dir", scratch + "/a"], timeout: 30)
        XCTAssertEqual(badID.status, 64, "\(badID)")
        XCTAssertTrue(badID.stderr.contains("'My_Plugin' is not a valid plugin id"), "\(badID)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch + "/a"))

        let sink = try TestSupport.hubhost(["plugins", "new", "sink", "--kind", "event_sink", "--dir", scratch + "/b"], timeout: 30)
        XCTAssertEqual(sink.status, 64, "\(sink)")
        XCTAssertTrue(sink.stderr.contains("does not write event_sink plugins yet"), "\(sink)")
        XCTAssertTrue(sink.stderr.contains("augmentation, trigger_operator, logging, advertiser_id, location"), "\(sink)")

        let swift = try TestSupport.hubhost(
            ["plugins", "new", "swifty", "--kind", "logging", "--lang", "swift", "--dir", scratch + "/c"], timeout: 30)
        XCTAssertEqual(swift.status, 64, "\(swift)")
        XCTAssertTrue(swift.stderr.contains("--lang swift does not write logging plugins yet"), "\(swift)")

        let full = scratch + "/full"
        try TestSupport.write("mine\n", to: full + "/notes.txt")
        let refused = try TestSupport.hubhost(["plugins", "new", "full", "--kind", "logging", "--dir", full], timeout: 30)
        XCTAssertEqual(refused.status, 1, "\(refused)")
        XCTAssertTrue(refused.stderr.contains("\(full) is not empty"), "\(refused)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: full), ["notes.txt"])
    }

    func testInstalledHubhostFindsItsHeadersAndBundledPlugins() throws {
        let scratch = try TestSupport.temporaryFolder(self)
        let prefix = try TestSupport.install(into: scratch + "/prefix")
        for path in [
            "bin/hubhost", "include/hubhost/hubhost.h", "include/hubhost/hubhost_plugin_helpers.h", "include/hubhost/hubhost.modulemap",
            "lib/pkgconfig/hubhost-plugin.pc",
            "share/hubhost/plugins/standard-operators/plugin.yaml", "share/hubhost/plugins/standard-operators/libhubhost-standard-operators.so",
            "share/hubhost/Examples/content", "share/hubhost/scripts/build-wasm-plugin", "share/doc/hubhost/README.md",
            "share/doc/hubhost/docs/plugin-authoring.md"
        ] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: prefix + "/" + path), path)
        }
        let installed = prefix + "/bin/hubhost"
        let flags = try TestSupport.run(installed, ["plugins", "sdk", "--cflags"], currentDirectory: scratch, timeout: 30).expect(0)
        XCTAssertEqual(flags.stdout, "-I\(prefix)/include\n")
        let pkgConfig = try TestSupport.run(
            "/usr/bin/env", ["pkg-config", "--cflags", "hubhost-plugin"], environment: ["PKG_CONFIG_PATH": prefix + "/lib/pkgconfig"],
            timeout: 30
        ).expect(0)
        XCTAssertEqual(pkgConfig.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "-I\(prefix)/include")

        let app = scratch + "/app"
        try TestSupport.write("plugins:\n  - id: operators\n    use: standard-operators\n", to: app + "/plugins.yaml")
        let checked = try TestSupport.run(installed, ["manifest", "check"], currentDirectory: app, timeout: 60)
        XCTAssertEqual(checked.status, 0, "\(checked)")
    }

    /// The newcomer's path, with only an installed hubhost and Debian's minisign: `plugins new`,
    /// `make`, `make package`, a minisign key and signature, `plugins trust`, then `plugins add`
    /// into a running serve, which runs the plugin on the next event; `verify` agrees.
    func testANewPluginIsBuiltPackedSignedWithMinisignAndAddedToARunningServe() async throws {
        try XCTSkipUnless(
            FileManager.default.isExecutableFile(atPath: MinisignTests.minisign), "minisign is not installed (scripts/debian-packages.txt)")
        let scratch = try TestSupport.temporaryFolder(self)
        let prefix = try TestSupport.install(into: scratch + "/prefix")
        let path = prefix + "/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let run: @Sendable (String) throws -> CommandResult = { command in
            try TestSupport.run("/bin/sh", ["-c", command], environment: ["PATH": path], currentDirectory: scratch, timeout: 120)
        }
        try run("hubhost plugins new demo --kind augmentation --lang c --dir demo && make -C demo && make -C demo package").expect(0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: scratch + "/demo/demo-0.1.0.hhp"))
        try run("minisign -G -W -p k.pub -s k.key && minisign -S -s k.key -m demo/demo-0.1.0.hhp").expect(0)
        try TestSupport.write("data_dir: data\nserver: {host: 127.0.0.1, port: 0}\nplugins: []\n", to: scratch + "/app/plugins.yaml")
        try run("hubhost plugins trust k.pub --name me --manifest app/plugins.yaml").expect(0)
        try await InProcessAPI.listening(manifestPath: scratch + "/app/plugins.yaml") { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                let added = try run("hubhost plugins add demo/demo-0.1.0.hhp --set value=installed --manifest app/plugins.yaml --url \(serve.base)")
                XCTAssertEqual(added.status, 0, added.description)
                XCTAssertTrue(added.stdout.contains("reloaded: the serve at \(serve.base)"), added.stdout)
                let (status, body) = try serve.call("POST", "/v1/events", #"{"type":"named_event","name":"after add"}"#)
                XCTAssertEqual(status, 201, "\(body)")
                let listed = try run("hubhost events list --limit 10 --json --manifest app/plugins.yaml").expect(0)
                XCTAssertTrue(listed.stdout.contains(#""Source":"installed""#) || listed.stdout.contains(#""Source" : "installed""#), listed.stdout)
                try run("hubhost plugins verify --manifest app/plugins.yaml").expect(0)
            }
        }
    }
}
