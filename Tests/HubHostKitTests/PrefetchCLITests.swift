import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost prefetch ...` as a user runs it: the licence source status reports, sync, items with
/// filters, a download with --wait (percent lines when stderr is not a terminal), refusals with
/// exit status 1 and bad arguments with 64.
final class PrefetchCLITests: PrefetchTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        service.files["a.mp4"] = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        service.files["b.mp4"] = Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0) })
        service.pages[""] = """
            {"cursor": "c1", "sources": [{"name": "acme"}], "categories": [{"id": "news"}, {"id": "sport"}],
             "items": [{"unique_id": "a", "content_id": "1", "source": "acme", "categories": ["news"], "title": "Alpha",
                        "files": [{"role": "main", "url": "\(service.fileURL("a.mp4"))", "size": 300000}]},
                       {"unique_id": "b", "content_id": "2", "source": "acme", "categories": ["sport"], "title": "Beta",
                        "files": [{"role": "main", "url": "\(service.fileURL("b.mp4"))", "size": 1000}]}]}
            """
    }

    private func write(license: String?) throws {
        try writeManifest(prefetchManifest(", item_download_behavior: none\(license.map { ", license: \($0)" } ?? "")"))
    }

    /// `hubhost prefetch ARGS --manifest plugins.yaml`, with no licence from the environment
    /// unless `environment` gives one.
    private func prefetch(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        try TestSupport.hubhost(
            ["prefetch"] + arguments, manifest: manifestPath,
            environment: environment.merging([PrefetchLicense.environmentVariable: ""]) { given, _ in given })
    }

    func testStatusSaysWhichLicenceSourceWon() throws {
        let file = folder + "/licence.json"
        try TestSupport.write(#"{"license": "good-licence"}"#, to: file)
        try write(license: nil)
        var result = try prefetch(["status", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual((try result.json as? [String: Any])?["licenseSource"] as? String, "none")
        result = try prefetch(["status", "--json"], environment: [PrefetchLicense.environmentVariable: file])
        XCTAssertEqual((try result.json as? [String: Any])?["licenseSource"] as? String, "config_file")
        try write(license: "good-licence")
        result = try prefetch(["status"], environment: [PrefetchLicense.environmentVariable: file])
        XCTAssertTrue(result.stdout.contains("licence: manifest"), result.stdout)
        result = try prefetch(["status", "--json", "--license", "other"], environment: [PrefetchLicense.environmentVariable: file])
        XCTAssertEqual((try result.json as? [String: Any])?["licenseSource"] as? String, "option")
        // A refused licence: exit 1 with the service's reason.
        result = try prefetch(["register", "--license", "other"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("refused: unknown licence"), result.stderr)
    }

    func testSyncItemsDownloadWaitAndRefusals() throws {
        try write(license: "good-licence")
        var result = try prefetch(["sync", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual((try result.json as? [String: Any])?["discovered"] as? [String], ["a", "b"])
        result = try prefetch(["items", "--category", "sport", "--json"])
        XCTAssertEqual(((try result.json as? [[String: Any]]) ?? []).map { $0["uniqueId"] as? String }, ["b"])
        result = try prefetch(["items", "--sort", "title:desc"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertLessThan(try XCTUnwrap(result.stdout.range(of: "Beta")).lowerBound, try XCTUnwrap(result.stdout.range(of: "Alpha")).lowerBound)
        result = try prefetch(["items", "--state", "sleeping"])
        XCTAssertEqual(result.status, 64, result.stderr)
        XCTAssertTrue(result.stderr.contains("unknown state 'sleeping'"), result.stderr)

        result = try prefetch(["download", "a", "--wait"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("a 100%"), "percent lines when stderr is not a terminal: \(result.stderr)")
        XCTAssertTrue(result.stdout.contains("cached"), result.stdout)
        result = try prefetch(["item", "a", "--json"])
        XCTAssertEqual((try result.json as? [String: Any])?["state"] as? String, "cached")

        result = try prefetch(["download", "a", "--json"])
        XCTAssertEqual(result.status, 1, "a refused request exits 1")
        let answers = try result.json(as: [[String: Any]].self)
        XCTAssertEqual(answers.first?["reason"] as? String, "already cached")
        XCTAssertEqual(service.sent("a.mp4"), 300_000, "asked twice, downloaded once")

        // A partial download: only the first 400 bytes, then the rest by Range.
        result = try prefetch(["download", "b", "--partial-bytes", "0"])
        XCTAssertEqual(result.status, 64, result.stderr)
        result = try prefetch(["download", "b", "--partial-bytes", "10", "--partial-seconds", "2"])
        XCTAssertEqual(result.status, 64, result.stderr)
        result = try prefetch(["download", "b", "--partial-seconds", "2", "--json"])
        XCTAssertEqual(result.status, 1, "refused: the catalog gives no duration")
        XCTAssertTrue(((try result.json as? [[String: Any]])?.first?["reason"] as? String)?.contains("duration") ?? false, result.stdout)
        result = try prefetch(["download", "b", "--partial-bytes", "400", "--wait"])
        XCTAssertEqual(result.status, 0, result.stderr + result.stdout)
        XCTAssertTrue(result.stdout.contains("partially_cached"), result.stdout)
        XCTAssertEqual(service.sent("b.mp4"), 400)
        result = try prefetch(["download", "b", "--wait", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(((try result.json as? [[String: Any]])?.first?["state"] as? String), "cached")
        XCTAssertEqual(service.sent("b.mp4"), 1_000, "the resume fetched only the rest")
        XCTAssertEqual(service.requestRanges("b.mp4"), ["bytes=0-399", "bytes=400-"])

        result = try prefetch(["delete", "b"])
        XCTAssertEqual(result.status, 0, result.stderr)
        result = try prefetch(["items", "--state", "deleted", "--json"])
        XCTAssertEqual(((try result.json as? [[String: Any]]) ?? []).map { $0["uniqueId"] as? String }, ["b"])
        result = try prefetch(["policy", "--network", "both", "--json"])
        XCTAssertEqual((try result.json as? [String: Any])?["networkSelection"] as? String, "both")
    }

    func testStatusInAnotherProcessShowsTheLastFailureWithItsTimeAndItem() throws {
        try writeManifest(prefetchManifest(", license: good-licence, retry_delay: 0.05"))
        let host = try HubHost(manifestPath: manifestPath)
        addTeardownBlock { host.shutdown() }
        let engine = try XCTUnwrap(host.prefetch())
        try engine.register()
        // A sync failure in this process (as in a running serve): the catalog answers 404.
        let page = service.lock.withLock { service.pages.removeValue(forKey: "") }
        let before = Clock.wallMs()
        XCTAssertThrowsError(try engine.sync())
        var result = try prefetch(["status", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        var status = try XCTUnwrap(try result.json as? [String: Any])
        XCTAssertTrue((status["lastFailure"] as? String)?.contains("answered HTTP 404") ?? false, "\(status)")
        XCTAssertGreaterThanOrEqual((status["lastFailureMs"] as? NSNumber)?.int64Value ?? 0, before)
        XCTAssertNil(status["lastFailureItem"])

        // A successful sync clears it; a failed download is the last failure then, naming its item.
        service.lock.withLock {
            service.pages[""] = page
            service.steadyFaults["b.mp4"] = .status(500)
        }
        try engine.sync()
        XCTAssertNil(try engine.status().lastFailure)
        let deadline = Date().addingTimeInterval(20)
        while try engine.item("b")?.state != .failed && Date() < deadline {
            try engine.round()
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(try engine.item("b")?.state, .failed)
        result = try prefetch(["status", "--json"])
        status = try XCTUnwrap(try result.json as? [String: Any])
        XCTAssertEqual(status["lastFailure"] as? String, "the server answered HTTP 500", "\(status)")
        XCTAssertEqual(status["lastFailureItem"] as? String, "b")
        result = try prefetch(["status"])
        XCTAssertTrue(result.stdout.contains("last failure: the server answered HTTP 500 (item b"), result.stdout)
    }

    func testBenchPrefetchRunsSmallBesideAria2c() throws {
        let result = try TestSupport.hubhost(
            [
                "bench", "prefetch", "--files", "4", "--size", "100000", "--rounds", "1",
                "--catalog-items", "2000", "--query-runs", "3", "--listeners", "5",
                "--changes", "2", "--json"
            ],
            timeout: 300)
        XCTAssertEqual(result.status, 0, result.stderr)
        let report = try result.json(as: [String: Any].self)
        XCTAssertEqual(report["files"] as? Int, 4)
        for side in ["hubhost", "aria2c"] {
            let figures = try XCTUnwrap(report[side] as? [String: Any], side)
            XCTAssertGreaterThan(figures["mebibytesPerSecond"] as? Double ?? 0, 0, side)
            XCTAssertGreaterThan(figures["seconds"] as? Double ?? 0, 0, side)
        }
        XCTAssertGreaterThan(report["ratio"] as? Double ?? 0, 0)
        // The catalog figures: every query found the same rows through the engine and GRDB alone
        // (the bench fails otherwise), and every listener heard every change.
        let catalog = try XCTUnwrap(report["catalog"] as? [String: Any])
        XCTAssertEqual(catalog["items"] as? Int, 2000)
        let queries = try XCTUnwrap(catalog["queries"] as? [[String: Any]])
        XCTAssertEqual(queries.count, 5)
        XCTAssertEqual(queries.first?["rows"] as? Int, 20, "category c7 of 2000 items")
        for query in queries { XCTAssertGreaterThan(query["hubhostP50Ms"] as? Double ?? 0, 0, "\(query)") }
        XCTAssertEqual(catalog["setSize"] as? Int, 20)
        XCTAssertGreaterThan(catalog["listenerP50Ms"] as? Double ?? 0, 0)
        XCTAssertGreaterThanOrEqual(catalog["listenerP99Ms"] as? Double ?? 0, catalog["listenerP50Ms"] as? Double ?? 0)
    }
}
