import Foundation
import XCTest

@testable import HubHostKit

/// The prefetch engine when things go wrong: server errors, truncated and hanging answers, checksum
/// mismatches, kill -9 mid-download, a file that changes while it downloads, catalog answers over
/// the limits.
final class PrefetchFaultTests: PrefetchEngineTestCase {
    // MARK: faults

    func testServerErrorsRetryThreeTimesThenFailedWithFilesRemoved() throws {
        catalog(1)
        service.lock.withLock { service.steadyFaults["item0.mp4"] = .status(500) }
        let (_, engine) = try host()
        try engine.register()
        try engine.sync()
        try until(engine, "failed") { try state(engine, "item0") == .failed }
        let item = try XCTUnwrap(engine.item("item0"))
        XCTAssertEqual(item.downloadError, "the server answered HTTP 500")
        XCTAssertEqual(service.requestRanges("item0.mp4").count, 4, "one attempt and 3 retries")
        XCTAssertFalse(FileManager.default.fileExists(atPath: item.files[0].localPath + ".part"))
        // No automatic retry after Failed.
        for _ in 0..<5 {
            try engine.round()
            Thread.sleep(forTimeInterval: 0.06)
        }
        XCTAssertEqual(service.requestRanges("item0.mp4").count, 4)
        // An explicit download tries again.
        service.lock.withLock { service.steadyFaults["item0.mp4"] = nil }
        XCTAssertEqual(try engine.download(["item0"]).first?.accepted, true)
        try until(engine, "cached after failure") { try state(engine, "item0") == .cached }
    }

    func testTruncatedBodyResumesWithRangeAndFetchesOnlyTheRest() throws {
        let datas = catalog(1, size: 200_000)
        service.lock.withLock { service.faults["item0.mp4"] = [.truncate(80_000)] }
        let (_, engine) = try host()
        try engine.register()
        try engine.sync()
        try until(engine, "cached") { try state(engine, "item0") == .cached }
        let ranges = service.requestRanges("item0.mp4")
        XCTAssertEqual(ranges.count, 2)
        XCTAssertNil(ranges[0])
        // The resumed request starts at the bytes on disk (AsyncHTTPClient may drop the last
        // buffered chunks of a body cut short, so that is at most the 80,000 sent) and asks
        // only for the rest.
        let start = Int(ranges[1]?.dropFirst(6).split(separator: "-").first ?? "") ?? -1
        XCTAssertGreaterThan(start, 0, "resumed, not restarted: \(ranges)")
        XCTAssertLessThanOrEqual(start, 80_000)
        XCTAssertEqual(service.sent("item0.mp4"), 80_000 + 200_000 - start, "the second request fetched only what was not on disk")
        let item = try XCTUnwrap(engine.item("item0"))
        XCTAssertEqual(SHA256.hex(ofFile: item.files[0].localPath), SHA256.hex(of: datas["item0"]!))
    }

    func testHangingServerTimesOutRetriesThenFails() throws {
        catalog(1)
        service.lock.withLock { service.steadyFaults["item0.mp4"] = .hang }
        let (_, engine) = try host()
        try engine.register()
        try engine.sync()
        try until(engine, "failed") { try state(engine, "item0") == .failed }
        XCTAssertEqual(service.requestRanges("item0.mp4").count, 4)
        XCTAssertNotNil(try engine.item("item0")?.downloadError)
    }

    func testChecksumMismatchIsNeverCached() throws {
        catalog(1)
        service.lock.withLock { service.steadyFaults["item0.mp4"] = .wrongBytes }
        let (host, engine) = try host()
        let notes = record(host)
        try engine.register()
        try engine.sync()
        try until(engine, "failed") { try state(engine, "item0") == .failed }
        XCTAssertEqual(try engine.item("item0")?.downloadError, "sha256 mismatch: the file was discarded")
        let states = notes.lock.withLock { notes.items }.compactMap {
            $0.name == PrefetchNotificationName.itemStateChanged ? $0.payload["state"]?.plainText : nil
        }
        XCTAssertFalse(states.contains("cached"), "\(states)")
        XCTAssertFalse(notes.names.contains(PrefetchNotificationName.itemsDownloaded))
    }

