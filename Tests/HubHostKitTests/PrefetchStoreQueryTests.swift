import Foundation
import GRDB
import XCTest

@testable import HubHostKit

/// The catalog store's item queries: items and their category links read by two cached
/// statements (the links by a JSON array of the ids found), on a real SQLite file.
final class PrefetchStoreQueryTests: XCTestCase {
    private func item(_ i: Int, categories: [String]) -> PrefetchItem {
        PrefetchItem(
            uniqueId: "u\(i)", contentId: "k\(i)", sourceName: "s\(i % 3)", categories: categories, title: "title \(i)", summary: "",
            shareURL: nil, type: nil, state: .discovered, downloadError: nil, waitReason: nil, retryAtMs: nil, attempts: 0,
            downloadBehavior: nil, userInitiated: false, bytesDownloaded: 0, size: 10, files: [], persistentUserInfo: [:],
            sdkMetadataPassthrough: nil, expiryMs: nil, saved: false, locked: false, viewed: false, discoveredMs: Int64(i),
            updatedMs: Int64(i))
    }

    func testEveryItemGetsItsOwnCategoriesInOrderAcrossRepeatedQueries() throws {
        let folder = NSTemporaryDirectory() + "hubhost-prefetch-store-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try PrefetchStore(path: folder + "/prefetch.sqlite")
        // 1,200 items (more than any chunk of ids), categories given out of order, some shared,
        // one item with none, and ids that need JSON escaping.
        var expected: [String: [String]] = [:]
        try store.pool.write { db in
            for i in 0..<1_200 {
                let categories = i == 7 ? [] : ["c\((i * 7) % 11)", "b\(i % 5)", "a\(i % 3)"]
                var item = item(i, categories: categories)
                if i == 9 { item.uniqueId = "u\"9\\ é" }
                try PrefetchStore.write(db, item)
                expected[item.uniqueId] = Array(Set(categories)).sorted()
            }
        }
        for _ in 0..<3 {  // the second and third runs go through the cached statements
            let all = try store.items()
            XCTAssertEqual(all.count, 1_200)
            XCTAssertEqual(all.map(\.uniqueId), all.sorted { $0.discoveredMs < $1.discoveredMs }.map(\.uniqueId))
            for item in all { XCTAssertEqual(item.categories, expected[item.uniqueId], item.uniqueId) }
            let limited = try store.items(where: "source_name = ?", arguments: ["s1"], limit: 5)
            XCTAssertEqual(limited.map(\.uniqueId), ["u1", "u4", "u7", "u10", "u13"])
            XCTAssertEqual(limited.map(\.categories), limited.map { expected[$0.uniqueId]! })
            XCTAssertEqual(try store.items(where: "source_name = ?", arguments: ["none"]), [])
        }
        XCTAssertEqual(try store.item("u\"9\\ é")?.categories, expected["u\"9\\ é"])
    }
}
