import Foundation
import XCTest

@testable import HubHostKit

/// The prefetch engine end to end: a catalog service and file server on 127.0.0.1
/// (PrefetchTestService) reached through the bundled http-content-provider, the catalog in SQLite
/// in a temporary data directory, real downloads with AsyncHTTPClient, and the fault cases.
final class PrefetchTests: PrefetchTestCase {
    // MARK: helpers

    private func manifest(_ prefetch: String = "") -> ManifestText {
        prefetchManifest(", retry_delay: 0.05, read_timeout: 1, register_retry: 0.05" + prefetch, sections: [("logging", "{severity: info}")])
    }

    private func host(_ prefetch: String = ", license: good-licence", license: String? = nil) throws -> (HubHost, PrefetchEngine) {
        try openEngine(manifest(prefetch), license: license)
    }

    /// A host whose prefetch.device_conditions is the bundled fixed-device-conditions instance
    /// `device`, reading `data/device.txt`: `conditions` is its first content, `setDevice` changes it.
    private func hostWithDevice(_ conditions: String, _ prefetch: String = ", license: good-licence") throws -> (HubHost, PrefetchEngine) {
        try setDevice(conditions)
        let device = ManifestText.Plugin(id: "device", use: TestSupport.plugin("FixedDeviceConditions"), ("config", "{file: device.txt}"))
        return try openEngine(
            prefetchManifest(
                ", retry_delay: 0.05, read_timeout: 1, register_retry: 0.05, device_conditions: device" + prefetch,
                sections: [("logging", "{severity: info}")], plugins: [device]))
    }

    /// Rewrites the conditions file `hostWithDevice`'s plugin reads (atomically: the plugin sees a new file).
    private func setDevice(_ conditions: String) throws { try TestSupport.write(conditions, to: folder + "/data/device.txt") }

