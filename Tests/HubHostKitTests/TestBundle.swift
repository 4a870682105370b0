import Foundation
import GRDB
import XCTest

@testable import HubHostKit

/// Writes content bundles for tests straight into SQLite (ContentBundle.schema), without the
/// builder or a signature, for tests of what happens after verification (tailoring, pages, users).
///
///     let path = try TestBundle.write(to: folder + "/b.sqlite3", hubs: [
///         .init("news", tags: ["news"], channels: [.init("sports", articles: [.init("final", tags: ["football"])])]),
///     ])
enum TestBundle {
    struct Article {
        var name: String, title: String, tags: [String], body: String, sourceURL: String?
        init(_ name: String, title: String? = nil, tags: [String] = [], body: String? = nil, sourceURL: String? = nil) {
            self.name = name
            self.title = title ?? name.capitalized
            self.tags = tags
            self.body = body ?? "<p>\(name) body</p>"
            self.sourceURL = sourceURL
        }
    }
    struct Channel {
        var name: String, title: String, tags: [String], articles: [Article]
        init(_ name: String, title: String? = nil, tags: [String] = [], articles: [Article] = []) {
            self.name = name
            self.title = title ?? name.capitalized
            self.tags = tags
            self.articles = articles
        }
    }
    struct Hub {
        var name: String, title: String, tags: [String], channels: [Channel]
        init(_ name: String, title: String? = nil, tags: [String] = [], channels: [Channel] = []) {
            self.name = name
            self.title = title ?? name.capitalized
            self.tags = tags
            self.channels = channels
        }
    }

    /// Two hubs: `news` (tagged news; channel `sports` with `a` golf, `b` football, `c` both) and
    /// `food` (tagged cooking and recipes; channel `baking` with `bread`).
    static let newsAndFood: [Hub] = [
        .init(
            "news", tags: ["news"],
            channels: [
                .init(
                    "sports",
                    articles: [
                        .init("a", tags: ["golf"], sourceURL: "https://example.com/golf?id=1"),
                        .init("b", tags: ["football"]), .init("c", tags: ["football", "golf"])
                    ])
            ]),
        .init("food", tags: ["cooking", "recipes"], channels: [.init("baking", articles: [.init("bread", tags: ["cooking", "baking"])])])
    ]

    /// A host on `manifest` (written to `folder/plugins.yaml`) whose hub has the bundle of `hubs` and
    /// `notifications` active (written once, to `folder/bundle.sqlite3`); shut down when `test` ends.
    static func host(
        in folder: String, manifest: String, for test: XCTestCase, hubs: [Hub],
        notifications: [ContentBundle.ScheduledNotification] = []
    ) throws -> (HubHost, HubEngine) {
        try TestSupport.write(manifest, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        test.addTeardownBlock { host.shutdown() }
        let hub = try XCTUnwrap(try host.hub())
        let path = folder + "/bundle.sqlite3"
        if !FileManager.default.fileExists(atPath: path) { try write(to: path, hubs: hubs, notifications: notifications) }
        hub.activate(try ContentBundle(path: path))
        return (host, hub)
    }

    /// Writes the bundle (positions follow the arrays' order) and returns `path`.
    @discardableResult
    static func write(
        to path: String, version: String = "1", hubs: [Hub],
        resources: [(path: String, mimeType: String, data: Data)] = [],
        notifications: [ContentBundle.ScheduledNotification] = []
    ) throws -> String {
        try? FileManager.default.removeItem(atPath: path)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: ContentBundle.schema)
            for (key, value) in [
                (ContentBundle.MetadataKey.version, version), (ContentBundle.MetadataKey.created, "2026-11-22T00:00:00Z"),
                (ContentBundle.MetadataKey.contentSource, "tests"), (ContentBundle.MetadataKey.formatVersion, "1")
            ] {
                try db.execute(sql: "INSERT INTO metadata VALUES (?, ?)", arguments: [key, value])
            }
            func json(_ tags: [String]) -> String { String(data: try! JSONSerialization.data(withJSONObject: tags), encoding: .utf8)! }
            for (h, hub) in hubs.enumerated() {
                try db.execute(sql: "INSERT INTO hubs VALUES (?, ?, ?, ?)", arguments: [hub.name, hub.title, json(hub.tags), h])
                for (c, channel) in hub.channels.enumerated() {
                    let channelID = "\(hub.name)/\(channel.name)"
                    try db.execute(
                        sql: "INSERT INTO channels VALUES (?, ?, ?, ?, ?)", arguments: [channelID, hub.name, channel.title, json(channel.tags), c])
                    for (a, article) in channel.articles.enumerated() {
                        try db.execute(
                            sql: "INSERT INTO articles VALUES (?, ?, ?, ?, ?, ?, ?)",
                            arguments: [
                                "\(channelID)/\(article.name)", channelID, article.title, json(article.tags), a, article.body, article.sourceURL
                            ])
                    }
                }
            }
            for resource in resources {
                try db.execute(sql: "INSERT INTO resources VALUES (?, ?, ?)", arguments: [resource.path, resource.mimeType, resource.data])
            }
            for n in notifications {
                try db.execute(sql: "INSERT INTO notifications VALUES (?, ?, ?, ?)", arguments: [n.id, n.fireAtMs, n.message, n.actionURI])
            }
        }
        return path
    }
}
