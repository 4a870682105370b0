import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost status` shows what the running serve runs (its pid, its workers, the generation of its
/// reloads), and says so; with no serve it loads plugins.yaml itself and says that instead.
final class StatusCommandTests: XCTestCase {
    /// A plugins.yaml with one process-isolated operators instance, then the `extra` instances.
    static func writeManifest(_ folder: String, extra: String = "") throws {
        try TestSupport.write(
            """
            data_dir: data
            server: {host: 127.0.0.1, port: 0}
            plugins:
              - id: operators
                use: standard-operators
                isolation: process
            \(extra)
            """, to: folder + "/plugins.yaml")
    }

    func testStatusShowsTheRunningServesPidWorkerAndGenerationAfterAReload() async throws {
        let folder = try TestSupport.temporaryFolder(self)
        try Self.writeManifest(folder)
        // serve in this process: its pid is this process's.
        let pid = ProcessInfo.processInfo.processIdentifier
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml") { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let (_, served) = try server.call("GET", "/v1/plugins")
                let serveWorker = try XCTUnwrap(((served as? [String: Any])?["instances"] as? [[String: Any]])?.first?["worker"] as? String)

                // A reload that adds an instance: serve's generation becomes 1, a fresh host's would be 0.
                try Self.writeManifest(folder, extra: "  - id: extra\n    use: noop")
                let (reloaded, _) = try server.call("POST", "/v1/admin/reload")
                XCTAssertEqual(reloaded, 200)

                let manifest = ["--manifest", folder + "/plugins.yaml", "--url", server.base]
                let status = try TestSupport.hubhost(["status", "--json"] + manifest)
                XCTAssertEqual(status.status, 0, status.stderr)
                let report = try status.json(as: [String: Any].self)
                XCTAssertEqual(report["source"] as? String, "serve")
                XCTAssertEqual(report["server"] as? String, server.base)
                XCTAssertEqual(report["pid"] as? Int, Int(pid), "serve's pid, not this command's")
                XCTAssertEqual(report["generation"] as? Int, 1)
                XCTAssertEqual((report["health"] as? [String: Any])?["status"] as? String, "ok")
                XCTAssertEqual(report["manifest"] as? String, folder + "/plugins.yaml")
                let rows = try XCTUnwrap(report["plugins"] as? [[String: Any]])
                XCTAssertEqual(rows.map { $0["id"] as? String }, ["operators", "extra"])
                XCTAssertEqual(rows.first?["worker"] as? String, serveWorker, "serve's worker, not one this command started")
                XCTAssertEqual(rows.last?["generation"] as? Int, 1)

                let text = try TestSupport.hubhost(["status"] + manifest)
                XCTAssertEqual(text.status, 0, text.stderr)
                XCTAssertTrue(
                    text.stdout.hasPrefix("the hubhost serve at \(server.base) (pid \(pid)):\n"), text.stdout)
                XCTAssertTrue(text.stdout.contains("generation:     1\n"), text.stdout)
                XCTAssertTrue(text.stdout.contains("health:         ok\n"), text.stdout)
                XCTAssertTrue(text.stdout.contains("process: \(serveWorker)"), text.stdout)
            }
        }
    }

    func testStatusWithoutServeSaysItLoadedTheManifestItself() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try Self.writeManifest(folder)
        let text = try TestSupport.hubhost(["status", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(
            text.stdout.hasPrefix(
                "no hubhost serve answers for this manifest: plugins.yaml loaded in this command; workers shown are this command's own\n"),
            text.stdout)
        let json = try TestSupport.hubhost(["status", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let report = try json.json(as: [String: Any].self)
        XCTAssertEqual(report["source"] as? String, "local")
        XCTAssertNil(report["server"])
        XCTAssertEqual(report["generation"] as? Int, 0)
        XCTAssertEqual((report["plugins"] as? [[String: Any]])?.first?["state"] as? String, "loaded")

        let local = try TestSupport.hubhost(["status", "--local", "--manifest", folder + "/plugins.yaml"])
        XCTAssertTrue(local.stdout.hasPrefix("plugins.yaml loaded in this command (--local)"), local.stdout)
    }
}
