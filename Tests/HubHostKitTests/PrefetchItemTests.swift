import Foundation
import XCTest

@testable import HubHostKit

/// The prefetch engine's items once known: filters, flags and deletes, purges and consumption,
/// live sets, imports (HLS too), look-ups, cancel and fill, and the server's per-category policy.
final class PrefetchItemTests: PrefetchEngineTestCase {
    // MARK: filters, flags, delete

    func testFiltersSortsFlagsAndDelete() throws {
        catalog(4)
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none")
        try engine.register()
        try engine.sync()
        XCTAssertEqual(try engine.items(PrefetchItemFilter(category: "sport")).map(\.uniqueId), ["item1", "item3"])
        XCTAssertEqual(
            try engine.items(PrefetchItemFilter(sort: [.init(field: .title, descending: true)])).map(\.uniqueId),
            ["item3", "item2", "item1", "item0"])
        XCTAssertEqual(try engine.items(PrefetchItemFilter(contentIds: ["c-item2"], source: "acme")).map(\.uniqueId), ["item2"])
        XCTAssertEqual(engine.set(.saved, true, on: ["item0"]).first?.accepted, true)
        XCTAssertEqual(try engine.items(PrefetchItemFilter(saved: true)).map(\.uniqueId), ["item0"])
        _ = engine.set(.viewed, true, on: ["item1"])
        XCTAssertEqual(try engine.items(PrefetchItemFilter(notViewed: true)).map(\.uniqueId), ["item0", "item2", "item3"])
        _ = try engine.download(["item0"])
        try until(engine, "cached") { try state(engine, "item0") == .cached }
        XCTAssertEqual(try engine.items(PrefetchItemFilter(states: [.cached])).map(\.uniqueId), ["item0"])
        // Locked items cannot be deleted; deleteFiles keeps the metadata and waits for a request.
        _ = engine.set(.locked, true, on: ["item0"])
        XCTAssertEqual(try engine.delete(["item0"]).first?.reason, "the item is locked")
        _ = engine.set(.locked, false, on: ["item0"])
        let path = try XCTUnwrap(engine.item("item0")).files[0].localPath
        XCTAssertEqual(try engine.delete(["item0"], filesOnly: true).first?.accepted, true)
        XCTAssertEqual(try state(engine, "item0"), .discovered)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try engine.delete(["item1"]).first?.state, .deleted)
        XCTAssertEqual(try engine.download(["item1"]).first?.reason, "the item was deleted")
    }

    // MARK: purge and consumption

    func testPurgeUnderStoragePressureEvictsConsumedFirstAndNeverSavedOrLocked() throws {
        catalog(5)
        let (host, engine) = try hostWithDevice("network = wifi\nfree_bytes = 1099511627776\n", ", license: good-licence, enable_auto_purge: false")
        let notes = record(host)
        try engine.register()
        try engine.sync()
        try until(engine, "all cached") { try engine.items(PrefetchItemFilter(states: [.cached])).count == 5 }
        XCTAssertEqual(engine.set(.saved, true, on: ["item0"]).first?.accepted, true)
        XCTAssertEqual(engine.set(.locked, true, on: ["item1"]).first?.accepted, true)
        _ = try engine.recordConsumption("item4", start: 0, end: 30)
        XCTAssertEqual(try engine.purge().evicted, [], "no pressure, nothing expired: nothing purged")

        try setDevice("network = wifi\nfree_bytes = 1000\n")  // below storage_low (512 MiB)
        XCTAssertEqual(try engine.status().downloadPolicyStatus, "storage_low")
        let report = try engine.purge()
        XCTAssertEqual(report.pressure, "storage_low")
        XCTAssertEqual(report.evicted.first, "item4", "consumed before unconsumed")
        XCTAssertEqual(Set(report.evicted), ["item2", "item3", "item4"])
        XCTAssertEqual(report.freedBytes, 150_000)
        XCTAssertEqual(try state(engine, "item0"), .cached, "saved items stay")
        XCTAssertEqual(try state(engine, "item1"), .cached, "locked items stay")
        XCTAssertFalse(FileManager.default.fileExists(atPath: try XCTUnwrap(engine.item("item3")).files[0].localPath))
        XCTAssertTrue(notes.names.contains(PrefetchNotificationName.itemsEvicted))
    }

    func testCacheSizeLimitAndExpiryPurgeByThemselves() throws {
        let data = content(9, size: 50_000)
        service.lock.withLock { service.files["old.mp4"] = data }
        var items = (0..<3).map { index -> String in
            let d = content(index, size: 50_000)
            service.lock.withLock { service.files["item\(index).mp4"] = d }
            return itemJSON("item\(index)", file: "item\(index).mp4", data: d)
        }
        items.append(
            itemJSON("old", file: "old.mp4", data: data).replacingOccurrences(of: #""type": "video","#, with: #""type": "video", "expiry": 1000,"#))
        service.lock.withLock { service.pages[""] = page(cursor: "c1", items: items) }
        let (_, engine) = try host(", license: good-licence, cache_size_limit: 120000")
        try engine.register()
        try engine.sync()
        XCTAssertEqual(try engine.item("old")?.expiryMs, 1_000_000)
        try until(engine, "two cached, the rest evicted") {
            try engine.items(PrefetchItemFilter(states: [.cached])).count == 2 && engine.items(PrefetchItemFilter(states: [.deleted])).count == 2
        }
        XCTAssertEqual(try state(engine, "old"), .deleted, "expired items are purged")
        XCTAssertLessThanOrEqual(try engine.cachedBytes(), 120_000)
    }

    func testConsumptionIsStoredMarksViewedAndBecomesAnEvent() throws {
        catalog(1)
        let (host, engine) = try host(", license: good-licence, item_download_behavior: none")
        try engine.register()
        try engine.sync()
        let record = try engine.recordConsumption("item0", date: Date(timeIntervalSince1970: 1_700_000_000), start: 12, end: 42.5)
        XCTAssertEqual(record.atMs, 1_700_000_000_000)
        XCTAssertEqual(try engine.item("item0")?.viewed, true)
        XCTAssertEqual(try engine.consumptions("item0").map(\.end), [42.5])
        XCTAssertThrowsError(try engine.recordConsumption("item0", start: 10, end: 5))
        XCTAssertThrowsError(try engine.recordConsumption("item0", start: .nan, end: 5))
        XCTAssertThrowsError(try engine.recordConsumption("nope", start: 0, end: 5))
        let events = try host.events().store.list().map(\.event).filter { $0.name == PrefetchEngine.consumptionEventName }
        XCTAssertEqual(events.count, 1)
        let attributes = Dictionary(uniqueKeysWithValues: (events.first?.attributes ?? []).map { ($0.name, $0.value) })
        XCTAssertEqual(attributes["Item ID"], .string("item0"))
        XCTAssertEqual(attributes["Content ID"], .string("c-item0"))
        XCTAssertEqual(attributes["End"], .double(42.5))
    }

    func testNotificationAddressedToPrefetchRefreshesTheCatalog() throws {
        catalog(1)
        let (host, engine) = try host(", license: good-licence, item_download_behavior: none")
        try until(engine, "initialized") { engine.serviceState == .initialized }
        let asked = service.lock.withLock { service.catalogQueries.count }
        service.lock.withLock {
            service.pages["c1"] = page(cursor: "c2", items: [itemJSON("late", file: "item0.mp4", data: content(0, size: 50_000))])
        }
        // Within the sync interval: a round does not sync by itself, an unrelated payload does nothing.
        try engine.round()
        _ = try host.events().notification(opened: false, payload: ["CurrentCampaign": "x"])
        try engine.round()
        XCTAssertEqual(service.lock.withLock { service.catalogQueries.count }, asked)
        _ = try host.events().notification(opened: false, payload: [PrefetchEngine.notificationKey: "refresh"])
        try engine.round()
        XCTAssertEqual(service.lock.withLock { service.catalogQueries.count }, asked + 1)
        XCTAssertEqual(try engine.item("late")?.state, .discovered)
    }

    func testLiveSetAnnouncesInitialThenWillAndDidChangeWithAddedUpdatedRemoved() async throws {
        catalog(3)
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none")
        try engine.register()
        try engine.sync()
        var changes = engine.watch(
            PrefetchItemFilter(states: [.discovered, .queued, .downloading, .cached], sort: [.init(field: .title)]),
            pollInterval: 0.2
        ).makeAsyncIterator()
        let initial = await changes.next()
        XCTAssertEqual(initial?.phase, .initial)
        XCTAssertEqual(initial?.added, ["item0", "item1", "item2"])
        // A download: item0 changes (queued, downloading, cached) and stays in the set.
        _ = try await BlockingPool.run { try engine.download(["item0"]) }
        let will = await changes.next()
        let did = await changes.next()
        XCTAssertEqual(will?.phase, .willChange)
        XCTAssertEqual(did?.phase, .didChange)
        XCTAssertEqual(did?.updated, ["item0"])
        XCTAssertEqual(did?.items.map(\.uniqueId), ["item0", "item1", "item2"])
        // A delete: item1 leaves the set.
        _ = try await BlockingPool.run { try engine.delete(["item1"]) }
        var removed: [String] = []
        for _ in 0..<20 {
            guard let change = await changes.next() else { break }
            if change.phase == .didChange && !change.removed.isEmpty {
                removed = change.removed
                break
            }
        }
        XCTAssertEqual(removed, ["item1"])
    }

    func testImportFullyDownloadedNewlyAddingAndPartialBeforeRegistration() throws {
        let data = content(3, size: 40_000)
        service.lock.withLock { service.files["new.mp4"] = data }
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none")
        XCTAssertEqual(engine.serviceState, .notRegistered)
        let local = folder + "/old.mp4"
        try data.write(to: URL(fileURLWithPath: local))
        let cached = try engine.addDownloadedItem(
            PrefetchImportMetadata(
                contentId: "12345678", provider: "Provider_ABC", downloadStatus: .fullyDownloaded, filePath: local, size: 40_000,
                contentType: "video", title: "New Downloaded Content", expiryDate: 1_481_876_040, sdkPassthroughInfo: "saved=YES"))
        XCTAssertEqual(cached.uniqueId, "Provider_ABC:12345678")
        XCTAssertEqual(cached.state, .cached)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: cached.files[0].localPath)), data)
        XCTAssertTrue(cached.files[0].localPath.hasPrefix(folder + "/data/prefetch/items/Provider_ABC:12345678/"))
        XCTAssertThrowsError(
            try engine.addDownloadedItem(
                PrefetchImportMetadata(contentId: "12345678", provider: "Provider_ABC", downloadStatus: .partiallyDownloaded)),
            "the same content twice is refused")
        XCTAssertThrowsError(
            try engine.addDownloadedItem(
                PrefetchImportMetadata(
                    contentId: "9", provider: "P", downloadStatus: .fullyDownloaded,
                    filePath: local, size: 1)), "a size mismatch is refused")
        let partial = try engine.addDownloadedItem(
            PrefetchImportMetadata(
                contentId: "2", provider: "P", downloadStatus: .partiallyDownloaded,
                filePath: local, contentUrl: service.fileURL("new.mp4")))
        XCTAssertEqual(partial.state, .discovered, "a partly downloaded file imports metadata only")
        XCTAssertFalse(FileManager.default.fileExists(atPath: partial.files[0].localPath))
        _ = try engine.addDownloadedItem(
            PrefetchImportMetadata(
                contentId: "3", provider: "P", downloadStatus: .newlyAdding, size: 40_000,
                contentUrl: service.fileURL("new.mp4")))
        try until(engine, "the newly added item cached") { try state(engine, "P:3") == .cached }
        XCTAssertEqual(service.sent("new.mp4"), 40_000)
    }

    /// An HLS download as an app keeps it: `master.m3u8` naming `low/index.m3u8` (AES-128, its key
    /// `low/key.bin`, two segments) and `high.m3u8` beside it (one segment); `low/index.m3u8` is
    /// `media` when given. Returns the folder, its files by relative name and their total length.
    private func writeHLSDownload(_ name: String, media: String? = nil) throws -> (path: String, files: [String: Data], size: Int64) {
        let path = folder + "/apps-hls/" + name
        try FileManager.default.createDirectory(atPath: path + "/low", withIntermediateDirectories: true)
        let files: [String: Data] = [
            "master.m3u8": Data("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=100000\nlow/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=300000\nhigh.m3u8\n".utf8),
            "low/index.m3u8": Data(
                (media
                    ?? "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"key.bin\",IV=0x01\n#EXTINF:2,\nseg0.ts\n#EXTINF:2,\nseg1.ts\n#EXT-X-ENDLIST\n")
                    .utf8),
            "low/key.bin": content(1, size: 16), "low/seg0.ts": content(2, size: 18_800), "low/seg1.ts": content(3, size: 9_400),
            "high.m3u8": Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nhigh-0.ts\n#EXT-X-ENDLIST\n".utf8),
            "high-0.ts": content(4, size: 15_040)
        ]
        for (file, data) in files { try data.write(to: URL(fileURLWithPath: path + "/" + file)) }
        return (path, files, files.values.reduce(0) { $0 + Int64($1.count) })
    }

    func testImportAnHLSDownloadStoresEveryFileItNamesAsAnHLSDownloadDoes() async throws {
        let (_, engine) = try host(", item_download_behavior: none")
        let hls = try writeHLSDownload("ok")
        let fromFile = try engine.addDownloadedItem(
            PrefetchImportMetadata(
                contentId: "1", provider: "P", downloadStatus: .fullyDownloaded, filePath: hls.path + "/master.m3u8", size: hls.size))
        XCTAssertEqual(fromFile.state, .cached)
        XCTAssertEqual(fromFile.size, hls.size)
        XCTAssertEqual(fromFile.bytesDownloaded, hls.size, "every file's bytes: playlists, key and segments")
        XCTAssertEqual(fromFile.files.map(\.role), ["hls_main_index"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: fromFile.files[0].localPath)), hls.files["master.m3u8"])
        let stored = folder + "/data/prefetch/items/P:1/hls"
        XCTAssertEqual(
            Set(try FileManager.default.contentsOfDirectory(atPath: stored)), ["layout.json", "v0-0.bin", "v0-1.ts", "v0-2.ts", "v1-0.ts"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored + "/v0-0.bin")), hls.files["low/key.bin"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored + "/v0-2.ts")), hls.files["low/seg1.ts"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored + "/v1-0.ts")), hls.files["high-0.ts"])
        // The app's copy can go: what plays is the item's.
        try FileManager.default.removeItem(atPath: hls.path)
        guard case .playlist(let variant) = try await engine.hlsResource("P:1", "v0.m3u8") else { return XCTFail("v0.m3u8 is a playlist") }
        XCTAssertTrue(variant.contains(#"#EXT-X-KEY:METHOD=AES-128,URI="v0-0.bin",IV=0x01"#), variant)
        XCTAssertTrue(variant.contains("\nv0-1.ts\n") && variant.contains("\nv0-2.ts\n"), variant)
        guard case .file(let path, _) = try await engine.hlsResource("P:1", "v0-1.ts") else { return XCTFail("v0-1.ts is on disk") }
        XCTAssertEqual(path, stored + "/v0-1.ts")

        // The folder as FilePath: its main index is the one top-level playlist no other names.
        let again = try writeHLSDownload("folder")
        let fromFolder = try engine.addDownloadedItem(
            PrefetchImportMetadata(contentId: "2", provider: "P", downloadStatus: .fullyDownloaded, filePath: again.path, size: again.size))
        XCTAssertEqual(fromFolder.state, .cached)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: fromFolder.files[0].localPath)), again.files["master.m3u8"])
        // Two top-level playlists that no other names: which is the item is not guessed.
        try FileManager.default.removeItem(atPath: again.path + "/master.m3u8")
        try Data("#EXTM3U\n#EXTINF:2,\nhigh-0.ts\n#EXT-X-ENDLIST\n".utf8).write(to: URL(fileURLWithPath: again.path + "/other.m3u8"))
        XCTAssertThrowsError(
            try engine.addDownloadedItem(
                PrefetchImportMetadata(contentId: "3", provider: "P", downloadStatus: .fullyDownloaded, filePath: again.path))
        ) { error in
            XCTAssertTrue("\(error)".contains("2 .m3u8 playlists at its top and 2 of them (high.m3u8, other.m3u8) are named by no other"), "\(error)")
        }
        XCTAssertNil(try engine.item("P:3"))
    }

    func testImportedHLSThatNamesFilesOutsideOrMissingOrMismeasuredIsRefusedLeavingNothing() throws {
        let (_, engine) = try host(", item_download_behavior: none")
        try content(9, size: 100).write(to: URL(fileURLWithPath: folder + "/secret"))
        func media(_ second: String) -> String {
            "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"key.bin\"\n#EXTINF:2,\nseg0.ts\n#EXTINF:2,\n\(second)\n#EXT-X-ENDLIST\n"
        }
        var cases: [(name: String, hls: (path: String, files: [String: Data], size: Int64), size: Int64?, reason: String)] = []
        let dotDot = try writeHLSDownload("dotdot", media: media("../secret"))
        try content(9, size: 100).write(to: URL(fileURLWithPath: dotDot.path + "/secret"))
        cases.append(("dotdot", dotDot, nil, "'../secret' in low/index.m3u8 leaves the folder with '..'"))
        let encoded = try writeHLSDownload("encoded", media: media("%2e%2e/%2E%2E/%2e%2e/secret"))
        cases.append(("encoded", encoded, nil, "leaves the folder with '..'"))
        let absolute = try writeHLSDownload("absolute", media: media("http://127.0.0.1:9/seg1.ts"))
        cases.append(("absolute", absolute, nil, "'http://127.0.0.1:9/seg1.ts' in low/index.m3u8 is not a relative name"))
        let rooted = try writeHLSDownload("rooted", media: media(folder + "/secret"))
        cases.append(("rooted", rooted, nil, "is not a relative name"))
        let missing = try writeHLSDownload("missing")
        try FileManager.default.removeItem(atPath: missing.path + "/low/seg1.ts")
        cases.append(("missing", missing, nil, "'low/seg1.ts' is missing"))
        let symlink = try writeHLSDownload("symlink")
        try FileManager.default.removeItem(atPath: symlink.path + "/low/seg1.ts")
        try FileManager.default.createSymbolicLink(atPath: symlink.path + "/low/seg1.ts", withDestinationPath: folder + "/secret")
        cases.append(("symlink", symlink, nil, "'low/seg1.ts' is a symlink that leaves the folder"))
        let variantOut = try writeHLSDownload("variant")
        try FileManager.default.removeItem(atPath: variantOut.path + "/high.m3u8")
        try FileManager.default.createSymbolicLink(atPath: variantOut.path + "/high.m3u8", withDestinationPath: dotDot.path + "/high.m3u8")
        cases.append(("variant", variantOut, nil, "playlist 'high.m3u8' is a symlink that leaves the folder"))
        let size = try writeHLSDownload("size")
        cases.append(("size", size, size.size + 1, "has \(size.size) bytes (3 playlists and 4 files), Size says \(size.size + 1)"))
        for (index, refused) in cases.enumerated() {
            let id = "P:\(index)"
            XCTAssertThrowsError(
                try engine.addDownloadedItem(
                    PrefetchImportMetadata(
                        contentId: "\(index)", provider: "P", downloadStatus: .fullyDownloaded, filePath: refused.hls.path + "/master.m3u8",
                        size: refused.size)), refused.name
            ) { error in
                XCTAssertTrue("\(error)".contains(refused.reason), "\(refused.name): \(error)")
            }
            XCTAssertNil(try engine.item(id), refused.name)
            XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/data/prefetch/items/\(id)"), "\(refused.name): nothing left behind")
        }
        // The same folder with its right Size imports.
        XCTAssertEqual(
            try engine.addDownloadedItem(
                PrefetchImportMetadata(
                    contentId: "ok", provider: "P", downloadStatus: .fullyDownloaded, filePath: size.path + "/master.m3u8", size: size.size)
            ).state, .cached)
    }

    func testLookupByContentIdAsksTheServiceWithRetriesForUnknownOnes() throws {
        catalog(1)
        let data = content(7, size: 1_000)
        service.lock.withLock {
            service.lookupItems["c-x1"] = itemJSON("x1", file: "x1.mp4", data: data).replacingOccurrences(
                of: #""content_id": "c-x1""#, with: #""content_id": "c-x1""#)
            service.lookupFailures = 2
        }
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none, lookup_retry_delay: 0.05")
        try engine.register()
        try engine.sync()
        let result = try engine.lookup(contentIds: ["c-item0", "c-x1", "c-none"], source: "acme")
        XCTAssertEqual(result.items.map(\.uniqueId).sorted(), ["item0", "x1"])
        XCTAssertEqual(result.missing, ["c-none"])
        XCTAssertEqual(service.lock.withLock { service.lookups }, 3, "two failures, then the answer: 3 attempts")
        XCTAssertEqual(try engine.item("x1")?.state, .discovered)
        // Known locally now: no more requests.
        XCTAssertEqual(try engine.lookup(contentIds: ["c-x1"], source: "acme").items.map(\.uniqueId), ["x1"])
        XCTAssertEqual(service.lock.withLock { service.lookups }, 3)
        // Three failures: the look-up fails with the reason.
        service.lock.withLock { service.lookupFailures = 3 }
        XCTAssertThrowsError(try engine.lookup(contentIds: ["c-other"], source: "acme"))
        XCTAssertEqual(service.lock.withLock { service.lookups }, 6)
    }

    func testCancelMakesDownloadsIdleUntilFillQueuesThemAgain() throws {
        let datas = catalog(2, size: 600_000)
        service.lock.withLock { service.faults["item0.mp4"] = [.slow(chunk: 8_192, delayMs: 20)] }
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none")
        try engine.register()
        try engine.sync()
        XCTAssertEqual(try engine.download(["item0"]).first?.accepted, true)
        try until(engine, "downloading with bytes on disk") {
            try state(engine, "item0") == .downloading && FileDownloader.partialLength(XCTUnwrap(engine.item("item0")).files[0].localPath) > 0
        }
        let answers = try engine.cancelCurrentDownloads()
        XCTAssertEqual(answers.map(\.id), ["item0"])
        let item = try XCTUnwrap(engine.item("item0"))
        XCTAssertEqual(item.state, .idle)
        XCTAssertEqual(item.waitReason, "cancelled")
        XCTAssertGreaterThan(item.retryAtMs ?? 0, Clock.wallMs() + 60_000, "queued again only after a sync interval")
        for _ in 0..<3 { try engine.round() }
        XCTAssertEqual(try state(engine, "item0"), .idle)
        // Force fill: every discovered and idle item (not set to none) is queued, user-initiated.
        let queued = try engine.fill()
        XCTAssertEqual(queued.sorted(), ["item0", "item1"])
        try until(engine, "both cached") { try engine.items(PrefetchItemFilter(states: [.cached])).count == 2 }
        XCTAssertEqual(SHA256.hex(ofFile: try XCTUnwrap(engine.item("item0")).files[0].localPath), SHA256.hex(of: datas["item0"]!))
        XCTAssertEqual(service.requestRanges("item0.mp4").count, 2, "the cancelled download resumed")
    }

    // MARK: server policy

    func testItemsPerCategoryHoldsItemsDiscoveredInTheSameSync() throws {
        catalog(4)  // item0 and item2 in news, item1 and item3 in sport
        service.lock.withLock { service.policy = #"{"network_selection": "wifi", "items_per_category": 1}"# }
        let (_, engine) = try host()
        try engine.register()
        try engine.sync()
        try engine.round()
        func taken(_ category: String) throws -> [String] {
            try engine.items().filter { $0.categories.contains(category) && [.queued, .downloading, .cached].contains($0.state) }.map(\.uniqueId)
        }
        XCTAssertEqual(try taken("news"), ["item0"])
        XCTAssertEqual(try taken("sport"), ["item1"])
        XCTAssertEqual(try engine.item("item2")?.waitReason, "category_limit_reached")
        XCTAssertEqual(try engine.item("item3")?.waitReason, "category_limit_reached")
        try until(engine, "one item of each category cached") { try engine.items(PrefetchItemFilter(states: [.cached])).count == 2 }
        for _ in 0..<3 { try engine.round() }
        XCTAssertEqual(try state(engine, "item2"), .discovered)
        XCTAssertEqual(try state(engine, "item3"), .discovered)
        XCTAssertEqual(service.sent("item2.mp4") + service.sent("item3.mp4"), 0)
    }
}
