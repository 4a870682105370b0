import Foundation
import HubHostTools
import XCTest

@testable import HubHostKit

/// The plugin author's guide must work as written: its C plugins and plugin.yaml files are
/// taken from the documentation, compiled with strict flags, inspected and loaded through the real loader.
final class AuthorGuideTests: XCTestCase {
    /// The fenced block that follows `<!-- guide: NAME -->` in README.md or a page of docs/.
    private func guideBlock(_ name: String) throws -> String {
        try DocumentationText.block(after: "<!-- guide: \(name) -->")
    }

    /// README's tour: the smallest C plugin, built as the README says, passes the conformance suite,
    /// and the instance lines appended to the repository's own plugins.yaml (every default plugin
    /// beside it) make `hubhost operators test` answer with it.
    func testTheReadmesTourPluginBuildsLoadsAndAnswers() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let validation = try buildAndValidate(
            source: try guideBlock("ends-with.c"), manifest: try guideBlock("ends-with.yaml"),
            in: folder + "/ends-with", library: "ends-with")
        XCTAssertTrue(validation.contains(" passed, 0 failed"), validation)
        // The default plugins.yaml as it is, its paths made absolute, with the README's lines appended.
        let defaults = try String(contentsOfFile: TestSupport.repository + "/plugins.yaml", encoding: .utf8)
            .replacingOccurrences(of: " Plugins/", with: " \(TestSupport.repository)/Plugins/")
            .replacingOccurrences(of: " Examples/", with: " \(TestSupport.repository)/Examples/")
        try TestSupport.write(
            defaults + (defaults.hasSuffix("\n") ? "" : "\n") + (try guideBlock("ends-with-instance.yaml")),
            to: folder + "/plugins.yaml")
        let check = try TestSupport.run(TestSupport.hubhostExecutable, ["manifest", "check", folder + "/plugins.yaml"])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        func answer(_ trigger: String, _ event: String) throws -> String {
            let run = try TestSupport.run(
                TestSupport.hubhostExecutable,
                [
                    "operators", "test", "ENDS_WITH", "--type", "string", "--trigger", trigger,
                    "--event", event, "--manifest", folder + "/plugins.yaml"
                ])
            XCTAssertEqual(run.status, 0, run.stderr)
            return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        XCTAssertEqual(try answer("sale", "Summer sale"), "true")
        XCTAssertEqual(try answer("Sum", "Summer sale"), "false")
        XCTAssertEqual(try answer("", "x"), "true")
        XCTAssertEqual(try answer("a Summer sale", "Summer sale"), "false")
        let operators = try TestSupport.run(TestSupport.hubhostExecutable, ["operators", "list", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertTrue(operators.stdout.contains("ends-with"), "the operator comes from the tour's plugin: \(operators.stdout)")
    }

    func testTheGuidesCPluginBuildsLoadsAndWorks() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let validation = try buildAndValidate(
            source: try guideBlock("contains.c"), manifest: try guideBlock("plugin.yaml"),
            in: folder + "/contains", library: "contains")
        let inspection = PluginInspection.inspect(path: folder + "/contains/plugin.yaml")
        XCTAssertTrue(inspection.isConsistent, "\(inspection.manifestProblems) \(inspection.binaryProblem ?? "") \(inspection.disagreements)")
        XCTAssertTrue(validation.contains("8 passed, 0 failed"), validation)

        try TestSupport.write(
            """
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

    /// The README's user_id_generator (Mobile identity, "Generators") builds, passes `hubhost plugins
    /// test` and makes mobile user ids.
    func testTheReadmesUserIDGeneratorBuildsAndPassesTheValidator() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let validation = try buildAndValidate(
            source: try guideBlock("counter_ids.c"),
            manifest: """
                abi: "1.1"
                id: counter-ids
                name: Counter ids
                version: 1.0.0
                library: libcounter-ids.so
                exports:
                  - {id: counter-ids, kind: user_id_generator}
                """, in: folder + "/ids", library: "counter-ids")
        XCTAssertTrue(validation.contains("generate-unique"), validation)
        try TestSupport.write("data_dir: data\nplugins:\n  - id: ids\n    use: ids/plugin.yaml\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let generator = try XCTUnwrap(host.registry.plugins(of: .userIDGenerator).first.map(UserIDGeneratorPlugin.init))
        XCTAssertEqual(try generator.generate(), "user-1")
        XCTAssertEqual(try generator.generate(), "user-2")
    }

    /// Writes a C plugin and its plugin.yaml into `dir`, compiles the source with the strict flags
    /// into `lib<library>.so` beside them, runs `hubhost plugins test` on it (which must pass) and
    /// returns what the validator printed.
    @discardableResult
    private func buildAndValidate(source: String, manifest: String, in dir: String, library: String) throws -> String {
        try TestSupport.write(source, to: dir + "/\(library).c")
        try TestSupport.write(manifest, to: dir + "/plugin.yaml")
        let cc = try TestSupport.compilePlugin(dir + "/\(library).c", to: dir + "/lib\(library).so")
        XCTAssertEqual(cc.status, 0, cc.stderr)
        let validation = try TestSupport.run(TestSupport.hubhostExecutable, ["plugins", "test", dir + "/plugin.yaml"])
        XCTAssertEqual(validation.status, 0, validation.stdout)
        return validation.stdout
    }

    /// Builds a guide block's C plugin and manifest (`name`.c, `name`.yaml) into `folder`/`name`/,
    /// checks that `hubhost plugins test` passes all of it, and returns the plugin.yaml's path.
    private func buildGuidePlugin(_ name: String, in folder: String) throws -> String {
        let validation = try buildAndValidate(
            source: try guideBlock(name + ".c"), manifest: try guideBlock(name + ".yaml"),
            in: folder + "/" + name, library: name)
        XCTAssertTrue(validation.contains("9 passed, 0 failed"), validation)
        return folder + "/" + name + "/plugin.yaml"
    }

    func testTheGuidesABI11PluginsBuildLoadAndWork() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let network = try buildGuidePlugin("fixed-network", in: folder)
        let bearer = try buildGuidePlugin("bearer-token", in: folder)
        try TestSupport.write(
            """
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

    func testTheGuidesEventSinkBuildsPassesThePluginTestAndDelivers() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try buildAndValidate(
            source: try guideBlock("file-sink.c"), manifest: try guideBlock("file-sink.yaml"), in: folder + "/sink", library: "file-sink")

        try TestSupport.write(
            """
            data_dir: data
            events: {sink: out}
            plugins:
              - id: out
                use: sink/plugin.yaml
                config: {path: \(folder)/events.jsonl}
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let engine = try host.events()
        let event = try engine.track(Event(type: .namedEvent, name: "PLAYER LOADED"), autoFlush: false)
        XCTAssertEqual(engine.flush().posted, 2)
        let lines = try String(contentsOfFile: folder + "/events.jsonl", encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 2)
        let last = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        XCTAssertEqual(last["idempotencyKey"] as? String, event.id)
    }
}
