import Foundation
import XCTest

@testable import HubHostKit

/// The prefetch engine as `hubhost serve` runs it (in this process, with the runtime's services):
/// the runtime's `prefetch` service registers, syncs and downloads by itself; the device
/// conditions come from the bundled fixed-device-conditions plugin (a file switched at run time)
/// and each file request passes the bundled download-request-header plugin.
final class PrefetchServeTests: PrefetchTestCase {
    func testServeDownloadsByPolicyWaitingOnCellularAndLowStorageWithReasons() async throws {
        let service = self.service!  // for the closure below, which does not capture the test case
        service.files["a.mp4"] = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        service.pages[""] = """
            {"cursor": "c1", "sources": [{"name": "acme"}], "categories": [{"id": "news"}],
             "items": [{"unique_id": "a", "content_id": "1", "source": "acme", "categories": ["news"], "title": "Alpha",
                        "files": [{"role": "main", "url": "\(service.fileURL("a.mp4"))", "size": 200000,
                                   "sha256": "\(SHA256.hex(of: service.files["a.mp4"]!))"}]}]}
            """
        let conditions = folder + "/conditions.txt"
        try TestSupport.write("network = cellular\nmetered = true\n", to: conditions)
        try writeManifest(
            prefetchManifest(
                ", license: good-licence, device_conditions: device, download_request: signer, storage_low: 1000000",
                sections: [("server", "{port: 0}")],
                plugins: [
                    .init(
                        id: "device", use: TestSupport.plugin("FixedDeviceConditions"),
                        ("config", ManifestText.flow(("network", "wifi"), ("free_bytes", "900000000000"), ("file", ManifestText.quoted(conditions))))),
                    .init(id: "signer", use: TestSupport.plugin("DownloadRequestHeader"), ("config", #"{headers: "X-Token: t1"}"#))
                ]))
        try await InProcessAPI.listening(manifestPath: manifestPath, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)

                /// The item as the server shows it; empty until the first sync found it (404).
                func item() throws -> [String: Any] {
                    let (status, body) = try server.call("GET", "/v1/prefetch/items/a")
                    return status == 200 ? body as? [String: Any] ?? [:] : [:]
                }
                func wait(_ what: String, _ done: ([String: Any]) -> Bool) throws {
                    let deadline = Date().addingTimeInterval(20)
                    while Date() < deadline {
                        if let body = try? item(), done(body) { return }
                        Thread.sleep(forTimeInterval: 0.1)
                    }
                    XCTFail("timed out waiting for \(what): \((try? item()) ?? [:])")
                }

                // On cellular under the server's wifi-only policy: discovered, waiting with the reason.
                try wait("network_not_allowed") { $0["waitReason"] as? String == "network_not_allowed" }
                XCTAssertEqual(try item()["state"] as? String, "discovered")
                let (_, status) = try server.call("GET", "/v1/prefetch/status")
                XCTAssertEqual((status as? [String: Any])?["downloadPolicyStatus"] as? String, "network_not_allowed")
                XCTAssertEqual((status as? [String: Any])?["serviceState"] as? String, "Initialized")

                // Wifi, but the disk is nearly full: still waiting, now for storage.
                try TestSupport.write("network = wifi\nfree_bytes = 5000\n", to: conditions + ".new")
                XCTAssertEqual(rename(conditions + ".new", conditions), 0)
                try wait("storage_low") { $0["waitReason"] as? String == "storage_low" }
                XCTAssertEqual(service.requestRanges("a.mp4").count, 0, "nothing downloaded while waiting")

                // Room again: the service downloads it by itself, through the header plugin, verified.
                try TestSupport.write("network = wifi\n", to: conditions + ".new")
                XCTAssertEqual(rename(conditions + ".new", conditions), 0)
                try wait("cached") { $0["state"] as? String == "cached" }
                XCTAssertEqual(service.lock.withLock { service.fileHeaders["a.mp4"]?.first?["x-token"] }, "t1")
                XCTAssertEqual(service.sent("a.mp4"), 200_000)
            }
        }
    }

    func testDownloadRouteTakesAPartialLengthThenCompletesByRange() async throws {
        let service = self.service!  // for the closure below, which does not capture the test case
        let data = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 17) })
        service.files["v.mp4"] = data
        service.pages[""] = """
            {"cursor": "c1", "sources": [{"name": "acme"}], "categories": [{"id": "news"}],
             "items": [{"unique_id": "v", "content_id": "1", "source": "acme", "categories": ["news"], "title": "Video",
                        "files": [{"role": "main", "url": "\(service.fileURL("v.mp4"))", "size": 100000, "duration": 50,
                                   "sha256": "\(SHA256.hex(of: data))"}]}]}
            """
        try writeManifest(prefetchManifest(", license: good-licence, item_download_behavior: none", sections: [("server", "{port: 0}")]))
        try await InProcessAPI.listening(manifestPath: manifestPath, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                func item() -> [String: Any] {
                    guard let (status, body) = try? server.call("GET", "/v1/prefetch/items/v"), status == 200 else { return [:] }
                    return body as? [String: Any] ?? [:]
                }
                func wait(_ what: String, _ done: ([String: Any]) -> Bool) {
                    let deadline = Date().addingTimeInterval(20)
                    while Date() < deadline {
                        if done(item()) { return }
                        Thread.sleep(forTimeInterval: 0.1)
                    }
                    XCTFail("timed out waiting for \(what): \(item())")
                }
                wait("discovered") { $0["state"] as? String == "discovered" }
                var (status, _) = try server.call("POST", "/v1/prefetch/download", #"{"ids": ["v"], "partial_bytes": 10, "partial_seconds": 1}"#)
                XCTAssertEqual(status, 400, "both lengths at once")
                (status, _) = try server.call("POST", "/v1/prefetch/download", #"{"ids": ["v"], "partial_seconds": -1}"#)
                XCTAssertEqual(status, 400)
                // 5 of 50 seconds of 100,000 bytes: 10,000 bytes.
                let (okStatus, answers) = try server.call("POST", "/v1/prefetch/download", #"{"ids": ["v"], "partial_seconds": 5}"#)
                XCTAssertEqual(okStatus, 200)
                XCTAssertEqual(((answers as? [String: Any])?["answers"] as? [[String: Any]])?.first?["accepted"] as? Bool, true)
                wait("partially cached") { $0["state"] as? String == "partially_cached" }
                XCTAssertEqual(service.sent("v.mp4"), 10_000)
                XCTAssertEqual(((item()["files"] as? [[String: Any]])?.first?["partialLength"] as? Int), 10_000)
                (status, _) = try server.call("POST", "/v1/prefetch/download", #"{"ids": ["v"]}"#)
                XCTAssertEqual(status, 200)
                wait("cached") { $0["state"] as? String == "cached" }
                XCTAssertEqual(service.sent("v.mp4"), 100_000, "the rest only")
                XCTAssertEqual(service.requestRanges("v.mp4"), ["bytes=0-9999", "bytes=10000-"])
            }
        }
    }
}