    /// Bytes that differ from file to file.
    private func content(_ seed: Int, size: Int) -> Data { Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }) }

    /// A catalog item entry; `sha` nil leaves the digest out.
    private func itemJSON(
        _ id: String, file: String, data: Data, category: String = "news", withSHA: Bool = true,
        thumbnail: String? = nil
    ) -> String {
        let sha = withSHA ? #", "sha256": "\#(SHA256.hex(of: data))""# : ""
        let thumb = thumbnail.map { #", {"role": "thumbnail", "url": "\#(service.fileURL($0))", "auto_download": true}"# } ?? ""
        return """
            {"unique_id": "\(id)", "content_id": "c-\(id)", "source": "acme", "categories": ["\(category)"], "title": "Title \(id)",
             "summary": "About \(id)", "type": "video", "files": [{"role": "main", "url": "\(service.fileURL(file))", "size": \(data.count)\(sha)}\(thumb)]}
            """
    }

    private func page(cursor: String, items: [String], deleted: [String] = [], more: Bool = false) -> String {
        """
        {"cursor": "\(cursor)", "more": \(more), "sources": [{"name": "acme", "display_name": "Acme"}],
         "categories": [{"id": "news", "name": "News"}, {"id": "sport", "name": "Sport"}],
         "items": [\(items.joined(separator: ","))], "deleted": {"items": [\(deleted.map { "\"\($0)\"" }.joined(separator: ","))]}}
        """
    }

    /// Serves `count` files and one catalog page listing them; returns their data by item id.
    @discardableResult
    private func catalog(_ count: Int, size: Int = 50_000, withSHA: Bool = true) -> [String: Data] {
        var datas: [String: Data] = [:]
        var items: [String] = []
        for index in 0..<count {
            let id = "item\(index)"
            let data = content(index, size: size)
            datas[id] = data
            service.lock.withLock { service.files["\(id).mp4"] = data }
            items.append(itemJSON(id, file: "\(id).mp4", data: data, category: index % 2 == 0 ? "news" : "sport", withSHA: withSHA))
        }
        service.lock.withLock { service.pages[""] = page(cursor: "c1", items: items) }
        return datas
    }

    /// Runs engine rounds until `done` or 20 s.
    private func until(_ engine: PrefetchEngine, _ what: String, _ done: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            try engine.round()
            if try done() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("timed out waiting for \(what)")
    }

    private func state(_ engine: PrefetchEngine, _ id: String) throws -> PrefetchItemState? { try engine.item(id)?.state }

    private final class Notes: @unchecked Sendable {
        let lock = NSLock()
        var items: [HostNotification] = []
        var names: [String] { lock.withLock { items.map(\.name) } }
    }

    private func record(_ host: HubHost) -> Notes {
        let notes = Notes()
        let token = host.notifications.subscribe { note in notes.lock.withLock { notes.items.append(note) } }
        addTeardownBlock { host.notifications.unsubscribe(token) }
        return notes
    }

    // MARK: settings and licence

    func testLicencePrecedenceOptionThenManifestThenConfigFile() throws {
        let yaml = folder + "/licence.yaml"
        let json = folder + "/licence.json"
        try TestSupport.write("license: from-yaml\n", to: yaml)
        try TestSupport.write(#"{"license": "from-json"}"#, to: json)
        let env = [PrefetchLicense.environmentVariable: yaml]
        XCTAssertEqual(PrefetchLicense.resolve(option: "opt", manifest: "man", environment: env), PrefetchLicense(key: "opt", source: .option))
        XCTAssertEqual(PrefetchLicense.resolve(option: nil, manifest: "man", environment: env), PrefetchLicense(key: "man", source: .manifest))
        XCTAssertEqual(PrefetchLicense.resolve(option: "  ", manifest: nil, environment: env), PrefetchLicense(key: "from-yaml", source: .configFile))
        XCTAssertEqual(PrefetchLicense.resolve(option: nil, manifest: nil, environment: [PrefetchLicense.environmentVariable: json]).key, "from-json")
        let missing = PrefetchLicense.resolve(option: nil, manifest: nil, environment: [PrefetchLicense.environmentVariable: folder + "/none.json"])
        XCTAssertEqual(missing.source, .none)
        XCTAssertTrue(missing.problem?.contains("no such file") ?? false, "\(missing)")
        try TestSupport.write("[1, 2]", to: json)
        XCTAssertTrue(
            PrefetchLicense.resolve(option: nil, manifest: nil, environment: [PrefetchLicense.environmentVariable: json]).problem?.contains("mapping")
                ?? false)

        // Through the host: the Swift API option wins over prefetch.license, and status says so.
        let (_, engine) = try host(", license: good-licence", license: "from-api")
        XCTAssertEqual(try engine.status().licenseSource, .option)
        XCTAssertEqual(engine.license.key, "from-api")
    }

    func testSettingsSectionParsesAndReportsBadValues() throws {
        try writeManifest(manifest(", max_concurrent_downloads: 0, item_download_behavior: sometimes, network_selection: both, sync_interval: 1 min"))
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        let settings = manifest.prefetch
        XCTAssertTrue(settings.enabled)
        XCTAssertEqual(settings.maxConcurrentDownloads, 4, "a bad value keeps the default")
        XCTAssertEqual(settings.itemDownloadBehavior, .fullAuto)
        XCTAssertEqual(settings.networkSelection, .both)
        XCTAssertEqual(settings.syncInterval, 60)
        let messages = manifest.diagnostics.map(\.message).joined(separator: "\n")
        XCTAssertTrue(messages.contains("between 1 and 64"), messages)
        XCTAssertTrue(messages.contains("unknown value 'sometimes'"), messages)
        XCTAssertTrue(manifest.effectiveSettings["prefetch"]?.contains { $0.key == "prefetch.license" } ?? false)
    }

    // MARK: registration

    func testRegistrationRefusedThenRetriedWithBackoffThenRegistered() throws {
        let (host, engine) = try host(", license: wrong-licence")
        let notes = record(host)
        XCTAssertThrowsError(try engine.register())
        XCTAssertEqual(engine.serviceState, .notRegistered)
        XCTAssertEqual(try engine.status().lastFailure, "refused: unknown licence")
        XCTAssertEqual(notes.names.last, PrefetchNotificationName.didFailToRegister)
        // A refused licence is not retried by the rounds.
        let asked = service.lock.withLock { service.registerQueries.count }
        for _ in 0..<3 { try engine.round() }
        XCTAssertEqual(service.lock.withLock { service.registerQueries.count }, asked)

        // A server failure is retried by the rounds (with backoff) until it registers.
        catalog(1)
        let (host2, engine2) = try self.host(", license: good-licence, device_id: dev-1")
        _ = host2
        service.lock.withLock { service.registerFailures = 2 }
        try until(engine2, "registration") { engine2.serviceState == .initialized }
        XCTAssertEqual(service.lock.withLock { service.registerQueries.last?["device_id"] }, "dev-1")
        XCTAssertEqual(service.lock.withLock { service.registerQueries.last?["license"] }, "good-licence")
        XCTAssertEqual(try engine2.status().serverPolicy?.networkSelection, "wifi")
    }

    // MARK: catalog and downloads

    func testSyncDiscoversQueuesAndCachesVerifiedFilesAnnouncingAfterCommit() throws {
        let datas = catalog(3)
        let (host, engine) = try host()
        let notes = record(host)
        // Every state change must already be in the catalog when it is announced.
        final class Mismatches: @unchecked Sendable {
            var list: [String] = []
            let lock = NSLock()
        }
        let mismatches = Mismatches()
        let token = host.notifications.subscribe { note in
            guard note.name == PrefetchNotificationName.itemStateChanged, case .string(let id)? = note.payload["id"],
                case .string(let state)? = note.payload["state"]
            else { return }
            let stored = (try? engine.store.item(id))?.state.rawValue
            // The stored state may have moved on since; it must never be behind the announcement.
            if stored == nil { mismatches.lock.withLock { mismatches.list.append("\(id) \(state) not stored") } }
        }
        defer { host.notifications.unsubscribe(token) }
        try engine.register()
        let report = try engine.sync()
        XCTAssertEqual(report.discovered.sorted(), ["item0", "item1", "item2"])
        XCTAssertEqual(engine.serviceState, .initialized)
        XCTAssertEqual(try state(engine, "item0"), .discovered)
        try until(engine, "all cached") { try engine.items(PrefetchItemFilter(states: [.cached])).count == 3 }
        for (id, data) in datas {
            let item = try XCTUnwrap(engine.item(id))
            XCTAssertEqual(item.bytesDownloaded, Int64(data.count))
            XCTAssertTrue(item.files[0].localPath.hasPrefix(folder + "/data/prefetch/items/\(id)/"), item.files[0].localPath)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: item.files[0].localPath)), data)
        }
        let names = notes.names
        for expected in [
            PrefetchNotificationName.didRegister, PrefetchNotificationName.itemsDiscovered, PrefetchNotificationName.didInitialize,
            PrefetchNotificationName.itemsStartDownloading, PrefetchNotificationName.itemsDownloaded
        ] {
            XCTAssertTrue(names.contains(expected), "\(expected) missing from \(names)")
        }
        XCTAssertEqual(mismatches.lock.withLock { mismatches.list }, [])
        // The states each item went through, in order.
        let path = notes.lock.withLock { notes.items }.filter {
            $0.name == PrefetchNotificationName.itemStateChanged && $0.payload["id"] == .string("item1")
        }
        .compactMap { $0.payload["state"]?.plainText }
        XCTAssertEqual(path, ["queued", "downloading", "cached"])

        // Asking again: refused with the reason, nothing fetched twice.
        let sent = service.sent("item0.mp4")
        let answers = try engine.download(["item0", "nope"])
        XCTAssertEqual(answers.map(\.accepted), [false, false])
        XCTAssertEqual(answers[0].reason, "already cached")
        XCTAssertEqual(service.sent("item0.mp4"), sent)
        XCTAssertEqual(sent, datas["item0"]!.count)
    }

    func testTombstonesDeleteItemsAndTheirFiles() throws {
        catalog(2)
        let (host, engine) = try host()
        let notes = record(host)
        try engine.register()
        try engine.sync()
        try until(engine, "cached") { try engine.items(PrefetchItemFilter(states: [.cached])).count == 2 }
        let path = try XCTUnwrap(engine.item("item0")).files[0].localPath
        service.lock.withLock { service.pages["c1"] = page(cursor: "c2", items: [], deleted: ["item0"]) }
        let report = try engine.sync()
        XCTAssertEqual(report.evicted, ["item0"])
        XCTAssertEqual(try state(engine, "item0"), .deleted)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertTrue(notes.names.contains(PrefetchNotificationName.itemsEvicted))
        XCTAssertEqual(service.lock.withLock { service.catalogQueries.last?["since"] }, "c1")
        XCTAssertEqual(try engine.items().map(\.uniqueId), ["item1"], "deleted items are listed only when asked for")
    }

    func testBehaviorNoneWaitsWithReasonUntilAskedAndUserInitiatedGoesFirst() throws {
        catalog(3)
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none, max_concurrent_downloads: 1")
        try engine.register()
        try engine.sync()
        try engine.round()
        XCTAssertEqual(try engine.item("item0")?.state, .discovered)
        XCTAssertEqual(try engine.item("item0")?.waitReason, "download_behavior_none")
        let answers = try engine.download(["item2"])
        XCTAssertEqual(answers.first?.accepted, true)
        // Asked twice: still one download.
        XCTAssertEqual(
            try engine.download(["item2"]).first?.reason?.hasPrefix("already downloading") ?? (try engine.item("item2")?.state == .cached), true)
        try until(engine, "item2 cached") { try state(engine, "item2") == .cached }
        XCTAssertEqual(service.sent("item2.mp4"), 50_000)
        XCTAssertEqual(try state(engine, "item1"), .discovered)
    }

    // MARK: partial downloads and thumbnail-only

    func testPartialDownloadEndsPartiallyCachedThenFullDownloadFetchesOnlyTheRest() throws {
        let data = content(7, size: 200_000)
        service.lock.withLock {
            service.files["clip.mp4"] = data
            service.pages[""] = page(
                cursor: "c1",
                items: [
                    """
                    {"unique_id": "clip", "content_id": "c-clip", "source": "acme", "categories": ["news"], "type": "video",
                     "files": [{"role": "main", "url": "\(service.fileURL("clip.mp4"))", "size": 200000, "duration": 100,
                                "sha256": "\(SHA256.hex(of: data))"}]}
                    """
                ])
        }
        let (host, engine) = try host(", license: good-licence, item_download_behavior: none")
        try engine.register()
        try engine.sync()
        let notes = record(host)
        // 10 of 100 seconds of a 200,000-byte file: ceil(200000 * 10 / 100) = 20,000 bytes.
        XCTAssertEqual(try engine.download(["clip"], partial: .seconds(10)).first?.accepted, true)
        try until(engine, "partially cached") { try state(engine, "clip") == .partiallyCached }
        var item = try XCTUnwrap(engine.item("clip"))
        XCTAssertEqual(item.files[0].partialLength, 20_000)
        XCTAssertEqual(item.files[0].bytesDownloaded, 20_000)
        XCTAssertFalse(item.files[0].done)
        XCTAssertEqual(FileDownloader.partialLength(item.files[0].localPath), 20_000, "the bytes asked for are on disk")
        XCTAssertEqual(service.sent("clip.mp4"), 20_000, "fewer bytes fetched than the file")
        XCTAssertEqual(service.requestRanges("clip.mp4"), ["bytes=0-19999"])
        XCTAssertTrue(
            notes.lock.withLock {
                notes.items.contains { $0.name == PrefetchNotificationName.itemStateChanged && $0.payload["state"] == .string("partially_cached") }
            })
        XCTAssertFalse(notes.names.contains(PrefetchNotificationName.itemsDownloaded), "a partial item is not announced downloaded")
        // Asking again for no more than is on disk changes nothing.
        XCTAssertEqual(try engine.download(["clip"], partial: .bytes(10_000)).first?.reason?.hasPrefix("nothing to change"), true)

        // The full download resumes by Range from byte 20,000 and ends cached with the right digest.
        XCTAssertEqual(try engine.download(["clip"]).first?.accepted, true)
        try until(engine, "cached") { try state(engine, "clip") == .cached }
        item = try XCTUnwrap(engine.item("clip"))
        XCTAssertNil(item.files[0].partialLength)
        XCTAssertEqual(service.requestRanges("clip.mp4"), ["bytes=0-19999", "bytes=20000-"])
        XCTAssertEqual(
            service.lock.withLock { service.fileHeaders["clip.mp4"]?.last?["if-range"] }, "\"200000-\(data[0])\"",
            "the resume is guarded by the first answer's ETag")
        XCTAssertEqual(service.sent("clip.mp4"), 200_000, "the bytes on disk were not fetched again")
        XCTAssertEqual(SHA256.hex(ofFile: item.files[0].localPath), SHA256.hex(of: data))
        XCTAssertEqual(item.bytesDownloaded, 200_000)
    }

    func testPartialLengthsAreCheckedAndSecondsNeedTheCatalogDuration() throws {
        let datas = catalog(1, size: 30_000)
        let (_, engine) = try host(", license: good-licence, item_download_behavior: none")
        try engine.register()
        try engine.sync()
        XCTAssertThrowsError(try engine.download(["item0"], partial: .bytes(0)))
        XCTAssertThrowsError(try engine.download(["item0"], partial: .seconds(.nan)))
        let refused = try XCTUnwrap(engine.download(["item0"], partial: .seconds(5)).first)
        XCTAssertFalse(refused.accepted)
        XCTAssertTrue(refused.reason?.contains("duration") ?? false, "\(refused)")
        XCTAssertEqual(try state(engine, "item0"), .discovered, "a refused request leaves the item as it was")
        // Bytes need no duration; a partial length of the whole file or more is a full download.
        XCTAssertEqual(try engine.download(["item0"], partial: .bytes(1_000)).first?.accepted, true)
        try until(engine, "partially cached") { try state(engine, "item0") == .partiallyCached }
        XCTAssertEqual(service.sent("item0.mp4"), 1_000)
        XCTAssertEqual(try engine.download(["item0"], partial: .bytes(30_000)).first?.accepted, true)
        try until(engine, "cached") { try state(engine, "item0") == .cached }
        XCTAssertEqual(service.sent("item0.mp4"), 30_000)
        XCTAssertEqual(SHA256.hex(ofFile: try XCTUnwrap(engine.item("item0")).files[0].localPath), SHA256.hex(of: datas["item0"]!))
    }

    func testThumbnailOnlyFetchesThumbnailsNeverTheMainFileAndKeepsTheState() throws {
        var items: [String] = []
        var thumbs: [String: Data] = [:]
        for index in 0..<2 {
            let data = content(index, size: 40_000)
            let thumb = content(100 + index, size: 3_000)
            thumbs["item\(index)"] = thumb
            service.lock.withLock {
                service.files["item\(index).mp4"] = data
                service.files["thumb\(index).jpg"] = thumb
            }
            items.append(itemJSON("item\(index)", file: "item\(index).mp4", data: data, thumbnail: "thumb\(index).jpg"))
        }
        service.lock.withLock { service.pages[""] = page(cursor: "c1", items: items) }
        // Global thumbnail_only; item1 overrides it with full_auto.
        let (host, engine) = try host(", license: good-licence, item_download_behavior: thumbnail_only")
        try engine.register()
        try engine.sync()
        _ = try engine.store.update("item1") { item in
            item.downloadBehavior = .fullAuto
            return true
        }
        let notes = record(host)
        try until(engine, "item0's thumbnail and item1 cached") {
            try engine.item("item0")?.files[1].done == true && state(engine, "item1") == .cached
        }
        let item = try XCTUnwrap(engine.item("item0"))
        XCTAssertEqual(item.state, .discovered, "thumbnails never change the item's state")
        XCTAssertEqual(item.waitReason, "thumbnail_only")
        XCTAssertEqual(SHA256.hex(ofFile: item.files[1].localPath), SHA256.hex(of: thumbs["item0"]!))
        XCTAssertFalse(FileManager.default.fileExists(atPath: item.files[0].localPath))
        XCTAssertEqual(FileDownloader.partialLength(item.files[0].localPath), 0)
        XCTAssertEqual(service.sent("thumb0.jpg"), 3_000)
        XCTAssertFalse(
            notes.lock.withLock {
                notes.items.contains { $0.name == PrefetchNotificationName.itemStateChanged && $0.payload["id"] == .string("item0") }
            })
        // More rounds fetch nothing more: the thumbnail is done and the main file waits.
        for _ in 0..<5 {
            try engine.round()
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(service.sent("item0.mp4"), 0, "the main file of a thumbnail_only item is never fetched by policy")
        XCTAssertEqual(service.requestRanges("thumb0.jpg").count, 1)
        XCTAssertEqual(try state(engine, "item0"), .discovered)
        // The per-item override wins over the setting: item1 (full_auto) downloaded whole.
        XCTAssertEqual(service.sent("item1.mp4"), 40_000)
        XCTAssertEqual(service.sent("thumb1.jpg"), 3_000, "item1 fetched its thumbnail with the item")
    }

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
