import Foundation
import XCTest

@testable import HubHostKit

/// The settings a reload applies live are a list of their own (`HubHost.liveReloadKeys`): each must
/// be a key plugins.yaml accepts (the configuration reference, read from the parsers' schemas), and
/// docs/reload.md must name each, so that neither list drifts from the code.
final class ReloadKeysTests: XCTestCase {
    func testEveryLiveReloadKeyIsAPluginsYAMLKeyAndDocsReloadNamesIt() throws {
        let keys = Set(ConfigReference.sections.flatMap { $0.entries.map(\.key) })
        let reload = try String(contentsOfFile: TestSupport.repository + "/docs/reload.md", encoding: .utf8)
        // `trust` is a section of its own (a list of keys), not a setting of the reference.
        for key in HubHost.liveReloadKeys.sorted() where key != "trust" {
            XCTAssertTrue(keys.contains(key), "\(key) is not a key of plugins.yaml (docs/configuration.md)")
            // The table names a key in full, or by its last part in a row that names its section.
            let leaf = String(key.split(separator: ".").last ?? "")
            let section = String(key.split(separator: ".").first ?? "")
            let named =
                reload.contains("`\(key)`")
                || reload.split(separator: "\n").contains { $0.contains("`\(leaf)`") && $0.contains("`\(section).") }
            XCTAssertTrue(named, "docs/reload.md does not name the live key \(key)")
        }
        XCTAssertTrue(reload.contains("`trust:`"), "docs/reload.md names trust:")
    }
}