    func testPauseKeepsBytesAndDownloadResumesByRange() throws {
        let datas = catalog(1, size: 800_000)
        service.lock.withLock { service.faults["item0.mp4"] = [.slow(chunk: 8_192, delayMs: 20)] }
        let (_, engine) = try host()
        try engine.register()
        try engine.sync()
        try until(engine, "some bytes") { (try engine.item("item0")?.bytesDownloaded ?? 0) > 50_000 }
        XCTAssertEqual(try engine.pause(["item0"]).first?.accepted, true)
        XCTAssertEqual(try state(engine, "item0"), .paused)
        let stopBy = Date().addingTimeInterval(10)
        while engine.isDownloadingHere("item0") && Date() < stopBy { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertFalse(engine.isDownloadingHere("item0"), "the paused download's task ended")
        // Paused is left only by an explicit download.
        for _ in 0..<5 {
            try engine.round()
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(try state(engine, "item0"), .paused)
        XCTAssertEqual(try engine.item("item0")?.waitReason, "paused_by_user")
        let kept = FileDownloader.partialLength(try XCTUnwrap(engine.item("item0")).files[0].localPath)
        XCTAssertGreaterThan(kept, 0)
        XCTAssertEqual(try engine.download(["item0"]).first?.accepted, true)
        try until(engine, "cached") { try state(engine, "item0") == .cached }
        let ranges = service.requestRanges("item0.mp4")
        XCTAssertEqual(ranges.count, 2)
        XCTAssertTrue(ranges[1]?.hasPrefix("bytes=") ?? false)
        XCTAssertEqual(ranges[1], "bytes=\(kept)-", "resumed from the bytes on disk")
        XCTAssertLessThan(service.sent("item0.mp4"), 800_000 + 200_000, "the resumed request did not fetch the whole file again")
        XCTAssertEqual(SHA256.hex(ofFile: try XCTUnwrap(engine.item("item0")).files[0].localPath), SHA256.hex(of: datas["item0"]!))
    }

    func testWifiOnlyPolicyOnCellularWaitsWithReasonThenResumesOnWifi() throws {
        catalog(1)
        let (_, engine) = try hostWithDevice("network = cellular\nmetered = true\n")
        try engine.register()
        try engine.sync()
        for _ in 0..<3 { try engine.round() }
        XCTAssertEqual(try state(engine, "item0"), .discovered)
        XCTAssertEqual(try engine.item("item0")?.waitReason, "network_not_allowed")
        XCTAssertEqual(try engine.status().downloadPolicyStatus, "network_not_allowed")
        XCTAssertFalse(try engine.status().downloadAllowed)
        // A user-initiated download waits too, with the reason.
        XCTAssertEqual(try engine.download(["item0"]).first?.accepted, true)
        try engine.round()
        XCTAssertEqual(try state(engine, "item0"), .queued)
        XCTAssertEqual(try engine.item("item0")?.waitReason, "network_not_allowed")
        XCTAssertEqual(service.requestRanges("item0.mp4").count, 0)
        try setDevice("network = wifi\n")
        try until(engine, "cached on wifi") { try state(engine, "item0") == .cached }
        // With cellular allowed by the override, cellular is fine.
        try engine.setNetworkSelectionOverride(.both)
        XCTAssertEqual(try engine.status().networkSelection, .both)
    }

    // MARK: kill -9

    func testKill9DuringDownloadThenRestartResumesByRange() throws {
        let size = 2_000_000
        let datas = catalog(1, size: size)
        service.lock.withLock { service.faults["item0.mp4"] = [.slow(chunk: 32_768, delayMs: 30)] }
        try writeManifest(manifest(", license: good-licence, item_download_behavior: none"))
        let sync = try TestSupport.hubhost(["prefetch", "sync", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(sync.status, 0, sync.stderr)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: TestSupport.hubhostExecutable)
        child.arguments = ["prefetch", "download", "item0", "--wait", "--manifest", folder + "/plugins.yaml"]
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        let part = folder + "/data/prefetch/items/item0/0-main.mp4.part"
        let deadline = Date().addingTimeInterval(20)
        while FileDownloader.partialLength(part.replacingOccurrences(of: ".part", with: "")) < 300_000 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        let onDisk = FileDownloader.partialLength(part.replacingOccurrences(of: ".part", with: ""))
        XCTAssertGreaterThan(onDisk, 0)
        XCTAssertLessThan(onDisk, Int64(size))

        // A new process finds the dead process's download and resumes it from the bytes on disk.
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none")
        XCTAssertEqual(try state(engine, "item0"), .downloading)
        try until(engine, "cached after restart") { try state(engine, "item0") == .cached }
        let ranges = service.requestRanges("item0.mp4")
        XCTAssertEqual(ranges.count, 2, "\(ranges)")
        let resumedFrom = Int(ranges[1]?.dropFirst(6).split(separator: "-").first ?? "") ?? -1
        XCTAssertEqual(Int64(resumedFrom), onDisk, "resumed from exactly the bytes on disk")
        XCTAssertLessThan(service.sent("item0.mp4"), 2 * size, "fewer bytes than the whole file were fetched again")
        let item = try XCTUnwrap(engine.item("item0"))
        XCTAssertEqual(SHA256.hex(ofFile: item.files[0].localPath), SHA256.hex(of: datas["item0"]!))
    }

    // MARK: versions of a file

    func testCatalogChangeWhileDownloadingRestartsWithTheNewFile() throws {
        catalog(1, size: 800_000)
        service.lock.withLock { service.faults["item0.mp4"] = [.slow(chunk: 8_192, delayMs: 20)] }
        let (_, engine) = try host()
        try engine.register()
        try engine.sync()
        try until(engine, "some bytes") { (try engine.item("item0")?.bytesDownloaded ?? 0) > 50_000 }
        XCTAssertEqual(try state(engine, "item0"), .downloading)
        // The origin publishes another version of the file (other bytes, size and digest) and the catalog says so.
        let new = content(42, size: 300_000)
        service.lock.withLock {
            service.files["item0.mp4"] = new
            service.pages["c1"] = page(
                cursor: "c2", items: [itemJSON("item0", file: "item0.mp4", data: new).replacingOccurrences(of: "Title item0", with: "Second title")])
        }
        let report = try engine.sync()
        XCTAssertEqual(report.updated, ["item0"])
        XCTAssertEqual(try engine.item("item0")?.title, "Second title")
        try until(engine, "cached") { try state(engine, "item0") == .cached }
        let item = try XCTUnwrap(engine.item("item0"))
        XCTAssertEqual(item.files[0].size, 300_000)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: item.files[0].localPath)), new, "the new version, not the one in flight")
        XCTAssertEqual(item.bytesDownloaded, 300_000)
        XCTAssertEqual(service.requestRanges("item0.mp4").count, 2)
        XCTAssertEqual(service.requestRanges("item0.mp4").last ?? "?", nil, "the new version is fetched from byte 0")
    }

