import XCTest

@testable import HubHostKit

final class ManifestTests: XCTestCase {
    private func manifest(_ yaml: String) throws -> HostManifest {
        let folder = try TestSupport.temporaryFolder(self)
        let path = folder + "/plugins.yaml"
        try TestSupport.write(yaml, to: path)
        return try HostManifest.load(path: path)
    }

    func testDefaultManifestIsValid() throws {
        let manifest = try HostManifest.load(path: TestSupport.repository + "/plugins.yaml")
        XCTAssertEqual(manifest.diagnostics, [])
        XCTAssertEqual(
            manifest.instances.map(\.id),
            [
                "console", "logfile", "advertiser", "location", "operators", "extra-operators",
                "content", "location-augmentation", "weather"
            ])
        XCTAssertEqual(manifest.dataDirectory, TestSupport.repository + "/.hubhost")
    }

    func testUnknownKeyHasLineColumnAndSuggestion() throws {
        let m = try manifest(
            """
            data_dir: data
            logging:
              severity: error
              verbositty: debug
            """)
        XCTAssertEqual(m.diagnostics.count, 1)
        let d = try XCTUnwrap(m.diagnostics.first)
        XCTAssertEqual(d.line, 4)
        XCTAssertEqual(d.column, 3)
        XCTAssertEqual(d.key, "logging.verbositty")
        XCTAssertTrue(d.message.contains("did you mean 'verbosity'?"), d.message)
        XCTAssertTrue(d.description.hasSuffix("plugins.yaml:4:3: logging.verbositty: " + d.message), d.description)
    }

    func testEveryProblemIsReportedInOneRun() throws {
        let console = TestSupport.plugin("ConsoleLogger")
        let m = try manifest(
            """
            data_dirr: x
            logging:
              severity: loud
            plugins:
              - id: console
                use: \(console)
                config:
                  timestamps: sometimes
                  colour: true
              - id: console
                use: \(console)
              - use: \(console)
              - id: ghost
                use: missing/plugin.yaml
            """)
        let keys = m.diagnostics.map(\.key)
        XCTAssertEqual(
            keys,
            [
                "data_dirr", "logging.severity", "plugins[0].config.colour", "plugins[0].config.timestamps",
                "plugins[1].id", "plugins[2].id", "plugins[3].use"
            ])
        XCTAssertTrue(m.diagnostics[0].message.contains("did you mean 'data_dir'?"))
        XCTAssertTrue(m.diagnostics[3].message.contains("expected true or false, found the string \"sometimes\""), m.diagnostics[3].message)
        XCTAssertEqual(m.diagnostics[3].line, 8)
        XCTAssertTrue(m.diagnostics[4].message.contains("duplicate instance id 'console' (first used on line 5)"), m.diagnostics[4].message)
        XCTAssertTrue(m.diagnostics[6].message.contains("no plugin manifest at 'missing/plugin.yaml'"))
        // Problems stay attached to their instance, so only that instance is disabled.
        XCTAssertEqual(m.instances.map { $0.problems.isEmpty }, [false, false, false, false])
    }

    func testWrongConfigTypeNamesKeyAndExpectedType() throws {
        let m = try manifest(
            """
            plugins:
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config:
                  latitude: north
                  longitude: 3
            """)
        let d = try XCTUnwrap(m.diagnostics.first)
        XCTAssertEqual(m.diagnostics.count, 1)
        XCTAssertEqual(d.key, "plugins[0].config.latitude")
        XCTAssertEqual(d.line, 5)
        XCTAssertEqual(d.column, 17)
        XCTAssertEqual(d.message, "expected a number, found the string \"north\"")
        // An int where a double is expected is fine, and defaults are filled in.
        XCTAssertEqual(m.instances[0].config["longitude"], .double(3))
        XCTAssertEqual(m.instances[0].config["accuracy_m"], .double(0))
    }

    func testInvalidYAMLIsAnErrorWithPosition() throws {
        XCTAssertThrowsError(try manifest("plugins:\n  - id: [unclosed\n")) { error in
            let diagnostics = (error as? ManifestError)?.diagnostics ?? []
            XCTAssertEqual(diagnostics.count, 1)
            XCTAssertTrue(diagnostics.first?.message.hasPrefix("invalid YAML") ?? false, "\(diagnostics)")
            XCTAssertGreaterThanOrEqual(diagnostics.first?.line ?? 0, 2)
        }
    }

