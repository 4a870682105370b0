import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// (c) Content bundles: a valid bundle, damaged at the byte level (`bundle-bytes`: bit flips, bytes,
/// truncation, zeroed or swapped pages) or at the SQL level (`bundle-rows`: a table rebuilt without
/// its constraints, holding a value of the wrong type), opened with ContentBundle and read through
/// every accessor: an OpenError or a bundle, never a trap.
final class BundleFuzz: FuzzTarget {
    let base: [UInt8]
    static let pageSize = 4096

    override init(name: String, work: String) throws {
        let path = work + "/base.sqlite3"
        try TestBundle.write(
            to: path, version: "fuzz-1",
            hubs: [
                .init(
                    "news", tags: ["news", "daily"],
                    channels: [
                        .init(
                            "sports", tags: ["sport"],
                            articles: [
                                .init("final", tags: ["football"], sourceURL: "https://example.com/final"),
                                .init("derby", tags: [])
                            ]),
                        .init("tech", articles: [.init("chips", tags: ["hw"], body: "<p>chips</p>")])
                    ]),
                .init("cooking", channels: [.init("soup", articles: [.init("onion", tags: ["veg"])])])
            ],
            resources: [
                (path: "resources/site.css", mimeType: "text/css", data: Data("body{}".utf8)),
                (path: "resources/dot.svg", mimeType: "image/svg+xml", data: Data("<svg/>".utf8))
            ],
            notifications: [.init(id: "n1", fireAtMs: 1_402_358_400_000, message: "hello", actionURI: "zbimdb://article/news/sports/final")])
        base = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        try super.init(name: name, work: work)
        _ = try ContentBundle(path: path)  // the base is a bundle
    }

    static let wrongValues = [
        "NULL", "'x'", "X'FF00FE'", "1e300", "-1e300", "9223372036854775807", "-9223372036854775808", "0.5", "''",
        "'[1, 2]'", "'{}'", "'[\"a\", null]'", "'not json'", "zeroblob(10)", "'\u{FFFD}'"
    ]
    static let columns: [(table: String, columns: [String])] = [
        ("metadata", ["key", "value"]), ("hubs", ["id", "title", "tags", "position"]),
        ("channels", ["id", "hub_id", "title", "tags", "position"]),
        ("articles", ["id", "channel_id", "title", "tags", "position", "body_html", "source_url"]),
        ("resources", ["path", "mime_type", "data"]), ("notifications", ["id", "fire_at_ms", "message", "action_uri"])
    ]

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        if name == "bundle-rows" {
            // SQL-level: "S" + the statements to run on a copy of the base.
            let table = random.pick(Self.columns)
            var sql = [
                "PRAGMA foreign_keys = OFF", "CREATE TABLE t AS SELECT * FROM \(table.table)", "DROP TABLE \(table.table)",
                "ALTER TABLE t RENAME TO \(table.table)"
            ]
            for _ in 0..<random.int(1...2) {
                sql.append(
                    "UPDATE \(table.table) SET \(random.pick(table.columns)) = \(random.pick(Self.wrongValues))"
                        + (random.chance(50) ? " WHERE rowid = (SELECT min(rowid) FROM \(table.table))" : ""))
            }
            return Data(("S" + sql.joined(separator: ";\n")).utf8)
        }
        var bytes = base
        for _ in 0..<random.int(1...3) {
            let pages = bytes.count / Self.pageSize  // per mutation: an earlier one may have cut the file
            switch random.int(0...9) {
            case 0: bytes = Array(bytes.prefix(random.int(0...bytes.count)))
            case 1 where pages > 1:
                let page = random.int(1...(pages - 1)) * Self.pageSize
                for i in page..<min(bytes.count, page + Self.pageSize) { bytes[i] = 0 }
            case 2 where pages > 2:
                let a = random.int(1...(pages - 1)) * Self.pageSize
                let b = random.int(1...(pages - 1)) * Self.pageSize
                guard b + Self.pageSize <= bytes.count, a + Self.pageSize <= bytes.count else { continue }
                let pageA = Array(bytes[a..<a + Self.pageSize])
                bytes.replaceSubrange(a..<a + Self.pageSize, with: bytes[b..<b + Self.pageSize])
                bytes.replaceSubrange(b..<b + Self.pageSize, with: pageA)
            case 3, 4:
                // A page header or cell pointer (the first bytes of a page), or the file header.
                let page = random.int(0...max(0, pages - 1)) * Self.pageSize + (random.chance(20) ? 0 : 100)
                let offset = min(bytes.count - 1, page + random.int(0...23))
                if offset >= 0 {
                    bytes[offset] = random.chance(50) ? random.pick(Mutator.interestingBytes) : UInt8(truncatingIfNeeded: random.next())
                }
            default:
                guard !bytes.isEmpty else { continue }
                for _ in 0..<random.int(1...8) {
                    let offset = random.int(0...(bytes.count - 1))
                    bytes[offset] ^= UInt8(1) << UInt8(random.int(0...7))
                }
            }
        }
        return Data("B".utf8) + Data(bytes)
    }

    override func check(_ input: Data, index: Int) -> String? {
        let path = work + "/case.sqlite3"
        try? FileManager.default.removeItem(atPath: path)
        if input.first == UInt8(ascii: "S") {
            FuzzTarget.write(Data(base), to: path)
            do {
                let queue = try DatabaseQueue(path: path)
                try queue.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY")  // a scratch file: no syncs
                    try db.execute(sql: String(decoding: input.dropFirst(), as: UTF8.self))
                }
                try queue.close()
            } catch {
                return "the SQL-level damage could not be written: \(error)"
            }
        } else {
            FuzzTarget.write(input.dropFirst(), to: path)
        }
        let bundle: ContentBundle
        do { bundle = try ContentBundle(path: path) } catch is ContentBundle.OpenError { return nil } catch {
            return "ContentBundle threw \(type(of: error)), not OpenError: \(error)"
        }
        // Opened: every accessor answers (or says nil) without trapping.
        for hub in bundle.hubs {
            _ = bundle.hub(hub.id)
            for channel in hub.channels {
                _ = bundle.channel(channel.id)
                for article in channel.articles {
                    _ = bundle.article(article.id)
                    _ = bundle.body(ofArticle: article.id)
                    if let url = article.sourceURL { _ = bundle.article(sourceURL: url) }
                }
            }
        }
        _ = bundle.article(sourceURL: "https://example.com/final")
        for resource in bundle.resourcePaths() { _ = bundle.resource(resource) }
        _ = bundle.resource("resources/site.css")
        _ = bundle.notifications.map(\.fireAtMs)
        return nil
    }
}
