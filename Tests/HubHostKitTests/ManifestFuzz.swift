import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// (a) plugins.yaml and plugin.yaml, through HostManifest.load and PluginManifest.load: a manifest
/// or diagnostics, never a trap.
final class ManifestFuzz: FuzzTarget {
    let hostSeeds: [[UInt8]]
    let pluginSeeds: [[UInt8]]
    static let dictionary = [
        ": ", ":", "- ", "-", "{", "}", "[", "]", ", ", "\"", "'", "#", "&a ", "*a", "<<: *a", "!!binary ", "!!int ", "!!float ", "!!map ",
        "!!str ", "!!null ", "? ", "|", ">", "%YAML 1.2\n", "---\n", "...\n", "\t", "\n", "\n  ", "~", "null", "true", "no", "0x1F", "0o17",
        "1e300", "-1e300", ".inf", "-.inf", ".nan", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "18446744073709551616", "1_000", "0.0000001", "-0", "1e-400", "1 week 3 days", "200000 weeks", "inf", "nan", "1e300 sec",
        "99999999999999999999 ms", "\u{FEFF}", "\u{0}", "é", "\\u0000", "plugins:", "data_dir:", "events:", "server:", "hub:", "campaigns:",
        "deep_links:", "routes:", "config:", "use:", "id:", "exports:", "kind:", "type:", "default:", "isolation: process",
        "[[[[[[[[[[[[[[[[[[[[", "{a: {a: {a: {a: {a: {a: {a:", "port: 70000", "port: -1", "cache_size: -5", "memory_limit: 1e300",
        "regex: \"(\"", "abi: \"99.0\"", "library: /dev/null", "use: /", "use: ..", "enabled: maybe"
    ]

    override init(name: String, work: String) throws {
        hostSeeds = try Self.seeds("manifests", ending: ".yaml") { $0 != "plugin.yaml" }
        pluginSeeds = try Self.seeds("manifests", ending: ".yaml") { $0 == "plugin.yaml" }
        try super.init(name: name, work: work)
        // The seeds themselves are valid: the mutations start from real manifests.
        for (i, seed) in hostSeeds.enumerated() {
            XCTAssertTrue(FileManager.default.createFile(atPath: work + "/seed\(i).yaml", contents: Data(seed)))
            let manifest = try HostManifest.load(path: work + "/seed\(i).yaml")
            precondition(manifest.isValid, "fuzz seed \(i) is not a valid manifest: \(manifest.diagnostics)")
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: work + "/seed-plugin.yaml", contents: Data(pluginSeeds[0])))
        precondition(PluginManifest.load(path: work + "/seed-plugin.yaml").diagnostics.isEmpty, "the plugin.yaml seed is valid")
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        let plugin = index % 5 == 4
        let seeds = plugin ? pluginSeeds : hostSeeds
        var bytes = Mutator.mutate(random.pick(seeds), &random, dictionary: Self.dictionary, others: hostSeeds + pluginSeeds, most: 6)
        if random.chance(3) {
            // Deep nesting, in flow and block style.
            let depth = random.pick([100, 1000, 5000])
            bytes += Array(
                (random.chance(50)
                    ? "\nx: " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                    : "\n" + (0..<min(depth, 1000)).map { String(repeating: " ", count: $0) + "k\($0):" }.joined(separator: "\n")).utf8)
        }
        return Data((plugin ? "P" : "H").utf8) + Data(bytes)
    }

    override func check(_ input: Data, index: Int) -> String? {
        let plugin = input.first == UInt8(ascii: "P")
        let path = work + (plugin ? "/plugin.yaml" : "/plugins.yaml")
        FuzzTarget.write(input.dropFirst(), to: path)
        if plugin {
            let (manifest, diagnostics) = PluginManifest.load(path: path)
            if manifest == nil && diagnostics.isEmpty { return "PluginManifest.load returned neither a manifest nor a diagnostic" }
            return nil
        }
        do {
            let manifest = try HostManifest.load(path: path)
            _ = ResolvedManifest(manifest)
            for diagnostic in manifest.diagnostics where diagnostic.line < 0 || diagnostic.message.isEmpty {
                return "a diagnostic without a place or message: \(diagnostic)"
            }
        } catch let error as ManifestError {
            if error.diagnostics.isEmpty { return "ManifestError without diagnostics" }
        } catch {
            return "HostManifest.load threw \(type(of: error)), not ManifestError: \(error)"
        }
        return nil
    }
}
