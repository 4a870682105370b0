import Foundation
import XCTest

@testable import HubHostKit

/// What the prefetch engine's end-to-end tests share: a manifest naming the bundled
/// http-content-provider against PrefetchTestService, hosts with a device, catalog pages and
/// files, waits, and the notifications a host sent.
class PrefetchEngineTestCase: PrefetchTestCase {
    func manifest(_ prefetch: String = "") -> ManifestText {
        prefetchManifest(", retry_delay: 0.05, read_timeout: 1, register_retry: 0.05" + prefetch, sections: [("logging", "{severity: info}")])
    }

    func host(_ prefetch: String = ", license: good-licence", license: String? = nil) throws -> (HubHost, PrefetchEngine) {
        try openEngine(manifest(prefetch), license: license)
    }

    /// A host whose prefetch.device_conditions is the bundled fixed-device-conditions instance
    /// `device`, reading `data/device.txt`: `conditions` is its first content, `setDevice` changes it.
    func hostWithDevice(_ conditions: String, _ prefetch: String = ", license: good-licence") throws -> (HubHost, PrefetchEngine) {
        try setDevice(conditions)
        let device = ManifestText.Plugin(id: "device", use: TestSupport.plugin("FixedDeviceConditions"), ("config", "{file: device.txt}"))
        return try openEngine(
            prefetchManifest(
                ", retry_delay: 0.05, read_timeout: 1, register_retry: 0.05, device_conditions: device" + prefetch,
                sections: [("logging", "{severity: info}")], plugins: [device]))
    }

    /// Rewrites the conditions file `hostWithDevice`'s plugin reads (atomically: the plugin sees a new file).
    func setDevice(_ conditions: String) throws { try TestSupport.write(conditions, to: folder + "/data/device.txt") }

    /// Bytes that differ from file to file.
    func content(_ seed: Int, size: Int) -> Data { Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }) }

    /// A catalog item entry; `sha` nil leaves the digest out.
    func itemJSON(
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

    func page(cursor: String, items: [String], deleted: [String] = [], more: Bool = false) -> String {
        """
        {"cursor": "\(cursor)", "more": \(more), "sources": [{"name": "acme", "display_name": "Acme"}],
         "categories": [{"id": "news", "name": "News"}, {"id": "sport", "name": "Sport"}],
         "items": [\(items.joined(separator: ","))], "deleted": {"items": [\(deleted.map { "\"\($0)\"" }.joined(separator: ","))]}}
        """
    }

    /// Serves `count` files and one catalog page listing them; returns their data by item id.
    @discardableResult
    func catalog(_ count: Int, size: Int = 50_000, withSHA: Bool = true) -> [String: Data] {
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
    func until(_ engine: PrefetchEngine, _ what: String, _ done: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            try engine.round()
            if try done() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("timed out waiting for \(what)")
    }

    func state(_ engine: PrefetchEngine, _ id: String) throws -> PrefetchItemState? { try engine.item(id)?.state }

    final class Notes: @unchecked Sendable {
        let lock = NSLock()
        var items: [HostNotification] = []
        var names: [String] { lock.withLock { items.map(\.name) } }
    }

    func record(_ host: HubHost) -> Notes {
        let notes = Notes()
        let token = host.notifications.subscribe { note in notes.lock.withLock { notes.items.append(note) } }
        addTeardownBlock { host.notifications.unsubscribe(token) }
        return notes
    }
}

/// The prefetch engine end to end: a catalog service and file server on 127.0.0.1
/// (PrefetchTestService) reached through the bundled http-content-provider, the catalog in SQLite
/// in a temporary data directory, real downloads with AsyncHTTPClient: settings, registration,
/// syncs and downloads, partial and thumbnail-only downloads. The fault cases are in
/// PrefetchFaultTests, the items once known in PrefetchItemTests.
final class PrefetchTests: PrefetchEngineTestCase {
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
}
