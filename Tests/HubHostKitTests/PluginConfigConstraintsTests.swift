import Foundation
import XCTest

@testable import HubHostKit

/// A plugin.yaml's config keys may declare what the plugin will refuse (`minimum`, `maximum`,
/// `allowed`, `non_empty`, `pattern`): `manifest check` then refuses such a value at its line,
/// before any plugin code runs, instead of only the plugin's create at load time.
final class PluginConfigConstraintsTests: XCTestCase {
    func testTheKafkaSinksRefusalsAreCaughtByManifestCheck() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            plugins:
              - id: kafka
                use: \(TestSupport.plugin("KafkaSink"))
                config:
                  bootstrap_servers: ""
                  topic: "  "
                  client_settings: "linger.ms=5;acks=1"
                  compression: brotli
                  message_timeout: 0
              - id: good
                use: \(TestSupport.plugin("KafkaSink"))
                config:
                  bootstrap_servers: 127.0.0.1:9
                  topic: t
                  client_settings: "security.protocol=plaintext\\nlinger.ms=5"
                  message_timeout: 1 day
              - id: nats
                use: \(TestSupport.plugin("NatsSink"))
                config: {url: ""}
            """, to: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        let byKey = Dictionary(grouping: manifest.diagnostics, by: \.key).mapValues { $0.map(\.message) }
        XCTAssertEqual(byKey["plugins[0].config.bootstrap_servers"], ["must not be empty"])
        XCTAssertEqual(byKey["plugins[0].config.topic"], ["must not be empty"])
        XCTAssertEqual(byKey["plugins[0].config.compression"], ["unknown value 'brotli'; expected one of: none, gzip, snappy, lz4, zstd"])
        XCTAssertEqual(byKey["plugins[0].config.message_timeout"], ["must be between 0.001 and 86400 s, not 0.0 s"])
        XCTAssertTrue(byKey["plugins[0].config.client_settings"]?.first?.hasPrefix("'linger.ms=5;acks=1' does not match") == true, "\(byKey)")
        XCTAssertEqual(byKey["plugins[2].config.url"], ["must not be empty"])
        XCTAssertFalse(byKey.keys.contains { $0.hasPrefix("plugins[1]") }, "the good instance has no problem: \(byKey)")
        XCTAssertEqual(manifest.diagnostics.count, 6, "\(manifest.diagnostics)")
        let check = try TestSupport.hubhost(["manifest", "check", folder + "/plugins.yaml"])
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue(
            (check.stdout + check.stderr).contains("plugins.yaml:5:26: plugins[0].config.bootstrap_servers: must not be empty"),
            check.stdout + check.stderr)
    }

    func testConstraintsAreCheckedForTheirTypeAndTheDefaultMustSatisfyThem() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let yaml = TestSupport.pluginManifest(
            id: "constrained", name: "Constrained", library: "libconstrained.so", exports: [("constrained", "logging")],
            extra: """
                config:
                  - {key: count, type: int, default: 5, minimum: 1, maximum: 4}
                  - {key: name, type: string, minimum: 1}
                  - {key: level, type: int, allowed: [a, b]}
                  - {key: mode, type: string, default: fast, allowed: [slow, careful]}
                  - {key: code, type: string, pattern: "[a-z"}
                  - {key: span, type: duration, minimum: 2 s, maximum: 1 s}
                  - {key: host, type: string, default: "", non_empty: true}
                """)
        try TestSupport.write(yaml, to: folder + "/plugin.yaml")
        let loaded = PluginManifest.load(path: folder + "/plugin.yaml")
        XCTAssertNil(loaded.manifest)
        let byKey = Dictionary(grouping: loaded.diagnostics, by: \.key).mapValues { $0.map(\.message) }
        XCTAssertEqual(byKey["config[0].default"], ["the default must be between 1 and 4, not 5"])
        XCTAssertEqual(byKey["config[1].minimum"], ["minimum applies to numbers and durations, not to a string"])
        XCTAssertEqual(byKey["config[2].allowed"], ["allowed applies to strings, not to a int"])
        XCTAssertEqual(byKey["config[3].default"], ["the default unknown value 'fast'; expected one of: slow, careful"])
        XCTAssertEqual(byKey["config[4].pattern"], ["'[a-z' is not a regular expression"])
        XCTAssertEqual(byKey["config[5].maximum"], ["maximum 1.0 is below minimum 2.0"])
        XCTAssertEqual(byKey["config[6].default"], ["the default must not be empty"])
    }

    /// The Swift API (PluginTestKit, embedding apps) refuses as plugins.yaml does.
    func testTheSwiftAPIRefusesAsTheManifestDoes() throws {
        let schema = ConfigSchema(keys: [
            ConfigKey(key: "servers", type: .string, required: true, nonEmpty: true),
            ConfigKey(key: "settings", type: .string, defaultValue: .string(""), pattern: "(?!(?:.*;)?acks=).*")
        ])
        XCTAssertThrowsError(try schema.resolve(values: ["servers": .string(" ")])) {
            XCTAssertTrue("\($0)".contains("'servers' must not be empty"), "\($0)")
        }
        XCTAssertThrowsError(try schema.resolve(values: ["servers": .string("h:1"), "settings": .string("x=1;acks=0")])) {
            XCTAssertTrue("\($0)".contains("'settings' 'x=1;acks=0' does not match"), "\($0)")
        }
        XCTAssertEqual(try schema.resolve(values: ["servers": .string("h:1"), "settings": .string("x=1")])["settings"], .string("x=1"))
    }
}
