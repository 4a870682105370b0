import Foundation
import XCTest

@testable import HubHostKit

/// The configuration reference is generated from the schemas the parser checks: docs/configuration.md
/// must be exactly what `hubhost config reference --markdown` prints, every key the parser accepts
/// must be in it, and every range and list of values it documents must be what the parser enforces.
final class ConfigReferenceTests: XCTestCase {
    func testDocsConfigurationIsWhatTheGeneratorPrints() throws {
        let printed = try TestSupport.run(TestSupport.hubhostExecutable, ["config", "reference", "--markdown"])
        XCTAssertEqual(printed.status, 0, printed.stderr)
        XCTAssertEqual(printed.stdout, ConfigReference.markdown())
        let file = try DocumentationText.text(of: "docs/configuration.md")
        XCTAssertTrue(
            file == printed.stdout,
            "docs/configuration.md differs from the generator: run `.build/debug/hubhost config reference --markdown > docs/configuration.md`")
        let json = try TestSupport.run(TestSupport.hubhostExecutable, ["config", "reference", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let sections = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(sections.compactMap { $0["name"] as? String }, ConfigReference.sections.map(\.name))
        let both = try TestSupport.run(TestSupport.hubhostExecutable, ["config", "reference", "--markdown", "--json"])
        XCTAssertEqual(both.status, 64, "two output forms at once are refused as a usage error")
    }

    func testEveryKeyThePlugInsYAMLParserAcceptsIsDocumented() {
        let documented = Set(ConfigReference.sections.flatMap { $0.entries.map(\.key) })
        let sectionNames = ConfigReference.sections.map(\.name)
        XCTAssertEqual(Set(sectionNames), Set(HostManifest.topKeys), "one reference section per top-level key")
        for key in HostManifest.loggingKeys { XCTAssertTrue(documented.contains("logging.\(key)"), key) }
        for key in HostManifest.instanceKeys { XCTAssertTrue(documented.contains("plugins[].\(key)"), key) }
        for type in HostManifest.sectionTypes {
            for key in type.schema.keys { XCTAssertTrue(documented.contains("\(type.sectionName).\(key.key)"), "\(type.sectionName).\(key.key)") }
            XCTAssertFalse(type.summary.isEmpty, type.sectionName)
        }
        for key in HubSettings.listKeys { XCTAssertTrue(documented.contains("hub.\(key)"), key) }
        for entry in ConfigReference.sections.flatMap(\.entries) { XCTAssertFalse(entry.doc.isEmpty, "\(entry.key) has no meaning written") }
    }

    /// Each documented range and list of values, tried from plugins.yaml just outside and at its
    /// edges: outside is reported at the key and leaves the default in effect; the edges load.
    func testEveryDocumentedRangeIsWhatTheParserEnforces() throws {
        let folder = try TestSupport.temporaryFolder(self)
        var tried = 0
        for type in HostManifest.sectionTypes {
            for key in type.schema.keys {
                var refused: [String] = []
                var accepted: [String] = []
                if let range = key.range {
                    if let low = range.minimum {
                        refused.append(number(range.excludesMinimum ? low : low - (key.type == .int ? 1 : 0.5), key.type))
                        if !range.excludesMinimum { accepted.append(number(low, key.type)) }
                    }
                    if let high = range.maximum {
                        refused.append(number(high + (key.type == .int ? 1 : high / 2), key.type))
                        accepted.append(number(high, key.type))
                    }
                }
                if let values = key.allowedValues {
                    refused.append("\"no-such-value\"")
                    accepted += values.map { "\"\($0)\"" }
                }
                let path = "\(type.sectionName).\(key.key)"
                for value in refused {
                    tried += 1
                    let manifest = try load("\(type.sectionName):\n  \(key.key): \(value)\n", in: folder)
                    let diagnostic = manifest.diagnostics.first { $0.key == path }
                    XCTAssertNotNil(diagnostic, "\(path): \(value) was not refused: \(manifest.diagnostics)")
                    let effective = manifest.effectiveSettings[type.sectionName]?.first { $0.key == path }
                    XCTAssertNil(effective?.line, "\(path): the refused \(value) is not in effect")
                }
                for value in accepted {
                    tried += 1
                    let manifest = try load("\(type.sectionName):\n  \(key.key): \(value)\n", in: folder)
                    XCTAssertEqual(manifest.diagnostics.filter { $0.key == path }, [], "\(path): \(value) is documented as accepted")
                }
            }
        }
        XCTAssertGreaterThan(tried, 40)
    }

    func testARangeReadsAsTheReferenceWritesIt() {
        XCTAssertEqual(ConfigRange.between(1, 64).text, "between 1 and 64")
        XCTAssertEqual(ConfigRange.atLeast(0.1).text, "at least 0.1")
        XCTAssertEqual(ConfigRange.positive().text, "more than 0")
        XCTAssertFalse(ConfigRange.positive().contains(0))
        XCTAssertFalse(ConfigRange.between(0, 1).contains(.nan))
        XCTAssertFalse(ConfigRange.atLeast(0).contains(.infinity))
        let key = ConfigKey(key: "count", type: .int, defaultValue: .int(4), range: .between(1, 64))
        XCTAssertEqual(key.refusal(of: .int(65)), "must be between 1 and 64, not 65")
        XCTAssertNil(key.refusal(of: .int(64)))
        // The Swift API's resolve refuses as plugins.yaml does.
        XCTAssertThrowsError(try ConfigSchema(keys: [key]).resolve(values: ["count": .int(0)])) { error in
            XCTAssertTrue("\(error)".contains("'count' must be between 1 and 64, not 0"), "\(error)")
        }
    }

    private func number(_ value: Double, _ type: ConfigType) -> String {
        type == .int ? String(Int64(value)) : String(value)
    }

    private func load(_ yaml: String, in folder: String) throws -> HostManifest {
        try TestSupport.write(yaml, to: folder + "/plugins.yaml")
        return try HostManifest.load(path: folder + "/plugins.yaml")
    }
}
