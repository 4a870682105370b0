import Foundation
import XCTest

@testable import HubHostKit

/// The hubhost executable, run as a user runs it.
final class CLITests: XCTestCase {
    func testHelpListsEveryCommand() throws {
        let result = try TestSupport.hubhost(["--help"])
        XCTAssertEqual(result.status, 0)
        for command in ["status", "manifest", "plugins", "advertiser-id", "location", "bench"] {
            XCTAssertTrue(result.stdout.contains(command), "--help lacks \(command)")
        }
    }

    /// Every command names itself: a command without `commandName` has ArgumentParser derive its
    /// name from its type's with `String(describing:)`, a runtime conformance scan of the whole
    /// binary per command (about 2.4 M instructions each), which was three quarters of every
    /// `hubhost` start's instructions (237 M for `--version`, callgrind).
    func testEveryCommandConfigurationNamesItsCommand() throws {
        let folder = TestSupport.repository + "/Host/hubhost"
        var configurations = 0
        var unnamed: [String] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder) where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            var rest = Substring(text)
            while let start = rest.range(of: "CommandConfiguration(") {
                configurations += 1
                // The arguments up to the matching parenthesis.
                var depth = 1
                var end = start.upperBound
                while depth > 0, end < rest.endIndex {
                    if rest[end] == "(" { depth += 1 } else if rest[end] == ")" { depth -= 1 }
                    end = rest.index(after: end)
                }
                if !rest[start.upperBound..<end].contains("commandName:") {
                    unnamed.append(file + ": " + rest[start.upperBound..<end].prefix(60))
                }
                rest = rest[end...]
            }
        }
        XCTAssertGreaterThan(configurations, 100, "the CLI's commands were read")
        XCTAssertEqual(unnamed, [], "give these commands a commandName")
    }

    func testManifestCheckValidDefault() throws {
        let result = try TestSupport.hubhost(["manifest", "check"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("plugins.yaml: valid (9 plugin instances)"), result.stdout)
        let report = try TestSupport.hubhost(["manifest", "check", "--json", "--resolved"]).json(as: [String: Any].self)
        XCTAssertEqual(report["valid"] as? Bool, true)
        let resolved = try XCTUnwrap(report["resolved"] as? [String: Any])
        let logging = try XCTUnwrap(resolved["logging"] as? [String: String])
        XCTAssertEqual(logging, ["severity": "warning", "verbosity": "debug"])
    }

    func testManifestCheckListsEveryProblemAndFails() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            plugins:
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config: {latitud: 1}
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
            """, to: folder + "/bad.yaml")
        let result = try TestSupport.hubhost(["manifest", "check", folder + "/bad.yaml"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stderr.contains("bad.yaml:4:14: plugins[0].config.latitud: unknown config key 'latitud' (did you mean 'latitude'?)"), result.stderr
        )
        XCTAssertTrue(result.stderr.contains("bad.yaml:5:9: plugins[1].id: duplicate instance id 'geo'"), result.stderr)
        XCTAssertTrue(result.stderr.contains("2 problems"), result.stderr)

        let report = try TestSupport.hubhost(["manifest", "check", "--json", folder + "/bad.yaml"]).json(as: [String: Any].self)
        XCTAssertEqual(report["valid"] as? Bool, false)
        XCTAssertEqual((report["diagnostics"] as? [[String: Any]])?.compactMap { $0["line"] as? Int }, [4, 5])
    }

    func testManifestCheckOfAMissingFileExits2() throws {
        let result = try TestSupport.hubhost(["manifest", "check", "/nonexistent/plugins.yaml"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("/nonexistent/plugins.yaml:1:1: no such file"), result.stderr)
    }

    func testPluginsListJSON() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try FileManager.default.copyItem(atPath: TestSupport.repository + "/plugins.yaml", toPath: folder + "/plugins.yaml")
        try FileManager.default.createSymbolicLink(atPath: folder + "/Plugins", withDestinationPath: TestSupport.repository + "/Plugins")
        let result = try TestSupport.hubhost(["plugins", "list", "--json"], in: folder)
        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = try result.json(as: [[String: Any]].self)
        XCTAssertEqual(
            rows.compactMap { $0["id"] as? String },
            [
                "console", "logfile", "advertiser", "location", "operators", "extra-operators",
                "content", "location-augmentation", "weather"
            ])
        XCTAssertEqual(
            rows.compactMap { $0["loaded"] as? Bool }, [true, true, true, true, true, true, false, true, false],
            "content and weather are disabled in the default manifest")
        XCTAssertEqual(rows.compactMap { $0["state"] as? String }.last, "disabled", "the weather is disabled in the default manifest")
        XCTAssertEqual(
            rows.compactMap { $0["abi"] as? String }.prefix(5), Array(repeating: ABIVersion.host.description, count: 5)[...],
            "the bundled plugins are built with this host's headers")
        XCTAssertTrue(rows.allSatisfy { ($0["library"] as? String)?.hasSuffix(".so") ?? false })
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/.hubhost"), "the data directory is created on first use")
    }

    func testPluginsInspectManifestAndBinary() throws {
        let result = try TestSupport.hubhost(["plugins", "inspect", "Plugins/ConsoleLogger/plugin.yaml"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("manifest and binary agree"), result.stdout)
        let library = TestSupport.buildFolder + "/libhubhost-fixed-location.so"
        let report = try TestSupport.hubhost(["plugins", "inspect", "--json", library]).json(as: [String: Any].self)
        let binary = try XCTUnwrap(report["binary"] as? [String: Any])
        XCTAssertEqual(binary["abi"] as? String, ABIVersion.host.description)
        XCTAssertEqual((binary["plugins"] as? [[String: Any]])?.first?["kind"] as? String, "location")
    }

    func testPluginsInspectReadsTheManifestOfABrokenBinary() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(TestSupport.fixtureManifest(library: "libbroken.so"), to: folder + "/plugin.yaml")
        try TestSupport.write("not an ELF file", to: folder + "/libbroken.so")
        let result = try TestSupport.hubhost(["plugins", "inspect", folder + "/plugin.yaml"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("id:           fault-fixture"), result.stdout)
        XCTAssertTrue(result.stderr.contains("binary not loaded: \(folder)/libbroken.so is not a loadable shared object"), result.stderr)
    }

    func testAdvertiserIDCommand() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            plugins:
              - id: ads
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                config: {advertiser_id_env: HUBHOST_TEST_ADVERTISER_ID, limit_ad_tracking_env: HUBHOST_TEST_LIMIT}
            """, to: folder + "/plugins.yaml")
        let id = try TestSupport.hubhost(
            ["advertiser-id", "--json"], in: folder, environment: ["HUBHOST_TEST_ADVERTISER_ID": "38400000-8cf0-11bd-b23e-10b96e40000d"])
        let decision = try id.json(as: [String: Any].self)
        XCTAssertEqual(decision["advertiserID"] as? String, "38400000-8cf0-11bd-b23e-10b96e40000d")
        let limited = try TestSupport.hubhost(
            ["advertiser-id"], in: folder, environment: ["HUBHOST_TEST_ADVERTISER_ID": "x", "HUBHOST_TEST_LIMIT": "1"])
        XCTAssertTrue(limited.stdout.hasPrefix("none: limit ad tracking is on: no advertiser ID is used"), limited.stdout)
        let bad = try TestSupport.hubhost(["advertiser-id"], in: folder, environment: ["HUBHOST_TEST_LIMIT": "perhaps"])
        // A flag that is not a boolean fails the delegate's create, so no delegate is loaded.
        XCTAssertTrue(bad.stdout.hasPrefix("none: no advertiser_id delegate is loaded"), bad.stdout)
    }

    func testStatusReportsTheRuntime() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try FileManager.default.copyItem(atPath: TestSupport.repository + "/plugins.yaml", toPath: folder + "/plugins.yaml")
        try FileManager.default.createSymbolicLink(atPath: folder + "/Plugins", withDestinationPath: TestSupport.repository + "/Plugins")
        let result = try TestSupport.hubhost([], in: folder)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("location:       47.6097, -122.3422; Pike Place Market"), result.stdout)
        let report = try TestSupport.hubhost(["status", "--json"], in: folder).json(as: [String: Any].self)
        XCTAssertEqual((report["plugins"] as? [[String: Any]])?.count, 9)
    }

    /// `hubhost bench ARGUMENTS --json`'s figures, once it exited 0 and each of `measured` is above 0.
    private func benchFigures(_ arguments: [String], measured: [String]) throws -> [String: Any] {
        let result = try TestSupport.hubhost(["bench"] + arguments + ["--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let figures = try result.json(as: [String: Any].self)
        for key in measured { XCTAssertGreaterThan(figures[key] as? Double ?? 0, 0, "\(key): \(figures)") }
        return figures
    }

    func testBenchABIPrintsBothFigures() throws {
        let figures = try benchFigures(["abi", "--iterations", "20000", "--rounds", "2"], measured: ["abiNsPerCall", "swiftNsPerCall"])
        XCTAssertEqual(figures["iterations"] as? Int, 20000)
    }

    func testBenchIsolationPrintsBothFigures() throws {
        let figures = try benchFigures(
            ["isolation", "--iterations", "2000", "--rounds", "1"], measured: ["inProcessNsPerCall", "isolatedNsPerCall"])
        XCTAssertEqual(figures["iterations"] as? Int, 2000)
    }

    func testBenchEventsPrintsThePipelineBesideTheBaseline() throws {
        let figures = try benchFigures(
            ["events", "--count", "500", "--batch-size", "100"], measured: ["eventsPerSecond", "baselineRowsPerSecond"])
        XCTAssertGreaterThanOrEqual(figures["p99Ms"] as? Double ?? -1, figures["p50Ms"] as? Double ?? 0)
    }

    func testBenchCampaignsAgreesWithTheNaiveEvaluation() throws {
        let figures = try benchFigures(["campaigns", "--campaigns", "200", "--events", "2000"], measured: ["engineEventsPerSecond"])
        XCTAssertEqual(figures["engineMatches"] as? Int, figures["naiveMatches"] as? Int, "both evaluations find the same matches")
        XCTAssertGreaterThan(figures["engineMatches"] as? Int ?? 0, 0)
        // Measured as deployed: caps set, half the campaigns bucketed, some outside their rollout.
        XCTAssertEqual(figures["frequencyCaps"] as? Bool, true)
        XCTAssertEqual(figures["buckets"] as? Bool, true)
        XCTAssertEqual(figures["bucketedCampaigns"] as? Int, 100)
        XCTAssertEqual(figures["rounds"] as? Int, 5)
        let queued = try XCTUnwrap(figures["queued"] as? Int)
        XCTAssertTrue((1..<200).contains(queued), "campaigns outside their rollout are not queued: \(queued)")

        let plainFigures = try benchFigures(
            ["campaigns", "--campaigns", "200", "--events", "2000", "--rounds", "1", "--without-caps-and-buckets"], measured: [])
        XCTAssertEqual(plainFigures["frequencyCaps"] as? Bool, false)
        XCTAssertEqual(plainFigures["buckets"] as? Bool, false)
        XCTAssertEqual(plainFigures["engineMatches"] as? Int, figures["engineMatches"] as? Int, "the same matches either way")
    }
}
