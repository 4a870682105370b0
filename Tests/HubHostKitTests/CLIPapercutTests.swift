import Foundation
import XCTest

@testable import HubHostKit

/// The papercuts a new user hit in the CLI: each is run as a user runs it, with the
/// built hubhost executable.
final class CLIPapercutTests: XCTestCase {
    /// A folder with a plugins.yaml of the given plugin entries (and its data directory inside).
    private func folder(plugins: String = "plugins: []") throws -> String {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(plugins + "\n", to: folder + "/plugins.yaml")
        return folder
    }

    private func operatorsFolder() throws -> String {
        try folder(
            plugins: """
                plugins:
                  - id: operators
                    use: \(TestSupport.plugin("StandardOperators"))
                """)
    }

    // MARK: Negative numbers are values

    /// `hubhost --version` prints the version a plugin's `requires:` is checked against.
    func testVersionPrintsTheVersionRequiresIsCheckedAgainst() throws {
        let result = try TestSupport.hubhost(["--version"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines), HubHostVersion.current)
    }

    /// `manifest check` takes the manifest as its argument or with --manifest, as every other command does.
    func testManifestCheckTakesTheManifestAsArgumentOrWithTheManifestOption() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("data_dir: data\nplugins: []\n", to: folder + "/good.yaml")
        try TestSupport.write("data_dir: data\nplugins: [\n", to: folder + "/bad.yaml")
        XCTAssertEqual(try TestSupport.hubhost(["manifest", "check", folder + "/good.yaml"]).status, 0)
        XCTAssertEqual(try TestSupport.hubhost(["manifest", "check", "--manifest", folder + "/good.yaml"]).status, 0)
        XCTAssertEqual(try TestSupport.hubhost(["manifest", "check", "--manifest", folder + "/bad.yaml"]).status, 2)
        let both = try TestSupport.hubhost(["manifest", "check", folder + "/good.yaml", "--manifest", folder + "/bad.yaml"])
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.stderr.contains("name the manifest once"), both.stderr)
    }

    func testNegativeNumbersAreAcceptedAsOptionValues() throws {
        let folder = try operatorsFolder()
        let integers = try TestSupport.hubhost(["operators", "test", "EQUALS", "--type", "integer", "--trigger", "-2", "--event", "-2"], in: folder)
        XCTAssertEqual(integers.status, 0, integers.stderr)
        XCTAssertEqual(integers.stdout, "true\n")
        let doubles = try TestSupport.hubhost(
            ["operators", "test", "LESS_THAN", "--type", "double", "--trigger", "-1.5", "--event", "-2.5"], in: folder)
        XCTAssertEqual(doubles.stdout, "true\n", doubles.stderr)
        let strings = try TestSupport.hubhost(["operators", "test", "EQUALS", "--type", "string", "--trigger", "-x", "--event", "-x"], in: folder)
        XCTAssertEqual(strings.stdout, "true\n", strings.stderr)

        // A negative value where it makes no sense reaches the command's own check, with its reason.
        let purchase = try TestSupport.hubhost(["track", "purchase_successful", "--purchase-amount", "-5", "--currency-code", "USD"], in: folder)
        XCTAssertEqual(purchase.status, 64)
        XCTAssertTrue(purchase.stderr.contains("purchase amount -5 is negative"), purchase.stderr)
        for (arguments, message) in [
            (["events", "list", "--limit", "-1"], "--limit must be at least 1 (got -1)"),
            (["hub", "watch", "--count", "-1"], "--count must be at least 1"),
            (["bench", "abi", "--iterations", "-10"], "--iterations and --rounds must be positive"),
            (["plugins", "test", "x.yaml", "--call-budget", "-1"], "must be positive")
        ] {
            let result = try TestSupport.hubhost(arguments, in: folder)
            XCTAssertEqual(result.status, 64, "\(arguments)")
            XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("Missing value"), "\(arguments): \(result.stderr)")
        }
    }

    // MARK: track with one argument; the subcommand's usage in errors

    func testTrackWithOneArgumentThatIsNotATypeTracksANamedEvent() throws {
        let folder = try folder()
        let named = try TestSupport.hubhost(["track", "PLAYER LOADED", "--int", "Level=-3", "--json"], in: folder)
        XCTAssertEqual(named.status, 0, named.stderr)
        let event = try named.json(as: [String: Any].self)
        XCTAssertEqual(event["type"] as? String, "named_event")
        XCTAssertEqual(event["name"] as? String, "PLAYER LOADED")
        XCTAssertEqual((event["attributes"] as? [String: Any])?["Level"] as? Int, -3)

        // One argument that is a type is still the type.
        let typed = try TestSupport.hubhost(["track", "login_successful", "--json"], in: folder).json(as: [String: Any].self)
        XCTAssertEqual(typed["type"] as? String, "login_successful")
        XCTAssertEqual(typed["name"] as? String, "")
    }

    func testAnErrorFromACommandShowsThatCommandsUsage() throws {
        let folder = try folder()
        let result = try TestSupport.hubhost(["track", "no_such_type", "NAME"], in: folder)
        XCTAssertEqual(result.status, 64)
        XCTAssertTrue(result.stderr.contains("Error: unknown event type 'no_such_type'"), result.stderr)
        XCTAssertTrue(result.stderr.contains("Usage: hubhost track [<options>] [<type>] [<name>]"), result.stderr)
        XCTAssertTrue(result.stderr.contains("See 'hubhost track --help'"), result.stderr)
        XCTAssertFalse(result.stderr.contains("hubhost <subcommand>"), result.stderr)

        let nested = try TestSupport.hubhost(
            ["operators", "test", "EQUALS", "--type", "integer", "--trigger", "two", "--event", "2"], in: try operatorsFolder())
        XCTAssertEqual(nested.status, 64)
        XCTAssertTrue(nested.stderr.contains("Error: 'two' is not an integer"), nested.stderr)
        XCTAssertTrue(nested.stderr.contains("Usage: hubhost operators test <operator>"), nested.stderr)
        XCTAssertTrue(nested.stderr.contains("See 'hubhost operators test --help'"), nested.stderr)
    }

    // MARK: Help text

    /// No help text has a line break inside a sentence: in every command's help texts (as the
    /// parser holds them, before it wraps them to the terminal), a line that does not end a
    /// sentence (or introduce an indented list, or give one example) is never followed by more text.
    func testHelpTextHasNoLineBreakInsideASentence() throws {
        let dump = try TestSupport.hubhost(["--experimental-dump-help"])
        XCTAssertEqual(dump.status, 0, dump.stderr)
        let root = try XCTUnwrap((try dump.json as? [String: Any])?["command"] as? [String: Any])
        var checked = 0
        var broken: [String] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            var texts: [(String, String)] = [
                ("abstract", command["abstract"] as? String ?? ""), ("discussion", command["discussion"] as? String ?? "")
            ]
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                let name = (argument["valueName"] as? String) ?? "?"
                texts.append(("\(name) help", (argument["abstract"] as? String ?? "") + "\n" + (argument["discussion"] as? String ?? "")))
            }
            for (what, text) in texts {
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                for (line, next) in zip(lines, lines.dropFirst()) {
                    checked += 1
                    let indented = { (s: Substring) in s.first?.isWhitespace ?? false }
                    guard !line.isEmpty, !next.isEmpty, !indented(line), !indented(next) else { continue }
                    if let last = line.last, ".:!?".contains(last) { continue }
                    if next.hasPrefix("Example:") && line.hasPrefix("Example:") { continue }  // one example per line
                    broken.append("\(path.joined(separator: " ")) \(what): '\(line.suffix(30))' / '\(next.prefix(30))'")
                }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                walk(sub, path + [sub["commandName"] as? String ?? "?"])
            }
        }
        walk(root, ["hubhost"])
        XCTAssertGreaterThan(checked, 10)
        XCTAssertEqual(broken, [], "help lines broken mid-sentence")
        // The case a user hit: `track --help` reads "as JSON on stdin" on one line.
        let track = try TestSupport.hubhost(["track", "--help"], environment: ["COLUMNS": "400"])
        XCTAssertTrue(track.stdout.contains("as JSON on stdin with --stdin"), track.stdout)
    }

    // MARK: One name per command; the old names stay as hidden aliases

    func testOneNamePerCommandAndTheOldNamesStillWork() throws {
        let help = try TestSupport.hubhost(["--help"], environment: ["COLUMNS": "400"])
        let commands = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertTrue(commands.contains { $0.hasPrefix("plugins ") }, help.stdout)
        XCTAssertTrue(commands.contains { $0.hasPrefix("notifications ") }, help.stdout)
        XCTAssertFalse(commands.contains { $0.hasPrefix("plugin ") }, "plugin is hidden: \(help.stdout)")
        XCTAssertFalse(commands.contains { $0.hasPrefix("notification ") }, "notification is hidden: \(help.stdout)")
        XCTAssertTrue(try TestSupport.hubhost(["plugins", "--help"]).stdout.contains("test"))
        let notifications = try TestSupport.hubhost(["notifications", "--help"]).stdout
        for subcommand in ["received", "opened", "due", "handle"] { XCTAssertTrue(notifications.contains(subcommand), notifications) }
        XCTAssertFalse(try TestSupport.hubhost(["campaigns", "--help"]).stdout.contains("displayed"))

        // The new names and the old ones do the same.
        let folder = try folder()
        for arguments in [["plugins", "test"], ["plugin", "test"]] {
            let list = try TestSupport.hubhost(arguments + [TestSupport.plugin("Noop"), "--list", "--json"], in: folder)
            XCTAssertEqual(list.status, 0, "\(arguments): \(list.stderr)")
            XCTAssertTrue(list.stdout.contains("library/load"), list.stdout)
        }
        for (arguments, campaign) in [(["notifications", "received"], "new-name"), (["notification", "received"], "old-name")] {
            let result = try TestSupport.hubhost(arguments + ["CurrentCampaign=\(campaign)", "--json"], in: folder)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
            let event = try result.json(as: [String: Any].self)
            XCTAssertEqual(event["type"] as? String, "notification_received")
            XCTAssertEqual((event["attributes"] as? [String: Any])?["Campaign Name"] as? String, campaign)
        }

        // campaigns displayed ID (old) and messages impression ID (new) both count one impression.
        let campaigns = """
            {"data": [{"campaignData": {"campaignId": "c1", "maxImpressions": 3, "type": 1,
              "triggers": [{"type": 1, "eventType": 1, "eventName": "app_start", "attributes": []}],
              "messagePayload": {"title": "Hello"}}}]}
            """
        try TestSupport.write(campaigns, to: folder + "/campaigns.json")
        XCTAssertEqual(try TestSupport.hubhost(["campaigns", "sync", "--file", "campaigns.json"], in: folder).status, 0)
        XCTAssertEqual(try TestSupport.hubhost(["messages", "impression", "c1"], in: folder).status, 0)
        XCTAssertEqual(try TestSupport.hubhost(["campaigns", "displayed", "c1"], in: folder).status, 0)
        let statuses = try TestSupport.hubhost(["campaigns", "list", "--json"], in: folder).json(as: [[String: Any]].self)
        XCTAssertEqual(statuses.first?["impressionsLeft"] as? Int, 1)
    }

    // MARK: manifest check and libraries that cannot be found

    func testManifestCheckFailsWhenAnEnabledInstancesLibraryCannotBeFound() throws {
        let folder = try folder(
            plugins: """
                plugins:
                  - id: mine
                    use: mine/plugin.yaml
                  - id: off
                    use: mine/plugin.yaml
                    enabled: false
                """)
        try TestSupport.write(TestSupport.fixtureManifest(library: "libmine.so", id: "mine"), to: folder + "/mine/plugin.yaml")
        let missing = try TestSupport.hubhost(["manifest", "check"], in: folder, environment: ["HUBHOST_PLUGIN_PATH": folder + "/elsewhere"])
        XCTAssertEqual(missing.status, 1, missing.stdout)
        XCTAssertFalse(missing.stdout.contains("valid"), missing.stdout)
        XCTAssertTrue(
            missing.stderr.contains("\(folder)/plugins.yaml:2:5: plugins[0]: instance 'mine': library libmine.so not found"), missing.stderr)
        XCTAssertTrue(missing.stderr.contains("looked in: \(folder)/mine, \(folder)/elsewhere, \(TestSupport.buildFolder)"), missing.stderr)
        XCTAssertTrue(missing.stderr.contains("HUBHOST_PLUGIN_PATH"), missing.stderr)
        XCTAssertTrue(missing.stderr.contains("`library:`"), missing.stderr)
        XCTAssertFalse(missing.stderr.contains("swift build"), "not a bundled plugin: \(missing.stderr)")
        XCTAssertTrue(missing.stderr.contains("1 problem"), "the disabled instance is not a problem: \(missing.stderr)")
        let report = try TestSupport.hubhost(["manifest", "check", "--json"], in: folder).json(as: [String: Any].self)
        XCTAssertEqual(report["valid"] as? Bool, false)

        // Either way of pointing hubhost at it makes the manifest valid.
        try TestSupport.write("not loaded by manifest check", to: folder + "/lib/libmine.so")
        let withPath = try TestSupport.hubhost(["manifest", "check"], in: folder, environment: ["HUBHOST_PLUGIN_PATH": folder + "/lib"])
        XCTAssertEqual(withPath.status, 0, withPath.stderr)
        XCTAssertTrue(withPath.stdout.contains("valid (2 plugin instances)"), withPath.stdout)
        try TestSupport.write(TestSupport.fixtureManifest(library: "../lib/libmine.so", id: "mine"), to: folder + "/mine/plugin.yaml")
        XCTAssertEqual(try TestSupport.hubhost(["manifest", "check"], in: folder).status, 0)
    }

    func testABundledPluginThatIsNotBuiltIsToldToBuild() throws {
        // A copy of the package's layout: Package.swift beside Plugins/<Name>/plugin.yaml.
        let package = try TestSupport.temporaryFolder(self)
        try TestSupport.write("// swift-tools-version:6.0\n", to: package + "/Package.swift")
        try TestSupport.write(
            TestSupport.fixtureManifest(library: "libhubhost-not-built.so", id: "unbuilt"), to: package + "/Plugins/Unbuilt/plugin.yaml")
        try TestSupport.write("plugins:\n  - id: unbuilt\n    use: Plugins/Unbuilt/plugin.yaml\n", to: package + "/plugins.yaml")
        let result = try TestSupport.hubhost(["manifest", "check"], in: package)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("It is a plugin bundled with hubhost: build it with `swift build` in \(package)"), result.stderr)
    }

    // MARK: plugins list shows the binary's ABI version

    func testPluginsListShowsTheABIVersionOfALibraryRefusedForIt() throws {
        let folder = try folder(plugins: "plugins:\n  - id: abi2\n    use: fixture/plugin.yaml\n")
        _ = try TestSupport.compileFixture(defines: ["FAULT_ABI_MAJOR=2"], into: folder + "/fixture", name: "libabi2.so")
        try TestSupport.write(TestSupport.fixtureManifest(library: "libabi2.so", abi: "1.0"), to: folder + "/fixture/plugin.yaml")
        let result = try TestSupport.hubhost(["plugins", "list", "--json"], in: folder)
        XCTAssertEqual(result.status, 1, "an enabled instance failed")
        let row = try XCTUnwrap((try result.json as? [[String: Any]])?.first)
        XCTAssertEqual(row["state"] as? String, "failed")
        XCTAssertTrue((row["reason"] as? String)?.contains("was built for plugin ABI 2.0.0") ?? false, "\(row)")
        XCTAssertEqual(row["abi"] as? String, "2.0.0", "the binary's version, not plugin.yaml's 1.0")
        let table = try TestSupport.hubhost(["plugins", "list"], in: folder)
        XCTAssertTrue(table.stdout.contains("2.0.0"), table.stdout)
    }

    // MARK: An unknown config key of a plugin without config keys

    func testAConfigKeyForAPluginWithoutConfigKeysSaysItTakesNone() throws {
        let folder = try folder(
            plugins: """
                plugins:
                  - id: extra
                    use: \(TestSupport.plugin("ExtraOperators"))
                    config: {ignore_case: true}
                """)
        let result = try TestSupport.hubhost(["manifest", "check"], in: folder)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stderr.contains("plugins[0].config.ignore_case: unknown config key 'ignore_case': the plugin takes no config keys"), result.stderr)
        XCTAssertFalse(result.stderr.contains("expected one of"), result.stderr)
        // From Swift (PluginTestKit, the Swift API) too.
        XCTAssertThrowsError(try ConfigSchema(keys: []).resolve(values: ["x": .int(1)])) { error in
            XCTAssertTrue("\(error)".contains("unknown config key 'x': the plugin takes no config keys"), "\(error)")
        }
    }

    // MARK: hubhost serve: typed notification values, an article opened without a hub session

    /// serve of the demo content (in this process, on a loopback port, its services running), for
    /// `body` on a Dispatch thread (its calls block).
    private func serveDemoContent(_ body: @escaping @Sendable (ListeningAPI) throws -> Void) async throws {
        let folder = try folder(plugins: "data_dir: data\nserver: {host: 127.0.0.1, port: 0}\nhub:\n  preloaded_bundle: content\n")
        try FileManager.default.copyItem(atPath: TestSupport.repository + "/Tests/Fixtures/content", toPath: folder + "/content")
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool { try body(ListeningAPI(port: port)) }
        }
    }

    /// A page, redirects followed (as a browser does).
    private static func page(_ server: ListeningAPI, _ path: String) throws -> (status: Int, body: String) {
        let response = try server.http.fetch("GET", server.base + path, timeoutSeconds: 10).get()
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    func testAnArticleOpenedWithoutAHubSessionOpensTheSessionAtThatArticle() async throws {
        try await serveDemoContent { server in
            let article = try Self.page(server, "/hub/article/news/sports/final-score")
            XCTAssertEqual(article.status, 200)
            XCTAssertTrue(
                article.body.contains(#"data-hub-kind="article" data-id="news/sports/final-score""#), "the article, not the hub: \(article.body)")
            let (_, state) = try server.call("GET", "/v1/hub/state")
            XCTAssertEqual((state as? [String: Any])?["isDisplayingContentHub"] as? Bool, true)
            // The session goes on from there.
            XCTAssertTrue(try Self.page(server, "/hub/channel/news/local").body.contains(#"data-id="news/local""#))
            XCTAssertTrue(try Self.page(server, "/hub/back").body.contains(#"data-id="news/sports/final-score""#))

            // A channel too; an id that is not in the bundle is a 404 status view, not a redirect.
            _ = try Self.page(server, "/hub/close")
            XCTAssertTrue(try Self.page(server, "/hub/channel/cooking/recipes").body.contains(#"data-hub-kind="channel" data-id="cooking/recipes""#))
            _ = try Self.page(server, "/hub/close")
            XCTAssertEqual(try Self.page(server, "/hub/article/news/sports/no-such-article").status, 404)
            XCTAssertTrue(
                try Self.page(server, "/hub/home").body.contains(#"data-hub-kind="hub""#), "the hub page without a session presents the hub")
        }
    }

    func testNotificationValuesAreJSONNumbersAndBooleans() async throws {
        try await serveDemoContent { server in
            XCTAssertEqual(try Self.page(server, "/hub").status, 200)
            let watched = try TestSupport.hubhost([
                "hub", "watch", "--url", server.base, "--replay", "--json", "--name", "DisplayingContentHubStateChanged",
                "--name", "ReadyStateChanged", "--count", "2", "--timeout", "20"
            ])
            XCTAssertEqual(watched.status, 0, watched.stderr)
            let payloads = try watched.stdout.split(separator: "\n").map { line in
                try XCTUnwrap((try TestSupport.json(String(line)) as? [String: Any])?["payload"] as? [String: Any])
            }
            XCTAssertEqual(payloads.count, 2)
            for payload in payloads {
                let value = try XCTUnwrap(payload.values.first)
                XCTAssertTrue(value is Bool, "a JSON boolean, not \(type(of: value)): \(watched.stdout)")
            }
            XCTAssertTrue(watched.stdout.contains(#""isDisplayingContentHub":true"#), watched.stdout)
            XCTAssertFalse(watched.stdout.contains(#""true""#), watched.stdout)
            let text = try TestSupport.hubhost([
                "hub", "watch", "--url", server.base, "--replay", "--name", "DisplayingContentHubStateChanged", "--count", "1", "--timeout", "20"
            ])
            XCTAssertTrue(text.stdout.contains("isDisplayingContentHub=true"), text.stdout)

            // Numbers: a progress percent and a local notification's time, as the engines post them.
            let notification = HostNotification(name: HostNotification.Name.downloadProgressChanged, payload: ["percent": .number(0)], timestampMs: 1)
            let encoded = String(decoding: try JSONEncoder().encode(notification), as: UTF8.self)
            XCTAssertTrue(encoded.contains(#""percent":0"#), encoded)
            let due = LocalNotifications.payload(.init(id: "n1", fireAtMs: 1_795_000_000_000, message: "m", actionURI: "zbimdb://hub/news"))
            XCTAssertEqual(due["fire_at_ms"], .number(1_795_000_000_000))
        }
    }

    // MARK: Hygiene

    /// The default plugins.yaml presents the demo content from Examples/content, not from a test fixture.
    func testTheDefaultManifestShowsTheDemoContentFromExamples() throws {
        let manifest = try String(contentsOfFile: TestSupport.repository + "/plugins.yaml", encoding: .utf8)
        XCTAssertTrue(manifest.contains("preloaded_bundle: Examples/content"), manifest)
        XCTAssertFalse(manifest.contains("Tests/Fixtures"), "the product's demo does not live in test fixtures")
        let folder = try TestSupport.temporaryFolder(self)
        try FileManager.default.copyItem(atPath: TestSupport.repository + "/plugins.yaml", toPath: folder + "/plugins.yaml")
        for link in ["Plugins", "Examples"] {
            try FileManager.default.createSymbolicLink(atPath: folder + "/" + link, withDestinationPath: TestSupport.repository + "/" + link)
        }
        let present = try TestSupport.hubhost(["hub", "present", "--json"], in: folder)
        XCTAssertEqual(present.status, 0, present.stderr)
        XCTAssertTrue(present.stdout.contains("news/sports/final-score"), present.stdout)
    }
}
