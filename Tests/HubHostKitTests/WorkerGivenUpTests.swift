import Foundation
import XCTest

@testable import HubHostKit

/// An isolated instance whose worker crashes until it is given up reads `failed`, with why, on
/// every surface (the registry, `GET /v1/plugins`, `GET /v1/health`, which turns "degraded"
/// naming it), its plugins are no longer called, and a reload starts it again.
final class WorkerGivenUpTests: XCTestCase {
    func testAGivenUpWorkerIsFailedEverywhereAndHealthIsDegradedUntilAReloadStartsItAgain() async throws {
        let folder = try TestSupport.temporaryFolder(self)
        let fixture = try TestSupport.faultyFixture("SEGFAULT", in: folder)
        let manifest = """
            data_dir: data
            plugins:
              - id: faulty
                use: \(fixture)
                isolation: process
                call_timeout: 2s
            """
        try await InProcessAPI.test(manifest: manifest, in: folder) { client, host in
            let healthy = try await client.send(.get, "/v1/health")
            XCTAssertEqual(healthy.text, #"{"status":"ok"}"#)
            let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
            let plugin = AugmentationPlugin(try XCTUnwrap(host.registry.plugins(of: .augmentation).first))
            let event = AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1)
            for _ in 0..<200 {  // 5 crashes with their backoffs (100 ms doubling): about 2 s
                if case .gaveUp = worker.currentState { break }
                _ = plugin.augment(event)
                usleep(50_000)
            }
            guard case .gaveUp = worker.currentState else { return XCTFail(worker.stateDescription) }
            let entry = try XCTUnwrap(host.registry.entry(id: "faulty"))
            XCTAssertEqual(entry.loadState, .loaded)
            guard case .failed(.workerGivenUp(let instance, let crashes, _)) = entry.state else { return XCTFail("\(entry.state)") }
            XCTAssertEqual(instance, "faulty")
            XCTAssertEqual(crashes, 5)
            XCTAssertTrue(host.registry.plugins(of: .augmentation).isEmpty, "a given-up instance is not called")

            let plugins = try await client.send(.get, "/v1/plugins")
            let listed = try XCTUnwrap(
                (try JSONSerialization.jsonObject(with: Data(plugins.text.utf8)) as? [String: Any])?["instances"] as? [[String: Any]])
            XCTAssertEqual(listed.first?["state"] as? String, "failed")
            XCTAssertTrue((listed.first?["reason"] as? String)?.contains("its worker was given up after 5 crashes") == true, plugins.text)

            let degraded = try await client.send(.get, "/v1/health")
            let health = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(degraded.text.utf8)) as? [String: Any])
            XCTAssertEqual(health["status"] as? String, "degraded")
            let failed = try XCTUnwrap(health["failed"] as? [[String: Any]], degraded.text)
            XCTAssertEqual(failed.first?["instance"] as? String, "faulty")

            // A reload counts it as changed and starts a new worker.
            let report = host.reload()
            XCTAssertEqual(report.changed, ["faulty"], "\(report)")
            XCTAssertEqual(host.registry.entry(id: "faulty")?.state, .loaded)
            let again = try await client.send(.get, "/v1/health")
            XCTAssertEqual(again.text, #"{"status":"ok"}"#)
        }
    }
}