    func testDuplicateYAMLKeysAreReported() throws {
        XCTAssertThrowsError(try manifest("data_dir: a\ndata_dir: b\n")) { error in
            XCTAssertTrue((error as? ManifestError)?.description.contains("duplicate key 'data_dir'") ?? false, "\(error)")
        }
    }

    func testHubSectionWithListsAndItsProblemsAtTheirLines() throws {
        let m = try manifest(
            """
            hub:
              db_service_url: http://127.0.0.1:9/
              public_key: keys/pubkey.der
              content_source: local_only
              whitelist_urls: [https://cdn.example.com/a.png?x=1]
              whitelist_domains: [images.example.com]
              custom_url_schemes: ["myapp://", other]
            """)
        XCTAssertEqual(m.diagnostics, [])
        XCTAssertEqual(m.hub.dbServiceURL, "http://127.0.0.1:9/")
        XCTAssertTrue(m.hub.publicKeyPath?.hasSuffix("/keys/pubkey.der") ?? false, "\(m.hub.publicKeyPath ?? "nil")")
        XCTAssertEqual(m.hub.contentSource, .localOnly)
        XCTAssertEqual(m.hub.whitelistURLs, ["https://cdn.example.com/a.png?x=1"])
        XCTAssertEqual(m.hub.whitelistDomains, ["images.example.com"])
        XCTAssertEqual(m.hub.customURLSchemes, ["myapp", "other"])
        XCTAssertEqual(m.hub.colorScheme, .dark)

        let bad = try manifest("hub:\n  content_source: local\n  whitelist_url: [a]\n  color_scheme: blue\n")
        XCTAssertEqual(bad.diagnostics.map(\.key).sorted(), ["hub.color_scheme", "hub.content_source", "hub.whitelist_url"])
        let unknown = try XCTUnwrap(bad.diagnostics.first { $0.key == "hub.whitelist_url" })
        XCTAssertEqual(unknown.line, 3)
        XCTAssertTrue(unknown.message.contains("whitelist_urls"), unknown.message)
    }

    func testPluginManifestProblems() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            abi: "2.0"
            id: Bad_ID
            name: x
            version: one
            library: libx.so
            exports:
              - id: a
                kind: trigger_operatr
            config:
              - key: timeout
                type: duration
                default: 3 fortnights
            """, to: folder + "/plugin.yaml")
        let loaded = PluginManifest.load(path: folder + "/plugin.yaml")
        XCTAssertNil(loaded.manifest)
        let messages = loaded.diagnostics.map(\.message)
        XCTAssertEqual(loaded.diagnostics.map(\.key), ["id", "version", "abi", "exports[0].kind", "config[0].default"])
        XCTAssertTrue(messages[2].contains("this hubhost speaks ABI \(ABIVersion.host)"), messages[2])
        XCTAssertTrue(messages[3].contains("did you mean 'trigger_operator'?"), messages[3])
        XCTAssertTrue(messages[4].contains("unknown unit 'fortnights'"), messages[4])
    }

    func testDurationConfigIsNormalizedToSeconds() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let plugin = TestSupport.pluginManifest(
            id: "timed", name: "Timed", library: "libtimed.so", exports: [("timed", "augmentation")],
            extra: "config:\n  - {key: cache_lifespan, type: duration, default: 1 hr}\n  - {key: timeout, type: duration, required: true}")
        try TestSupport.write(plugin, to: folder + "/timed/plugin.yaml")
        try TestSupport.write(
            """
            plugins:
              - id: timed
                use: timed/plugin.yaml
                config:
                  timeout: 1d 7h 23m 15s
              - id: untimed
                use: timed/plugin.yaml
            """, to: folder + "/plugins.yaml")
        let m = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(m.instances[0].config["timeout"], .double(112_995))
        XCTAssertEqual(m.instances[0].config["cache_lifespan"], .double(3600))
        XCTAssertEqual(m.diagnostics.map(\.key), ["plugins[1].config.timeout"])
        XCTAssertTrue(m.diagnostics[0].message.contains("required config key 'timeout' (duration) is missing"))
        let resolved = ResolvedManifest(m)
        XCTAssertEqual(resolved.plugins[0].config["timeout"], .number(112_995))
    }
}
