import Foundation
import XCTest

@testable import HubHostKit

/// Category and source filters and their live sets, and the merge of an imported
/// item with the catalog's entry for the same content: the engine on a real SQLite catalog, synced
/// from PrefetchTestService on 127.0.0.1 through the bundled http-content-provider.
final class PrefetchSetsTests: PrefetchTestCase {
    private final class Recorded: @unchecked Sendable {
        private let lock = NSLock()
        private var notes: [HostNotification] = []
        func add(_ note: HostNotification) { lock.withLock { notes.append(note) } }
        var all: [HostNotification] { lock.withLock { notes } }
    }

    private func engine(_ prefetch: String = "") throws -> (HubHost, PrefetchEngine) {
        try openEngine(prefetchManifest(", license: good-licence, retry_delay: 0.05, read_timeout: 1" + prefetch))
    }

    private func item(
        _ id: String, content: String, source: String, categories: [String], title: String, file: String = "x.mp4",
        size: Int = 1000, sha: String? = nil, thumbnail: Bool = false, type: String = "video"
    ) -> String {
        let digest = sha.map { #", "sha256": "\#($0)""# } ?? ""
        let thumb = thumbnail ? #", {"role": "thumbnail", "url": "\#(service.fileURL("t.jpg"))"}"# : ""
        return """
            {"unique_id": "\(id)", "content_id": "\(content)", "source": "\(source)", "categories": [\(categories.map { "\"\($0)\"" }.joined(separator: ","))],
             "title": "\(title)", "type": "\(type)", "files": [{"role": "main", "url": "\(service.fileURL(file))", "size": \(size)\(digest)}\(thumb)]}
            """
    }

    /// Four categories (sport > football, news, an empty weather), three sources (beta has no items).
    private func catalog() {
        service.lock.withLock {
            service.pages[""] = """
                {"cursor": "c1",
                 "sources": [{"name": "acme", "display_name": "Acme TV"}, {"name": "zed", "display_name": "Zed Radio"},
                             {"name": "beta", "display_name": "Beta", "subscribed": false}],
                 "categories": [{"id": "news", "name": "News"}, {"id": "sport", "name": "Sport"},
                                {"id": "football", "name": "Football", "parent": "sport"}, {"id": "weather", "name": "Weather", "selected": false}],
                 "items": [\(item("a", content: "1", source: "acme", categories: ["news"], title: "Alpha")),
                           \(item("b", content: "2", source: "zed", categories: ["football", "sport"], title: "Beta", type: "audio"))]}
                """
        }
    }

    func testCategoryFiltersSelectedWithContentSubcategoriesSearchSourceAndSort() throws {
        catalog()
        let (_, engine) = try engine(", item_download_behavior: none")
        try engine.register()
        try engine.sync()
        func ids(_ filter: PrefetchCategoryFilter) throws -> [String] { try engine.categories(filter).map(\.id) }
        XCTAssertEqual(try ids(PrefetchCategoryFilter()), ["football", "news", "sport", "weather"], "all, by id")
        XCTAssertEqual(try ids(PrefetchCategoryFilter(sort: [.init(field: .name, descending: true)])), ["weather", "sport", "news", "football"])
        XCTAssertEqual(try ids(.selected()), ["football", "news", "sport"], "the server's selected: false seeds weather")
        XCTAssertEqual(try ids(PrefetchCategoryFilter(selected: false)), ["weather"])
        XCTAssertEqual(try ids(PrefetchCategoryFilter(withContent: true)), ["football", "news", "sport"])
        XCTAssertEqual(try ids(.subCategories(of: "sport")), ["football"])
        XCTAssertEqual(try ids(PrefetchCategoryFilter(search: "FOOT")), ["football"], "search ignores case")
        XCTAssertEqual(try ids(PrefetchCategoryFilter(search: "e")), ["news", "weather"])
        XCTAssertEqual(try ids(PrefetchCategoryFilter(source: "zed")), ["football", "sport"], "the categories of a source's items")
        XCTAssertEqual(try ids(PrefetchCategoryFilter(source: "beta")), [])
        XCTAssertEqual(try ids(PrefetchCategoryFilter(ids: ["news", "weather", "none"])), ["news", "weather"])
        XCTAssertEqual(try ids(PrefetchCategoryFilter(sort: [.init(field: .name)], limit: 2)), ["football", "news"])
        XCTAssertNil(PrefetchCategoryFilter.Sort("size"), "not a category field")
        XCTAssertEqual(PrefetchCategoryFilter.Sort("name:desc"), .init(field: .name, descending: true))
        // The seed's video filters: items of type video (videosInStates:withCategory: and the like).
        XCTAssertEqual(try engine.items(PrefetchItemFilter(types: ["video"])).map(\.uniqueId), ["a"])
        XCTAssertEqual(
            try engine.items(PrefetchItemFilter(states: [.discovered], category: "sport", types: ["audio", "video"])).map(\.uniqueId), ["b"])
        XCTAssertEqual(try engine.items(PrefetchItemFilter(category: "news", types: ["audio"])).map(\.uniqueId), [])

        // The user's toggles: answers per id, an unknown id refused; the next sync does not undo them.
        let answers = try engine.setSelected(["news", "nope"], false)
        XCTAssertEqual(answers.map(\.accepted), [true, false])
        XCTAssertTrue(answers[1].reason?.contains("no category 'nope'") ?? false, "\(answers)")
        XCTAssertEqual(try ids(.selectedWithContent()), ["football", "sport"])
        service.lock.withLock { service.pages["c1"] = #"{"cursor": "c2", "categories": [{"id": "news", "name": "News!", "selected": true}]}"# }
        try engine.sync()
        XCTAssertEqual(try engine.categories(PrefetchCategoryFilter(ids: ["news"])).first?.selected, false, "the user's choice stays")
        XCTAssertEqual(try engine.categories(PrefetchCategoryFilter(ids: ["news"])).first?.name, "News!")
        // A deleted item no longer gives its categories content.
        _ = try engine.delete(["a"])
        XCTAssertEqual(try ids(PrefetchCategoryFilter(withContent: true)), ["football", "sport"])
    }

    /// The suggestions filter: the categories the service marks `suggested`, its value at every
    /// sync (unlike `selected`, which is the user's); a live set of suggestions follows it.
    func testTheSuggestionsFilterFollowsTheServiceAndItsLiveSetAnnouncesChanges() async throws {
        service.lock.withLock {
            service.pages[""] = """
                {"cursor": "c1", "sources": [{"name": "acme"}],
                 "categories": [{"id": "news", "name": "News", "suggested": true}, {"id": "sport", "name": "Sport"},
                                {"id": "weather", "name": "Weather", "suggested": true, "selected": false}],
                 "items": [\(item("a", content: "1", source: "acme", categories: ["news"], title: "Alpha"))]}
                """
        }
        let (_, engine) = try engine(", item_download_behavior: none")
        try engine.register()
        try engine.sync()
        XCTAssertEqual(try engine.categories(.suggestions()).map(\.id), ["news", "weather"])
        XCTAssertEqual(try engine.categories(PrefetchCategoryFilter(suggested: false)).map(\.id), ["sport"])
        XCTAssertEqual(try engine.categories(PrefetchCategoryFilter(selected: true, suggested: true)).map(\.id), ["news"], "filters combine")
        XCTAssertEqual(try engine.categories(PrefetchCategoryFilter(ids: ["sport"])).first?.suggested, false)
        var live = engine.watchCategories(.suggestions(sort: [.init(field: .name)]), pollInterval: 3600).makeAsyncIterator()
        let initial = await live.next()
        XCTAssertEqual(initial?.added, ["news", "weather"])
        // The service's next answer suggests sport instead of news.
        service.lock.withLock {
            service.pages["c1"] =
                #"{"cursor": "c2", "categories": [{"id": "news", "name": "News"}, {"id": "sport", "name": "Sport", "suggested": true}]}"#
        }
        _ = try await BlockingPool.run { try engine.sync() }
        var synced: PrefetchCategorySetChange?
        for _ in 0..<10 {
            guard let change = await live.next() else { break }
            if change.phase == .didChange {
                synced = change
                break
            }
        }
        XCTAssertEqual(synced?.added, ["sport"])
        XCTAssertEqual(synced?.removed, ["news"])
        XCTAssertEqual(synced?.categories.map(\.id), ["sport", "weather"])
    }

    func testSourceFiltersSubscribedSearchCategoryWithContentAndSort() throws {
        catalog()
        let (_, engine) = try engine(", item_download_behavior: none")
        try engine.register()
        try engine.sync()
        func names(_ filter: PrefetchSourceFilter) throws -> [String] { try engine.sources(filter).map(\.name) }
        XCTAssertEqual(try names(PrefetchSourceFilter()), ["acme", "beta", "zed"])
        XCTAssertEqual(try names(PrefetchSourceFilter(sort: [.init(field: .displayName, descending: true)])), ["zed", "beta", "acme"])
        XCTAssertEqual(try names(.subscribed()), ["acme", "zed"])
        XCTAssertEqual(try names(PrefetchSourceFilter(subscribed: false)), ["beta"])
        XCTAssertEqual(try names(PrefetchSourceFilter(search: "radio")), ["zed"], "display names are searched")
        XCTAssertEqual(try names(PrefetchSourceFilter(category: "football")), ["zed"])
        XCTAssertEqual(try names(PrefetchSourceFilter(withContent: true)), ["acme", "zed"])
        XCTAssertEqual(try names(PrefetchSourceFilter(names: ["beta", "acme"], limit: 1)), ["acme"])
        let answers = try engine.setSubscribed(["beta", "acme", "ghost"], true)
        XCTAssertEqual(answers.map(\.accepted), [true, true, false])
        XCTAssertEqual(answers[1].reason, "nothing to change", "acme was subscribed already")
        XCTAssertEqual(try names(.subscribed()), ["acme", "beta", "zed"])
        _ = try engine.setSubscribed(["zed"], false)
        XCTAssertEqual(try names(PrefetchSourceFilter(subscribed: true, sort: [.init(field: .name, descending: true)])), ["beta", "acme"])
    }

    func testCategoryAndSourceLiveSetsAnnounceTogglesAndSyncedChanges() async throws {
        catalog()
        let (host, engine) = try engine(", item_download_behavior: none")
        try engine.register()
        try engine.sync()
        let recorded = Recorded()
        let token = host.notifications.subscribe { note in recorded.add(note) }
        defer { host.notifications.unsubscribe(token) }
        // A long poll: only the engine's own announcements wake these sets.
        var categories = engine.watchCategories(.selected(sort: [.init(field: .name)]), pollInterval: 3600).makeAsyncIterator()
        var sources = engine.watchSources(.subscribed(), pollInterval: 3600).makeAsyncIterator()
        let initial = await categories.next()
        XCTAssertEqual(initial?.phase, .initial)
        XCTAssertEqual(initial?.added, ["football", "news", "sport"])
        XCTAssertEqual(initial?.categories.map(\.name), ["Football", "News", "Sport"])
        let firstSources = await sources.next()
        XCTAssertEqual(firstSources?.sources.map(\.name), ["acme", "zed"])

        _ = try await BlockingPool.run { try engine.setSelected(["news"], false) }
        let will = await categories.next()
        let did = await categories.next()
        XCTAssertEqual(will?.phase, .willChange)
        XCTAssertEqual(did?.phase, .didChange)
        XCTAssertEqual(did?.removed, ["news"])
        XCTAssertEqual(did?.categories.map(\.id), ["football", "sport"])
        XCTAssertTrue(recorded.all.contains { $0.name == PrefetchNotificationName.catalogChanged })

        // A sync adds a category, renames one and removes one: added, updated, removed in one change.
        service.lock.withLock {
            service.pages["c1"] = """
                {"cursor": "c2", "categories": [{"id": "culture", "name": "Culture"}, {"id": "sport", "name": "Sports"}],
                 "deleted": {"categories": ["football"]}}
                """
        }
        _ = try await BlockingPool.run { try engine.sync() }
        var synced: PrefetchCategorySetChange?
        for _ in 0..<10 {
            guard let change = await categories.next() else { break }
            if change.phase == .didChange {
                synced = change
                break
            }
        }
        XCTAssertEqual(synced?.added, ["culture"])
        XCTAssertEqual(synced?.updated, ["sport"])
        XCTAssertEqual(synced?.removed, ["football"])
        XCTAssertEqual(synced?.categories.map(\.name), ["Culture", "Sports"])

        _ = try await BlockingPool.run { try engine.setSubscribed(["beta"], true) }
        var subscribed: PrefetchSourceSetChange?
        for _ in 0..<10 {
            guard let change = await sources.next() else { break }
            if change.phase == .didChange {
                subscribed = change
                break
            }
        }
        XCTAssertEqual(subscribed?.added, ["beta"])
        XCTAssertEqual(subscribed?.sources.map(\.name), ["acme", "beta", "zed"])
    }

    // MARK: shared live sets

    /// What one listener heard: each change as "phase +added ~updated -removed =items".
    private final class Heard: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func add(_ change: PrefetchSetChange) {
            let line =
                "\(change.phase.rawValue) +\(change.added.joined(separator: ",")) ~\(change.updated.joined(separator: ","))"
                + " -\(change.removed.joined(separator: ",")) =\(change.items.map(\.uniqueId).joined(separator: ","))"
            lock.withLock { lines.append(line) }
        }
        var all: [String] { lock.withLock { lines } }
    }

    func testManyListenersOfOneAndOfDifferentFiltersEachHearExactlyTheirChanges() async throws {
        service.lock.withLock {
            service.pages[""] = """
                {"cursor": "c1", "sources": [{"name": "acme", "display_name": "Acme TV"}],
                 "categories": [{"id": "news", "name": "News"}, {"id": "sport", "name": "Sport"}],
                 "items": [\(item("a", content: "1", source: "acme", categories: ["news"], title: "Alpha")),
                           \(item("b", content: "2", source: "acme", categories: ["news"], title: "Bravo")),
                           \(item("c", content: "3", source: "acme", categories: ["sport"], title: "Charlie")),
                           \(item("d", content: "4", source: "acme", categories: ["sport"], title: "Delta"))]}
                """
        }
        let (_, engine) = try engine(", item_download_behavior: none")
        try engine.register()
        try engine.sync()
        // Three sets, three listeners each; the third is sorted and limited: its window is the
        // first two not-viewed items by title.
        let filters = [
            PrefetchItemFilter(saved: true, sort: [.init(field: .title)]),
            PrefetchItemFilter(category: "news", sort: [.init(field: .title)]),
            PrefetchItemFilter(notViewed: true, sort: [.init(field: .title)], limit: 2)
        ]
        var heard: [[Heard]] = []
        var tasks: [Task<Void, Never>] = []
        for filter in filters {
            var group: [Heard] = []
            for _ in 0..<3 {
                let listener = Heard()
                let stream = engine.watch(filter, pollInterval: 0.05)
                tasks.append(Task { for await change in stream { listener.add(change) } })
                group.append(listener)
            }
            heard.append(group)
        }
        defer { tasks.forEach { $0.cancel() } }
        XCTAssertEqual(engine.liveSets.count, 3, "one set per distinct filter, shared by its listeners")
        try await heardAll(heard, count: [1, 1, 1])
        XCTAssertEqual(heard[0][0].all, ["initial + ~ - ="])
        XCTAssertEqual(heard[1][0].all, ["initial +a,b ~ - =a,b"])
        XCTAssertEqual(heard[2][0].all, ["initial +a,b ~ - =a,b"])

        // Each step: one change, then how many changes (will + did) each set has heard in all.
        let steps: [(PrefetchEngine.Flag, Bool, [String], [Int])] = [
            (.saved, true, ["a"], [3, 3, 3]),  // saved: into set 0; a changed in 1 and 2
            (.viewed, true, ["a"], [5, 5, 5]),  // a leaves the window of 2, c comes in
            (.saved, false, ["a"], [7, 7, 5]),  // out of 0; not in 2's window any more: nothing there
            (.saved, true, ["d"], [9, 7, 5]),  // into 0 only
            (.viewed, false, ["a"], [9, 9, 7]),  // a back in 2's window, c out; not in 0
            (.locked, true, ["a", "d"], [11, 11, 9])
        ]
        for (flag, value, ids, counts) in steps {
            let answers = try await BlockingPool.run { engine.set(flag, value, on: ids) }
            XCTAssertEqual(answers.map(\.accepted), ids.map { _ in true })
            try await heardAll(heard, count: counts)
        }
        let expected = [
            [
                "initial + ~ - =",
                "willChange +a ~ - =a", "didChange +a ~ - =a",
                "willChange + ~a - =a", "didChange + ~a - =a",
                "willChange + ~ -a =", "didChange + ~ -a =",
                "willChange +d ~ - =d", "didChange +d ~ - =d",
                "willChange + ~d - =d", "didChange + ~d - =d"
            ],
            [
                "initial +a,b ~ - =a,b",
                "willChange + ~a - =a,b", "didChange + ~a - =a,b",
                "willChange + ~a - =a,b", "didChange + ~a - =a,b",
                "willChange + ~a - =a,b", "didChange + ~a - =a,b",
                "willChange + ~a - =a,b", "didChange + ~a - =a,b",
                "willChange + ~a - =a,b", "didChange + ~a - =a,b"
            ],
            [
                "initial +a,b ~ - =a,b",
                "willChange + ~a - =a,b", "didChange + ~a - =a,b",
                "willChange +c ~ -a =b,c", "didChange +c ~ -a =b,c",
                "willChange +a ~ -c =a,b", "didChange +a ~ -c =a,b",
                "willChange + ~a - =a,b", "didChange + ~a - =a,b"
            ]
        ]
        for (set, group) in heard.enumerated() {
            for listener in group { XCTAssertEqual(listener.all, expected[set], "set \(set)") }
        }
        tasks.forEach { $0.cancel() }
        for _ in 0..<200 where engine.liveSets.count > 0 { try await Task.sleep(nanoseconds: 10_000_000) }
        XCTAssertEqual(engine.liveSets.count, 0, "a set stops with its last listener")
    }

    /// Waits (bounded) until every listener of set i has heard count[i] changes, and not more.
    private func heardAll(_ heard: [[Heard]], count: [Int]) async throws {
        for _ in 0..<1000 {
            if heard.enumerated().allSatisfy({ set, group in group.allSatisfy { $0.all.count >= count[set] } }) { break }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        for (set, group) in heard.enumerated() {
            for listener in group { XCTAssertEqual(listener.all.count, count[set], "set \(set): \(listener.all)") }
        }
    }

    // MARK: import merge

    func testImportMergesWithTheCatalogEntryKeepingItsVerifiedFileAndFlags() throws {
        let data = Data((0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 11) })
        let thumb = Data("thumb".utf8)
        service.lock.withLock {
            service.files["x.mp4"] = data
            service.files["t.jpg"] = Data("server thumb".utf8)
        }
        let (host, engine) = try engine(", item_download_behavior: full_auto")
        let recorded = Recorded()
        let token = host.notifications.subscribe { note in recorded.add(note) }
        defer { host.notifications.unsubscribe(token) }
        try data.write(to: URL(fileURLWithPath: folder + "/app.mp4"))
        try thumb.write(to: URL(fileURLWithPath: folder + "/app.jpg"))
        let imported = try engine.addDownloadedItem(
            PrefetchImportMetadata(
                contentId: "354", provider: "acme", downloadStatus: .fullyDownloaded,
                filePath: folder + "/app.mp4", size: 30_000, title: "Old title",
                thumbFile: folder + "/app.jpg"))
        XCTAssertEqual(imported.uniqueId, "acme:354")
        _ = engine.set(.saved, true, on: ["acme:354"])
        _ = engine.set(.locked, true, on: ["acme:354"])
        _ = try engine.recordConsumption("acme:354", date: Date(), start: 0, end: 5)
        try engine.setPersistentUserInfo("acme:354", ["shelf": .string("favourites")])

        service.lock.withLock {
            service.pages[""] = """
                {"cursor": "c1", "sources": [{"name": "acme"}], "categories": [{"id": "news"}],
                 "items": [\(item("srv-354", content: "354", source: "acme", categories: ["news"], title: "Server title", size: 30_000,
                                  sha: SHA256.hex(of: data), thumbnail: true))]}
                """
        }
        try engine.register()
        let report = try engine.sync()
        XCTAssertEqual(report.merged, ["acme:354": "srv-354"])
        XCTAssertNil(try engine.item("acme:354"), "the imported item became the catalog's")
        let merged = try XCTUnwrap(try engine.item("srv-354"))
        XCTAssertEqual(merged.state, .cached)
        XCTAssertEqual(merged.title, "Server title")
        XCTAssertEqual(merged.categories, ["news"])
        XCTAssertTrue(merged.saved && merged.locked && merged.viewed)
        XCTAssertEqual(merged.persistentUserInfo["shelf"], .string("favourites"))
        XCTAssertEqual(merged.bytesDownloaded, 30_000 + Int64(thumb.count))
        let main = try XCTUnwrap(merged.files.first { $0.role == "main" })
        XCTAssertTrue(main.done)
        XCTAssertTrue(main.localPath.hasPrefix(folder + "/data/prefetch/items/srv-354/"), main.localPath)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: main.localPath)), data)
        let thumbnail = try XCTUnwrap(merged.files.first { $0.role == "thumbnail" })
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: thumbnail.localPath)), thumb, "the app's thumbnail takes the catalog's place")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/data/prefetch/items/acme:354"), "the import's folder is gone")
        // Nothing was downloaded, now or by the next rounds.
        try engine.round()
        XCTAssertEqual(service.sent("x.mp4"), 0)
        XCTAssertEqual(try engine.item("srv-354")?.state, .cached)
        let mergedNote = recorded.all.first { $0.name == PrefetchNotificationName.importMerged }
        XCTAssertEqual(mergedNote?.payload["imported"], .string("acme:354"))
        XCTAssertEqual(mergedNote?.payload["keptFile"], .bool(true))
        // The consumption record follows the item.
        let records = try engine.store.pool.read { db in try String.fetchAll(db, sql: "SELECT item_id FROM consumption") }
        XCTAssertEqual(records, ["srv-354"])
    }

    func testImportMergeWithAMismatchDiscardsTheFileAndDownloadsTheCatalogs() throws {
        let server = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 3) })
        let appCopy = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 5) })  // same size, other bytes
        service.lock.withLock {
            service.files["x.mp4"] = server
            service.files["y.mp4"] = server
        }
        let (_, engine) = try engine(", item_download_behavior: full_auto")
        try appCopy.write(to: URL(fileURLWithPath: folder + "/app.mp4"))
        try appCopy.prefix(19_000).write(to: URL(fileURLWithPath: folder + "/short.mp4"))
        _ = try engine.addDownloadedItem(
            PrefetchImportMetadata(
                contentId: "1", provider: "acme", downloadStatus: .fullyDownloaded,
                filePath: folder + "/app.mp4", size: 20_000))
        _ = try engine.addDownloadedItem(
            PrefetchImportMetadata(
                contentId: "2", provider: "acme", downloadStatus: .fullyDownloaded,
                filePath: folder + "/short.mp4"))
        _ = engine.set(.saved, true, on: ["acme:1", "acme:2"])
        service.lock.withLock {
            service.pages[""] = """
                {"cursor": "c1", "sources": [{"name": "acme"}], "categories": [{"id": "news"}],
                 "items": [\(item("s1", content: "1", source: "acme", categories: ["news"], title: "One", file: "x.mp4", size: 20_000,
                                  sha: SHA256.hex(of: server))),
                           \(item("s2", content: "2", source: "acme", categories: ["news"], title: "Two", file: "y.mp4", size: 20_000))]}
                """
        }
        try engine.register()
        let report = try engine.sync()
        XCTAssertEqual(report.merged, ["acme:1": "s1", "acme:2": "s2"])
        for id in ["s1", "s2"] {
            let item = try XCTUnwrap(try engine.item(id))
            XCTAssertEqual(item.state, .discovered, "\(id): a sha256 (s1) or size (s2) mismatch keeps no file")
            XCTAssertTrue(item.saved, id)
            XCTAssertFalse(item.files.contains { $0.done }, id)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/data/prefetch/items/acme:1"))
        // Policy downloads the catalog's file, verified as any download.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, try engine.items(PrefetchItemFilter(states: [.cached])).count < 2 {
            try engine.round()
            Thread.sleep(forTimeInterval: 0.05)
        }
        for id in ["s1", "s2"] {
            let item = try XCTUnwrap(try engine.item(id))
            XCTAssertEqual(item.state, .cached, id)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: item.files[0].localPath)), server, id)
        }
        XCTAssertEqual(service.sent("x.mp4") + service.sent("y.mp4"), 40_000)
    }
}