    func testResumeWithoutValidatorRestartsFromZeroAfterTheOriginChanged() throws {
        let old = content(3, size: 200_000)
        let new = content(77, size: 200_000)
        service.lock.withLock {
            service.files["clip.mp4"] = old
            service.withoutValidator = ["clip.mp4"]
            service.faults["clip.mp4"] = [.truncate(80_000)]
            service.pages[""] = page(cursor: "c1", items: [itemJSON("clip", file: "clip.mp4", data: old, withSHA: false)])
        }
        let (_, engine) = try host()
        try engine.register()
        try engine.sync()
        try engine.round()  // starts the download, cut after 80,000 bytes
        let deadline = Date().addingTimeInterval(20)
        while try state(engine, "clip") != .idle && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertEqual(try state(engine, "clip"), .idle, "the cut attempt waits to retry")
        XCTAssertGreaterThan(
            FileDownloader.partialLength(try XCTUnwrap(engine.item("clip")).files[0].localPath), 0, "bytes of the old version on disk")
        // Same size, no validator, no digest in the catalog: nothing tells the versions apart but the bytes.
        service.lock.withLock { service.files["clip.mp4"] = new }
        try until(engine, "cached") { try state(engine, "clip") == .cached }
        let item = try XCTUnwrap(engine.item("clip"))
        XCTAssertEqual(
            try Data(contentsOf: URL(fileURLWithPath: item.files[0].localPath)), new, "the new file byte for byte, not two versions spliced")
        XCTAssertEqual(service.requestRanges("clip.mp4"), [nil, nil], "without a validator the download starts again from byte 0")
    }

    // MARK: catalog answers over the limits

    /// A catalog page of `bytes` bytes (the rest of a valid page is a long summary).
    private func hugePage(_ bytes: Int) -> String {
        let head = #"{"cursor": "c1", "items": [], "summary": ""#
        return head + String(repeating: "x", count: max(0, bytes - head.utf8.count - 2)) + #""}"#
    }

    func testCatalogAnswerOverTheLimitsIsRefusedNamingTheLimit() throws {
        let (_, engine) = try host()
        try engine.register()
        // Over the 64 MiB a catalog page may have (the host's HTTP service reads it whole).
        service.lock.withLock { service.pages[""] = hugePage((64 << 20) + 1_000) }
        XCTAssertThrowsError(try engine.sync()) { error in
            XCTAssertTrue("\(error)".contains("larger than 64 MiB"), "\(error)")
        }
        XCTAssertTrue(try engine.status().lastFailure?.contains("larger than 64 MiB") ?? false)
        // Over the 256 MiB the host's HTTP service reads at all.
        service.lock.withLock { service.pages[""] = hugePage((256 << 20) + 1_000) }
        XCTAssertThrowsError(try engine.sync()) { error in
            XCTAssertTrue("\(error)".contains("larger than 256 MiB"), "\(error)")
        }
        service.lock.withLock { service.pages[""] = nil }
    }
}
