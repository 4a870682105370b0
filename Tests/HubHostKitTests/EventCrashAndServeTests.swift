import Foundation
import XCTest

@testable import HubHostKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The pipeline as separate processes: a tracker killed with SIGKILL, and `hubhost serve`.
final class EventCrashAndServeTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {cache_size: 1000}
            plugins:
              - id: noop
                use: \(TestSupport.plugin("Noop"))
            """, to: folder + "/plugins.yaml")
    }

    func testEveryAcknowledgedEventSurvivesKillDashNineExactlyOnce() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.hubhostExecutable)
        process.arguments = [
            "track", "named_event", "LOOP", "--int", "n=1", "--repeat", "100000", "--no-flush", "--manifest", folder + "/plugins.yaml"
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Read acknowledged ids until enough have come (bounded in time), then SIGKILL mid-loop.
        var acknowledged = Data()
        let start = Date()
        while Date().timeIntervalSince(start) < 60 {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            acknowledged.append(chunk)
            if acknowledged.split(separator: UInt8(ascii: "\n")).count >= 300 { break }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        acknowledged.append(out.fileHandleForReading.readDataToEndOfFile())  // lines written before the kill
        let ids = String(decoding: acknowledged, as: UTF8.self).split(separator: "\n").map(String.init).filter { $0.count == 36 }
        XCTAssertGreaterThanOrEqual(ids.count, 300)

        let store = try EventStore.open(path: folder + "/data/events.sqlite").store
        let stored = try store.list(limit: 1_000_000)
        var seen: [String: Int] = [:]
        for event in stored { seen[event.event.id, default: 0] += 1 }
        for id in ids { XCTAssertEqual(seen[id], 1, "acknowledged event \(id) must be stored exactly once") }
        XCTAssertTrue(seen.values.allSatisfy { $0 == 1 })
        // Nothing was left half-augmented: a restarted engine has no HOLD events.
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        XCTAssertEqual(try host.events().store.stats()[.hold], 0)
    }

    func testServeAcceptsEventsAndFlushes() throws {
        let collector = try TestCollector()
        defer { collector.stop() }
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {cache_size: 1000, collector_url: "\(collector.url)", flush_interval: 1 hr}
            plugins: []
            """, to: folder + "/plugins.yaml")
        let server = try ServeProcess(manifest: folder + "/plugins.yaml")
        let process = server.process
        let base = server.base
        let http = server.http
        func call(_ method: String, _ path: String, _ body: String? = nil) throws -> (Int, Any) { try server.call(method, path, body) }
        XCTAssertEqual(try call("GET", "/v1/health").0, 200)
        let (status, created) = try call("POST", "/v1/events", #"[{"type":"app_start"},{"name":"TWO","attributes":{"n":2}}]"#)
        XCTAssertEqual(status, 201)
        XCTAssertEqual((created as? [[String: Any]])?.compactMap { $0["status"] as? String }, ["NOT_POSTED", "NOT_POSTED"])
        let (badStatus, bad) = try call("POST", "/v1/events", #"{"type":"app_strat"}"#)
        XCTAssertEqual(badStatus, 400)
        let badError = (bad as? [String: Any])?["error"] as? [String: String]
        XCTAssertEqual(badError?["code"], "bad_request", "\(bad)")
        XCTAssertTrue((badError?["message"] ?? "").contains("did you mean 'app_start'?"), "\(bad)")
        let (_, report) = try call("POST", "/v1/events/flush")
        XCTAssertEqual((report as? [String: Any])?["posted"] as? Int, 3, "two events and the session start")
        XCTAssertEqual(collector.acceptedKeys.count, 3)
        let (_, stats) = try call("GET", "/v1/events/stats")
        XCTAssertEqual((stats as? [String: Int])?["SUCCESSFULLY_POSTED"], 3)
        let (_, opened) = try call("POST", "/v1/open-url", #"{"url":"app://x?CurrentCampaign=fall"}"#)
        XCTAssertEqual(((opened as? [String: Any])?["attributes"] as? [String: Any])?["Campaign Name"] as? String, "fall")
        // Messages: none ready yet (no campaigns), and closing is accepted.
        let none = try http.fetch("GET", base + "/v1/messages/next?context=home", timeoutSeconds: 10).get()
        XCTAssertEqual(none.status, 204)
        XCTAssertEqual(try call("POST", "/v1/messages/close", #"{"clear_queued_campaigns": true}"#).0, 200)
        XCTAssertEqual(try call("POST", "/v1/messages/nope/impression").0, 404)
        // SIGTERM: a last flush, then a clean exit.
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(collector.acceptedKeys.count, 4, "the open-url event was posted at shutdown")
    }
}
