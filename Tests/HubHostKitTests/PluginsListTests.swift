import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost plugins list` shows what the running serve runs (its worker's pid, its reloads), and
/// says so; with no serve it loads plugins.yaml itself and says that instead.
final class PluginsListTests: XCTestCase {
    func testPluginsListShowsTheRunningServesWorkersAndSaysWhereItsAnswerComesFrom() async throws {
        let folder = try TestSupport.temporaryFolder(self)
        try StatusCommandTests.writeManifest(folder, extra: "  - id: off\n    use: extra-operators\n    enabled: false")
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml") { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let (_, served) = try server.call("GET", "/v1/plugins")
                let instances = try XCTUnwrap((served as? [String: Any])?["instances"] as? [[String: Any]])
                let serveWorker = try XCTUnwrap(instances.first?["worker"] as? String)
                XCTAssertTrue(serveWorker.hasPrefix("running (pid "), serveWorker)
                XCTAssertEqual(instances.first?["abi"] as? String, ABIVersion.host.description)

                let list = try TestSupport.hubhost(["plugins", "list", "--json", "--manifest", folder + "/plugins.yaml", "--url", server.base])
                XCTAssertEqual(list.status, 0, list.stderr)
                let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
                XCTAssertEqual(rows.first?["worker"] as? String, serveWorker, "serve's worker, not one this command started")
                XCTAssertEqual(rows.map { $0["state"] as? String }, ["loaded", "disabled"])
                XCTAssertEqual(rows.first?["version"] as? String, "1.0.0")

                let text = try TestSupport.hubhost(["plugins", "list", "--manifest", folder + "/plugins.yaml", "--url", server.base])
                XCTAssertTrue(text.stdout.hasPrefix("instances of the hubhost serve at \(server.base):\n"), text.stdout)
                XCTAssertTrue(text.stdout.contains("process: \(serveWorker)"), text.stdout)

                // A serve of another plugins.yaml at that address is not asked for this one's instances.
                try FileManager.default.copyItem(atPath: folder + "/plugins.yaml", toPath: folder + "/other.yaml")
                let other = try TestSupport.hubhost(["plugins", "list", "--manifest", folder + "/other.yaml", "--url", server.base])
                XCTAssertTrue(other.stderr.contains("runs \(folder)/plugins.yaml, not \(folder)/other.yaml"), other.stderr)
                XCTAssertFalse(other.stdout.contains("process: \(serveWorker)"), other.stdout)

                let local = try TestSupport.hubhost(["plugins", "list", "--manifest", folder + "/plugins.yaml", "--local"])
                XCTAssertTrue(local.stdout.contains("workers shown are this command's own"), local.stdout)
                XCTAssertFalse(local.stdout.contains("process: \(serveWorker)"), local.stdout)
            }
        }
    }
}
