import Foundation
import GRDB
import HubHostKit

/// A generated content bundle for `hubhost bench hub`: `hubs` hubs, `channelsPerHub` channels each,
/// `articles` articles spread evenly, every item tagged from a vocabulary of `tagCount` tags, so
/// that tailoring has real work to do. Deterministic (seeded), written straight into SQLite.
struct SyntheticBundle {
    var hubs: Int
    var channelsPerHub: Int
    var articles: Int
    var tagCount: Int = 200

    func tag(_ index: UInt64) -> String { "tag\(index % UInt64(tagCount))" }

    /// Writes the bundle to `path` and returns the article ids, in bundle order.
    @discardableResult
    func write(to path: String) throws -> [String] {
        try? FileManager.default.removeItem(atPath: path)
        var generator = SplitMix(seed: 7)
        var ids: [String] = []
        ids.reserveCapacity(articles)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: ContentBundle.schema)
            for (key, value) in [
                (ContentBundle.MetadataKey.version, "bench"), (ContentBundle.MetadataKey.created, "2026-11-22T00:00:00Z"),
                (ContentBundle.MetadataKey.contentSource, "hubhost bench"), (ContentBundle.MetadataKey.formatVersion, "1")
            ] {
                try db.execute(sql: "INSERT INTO metadata VALUES (?, ?)", arguments: [key, value])
            }
            func tags(_ n: Int) -> String {
                "[" + (0..<n).map { _ in "\"\(tag(generator.next()))\"" }.joined(separator: ",") + "]"
            }
            let hubStatement = try db.makeStatement(sql: "INSERT INTO hubs VALUES (?, ?, ?, ?)")
            let channelStatement = try db.makeStatement(sql: "INSERT INTO channels VALUES (?, ?, ?, ?, ?)")
            let articleStatement = try db.makeStatement(sql: "INSERT INTO articles VALUES (?, ?, ?, ?, ?, ?, ?)")
            let channels = hubs * channelsPerHub
            for h in 0..<hubs {
                try hubStatement.execute(arguments: ["hub\(h)", "Hub \(h)", tags(3), h])
                for c in 0..<channelsPerHub {
                    let channelID = "hub\(h)/channel\(c)"
                    try channelStatement.execute(arguments: [channelID, "hub\(h)", "Channel \(c) of hub \(h)", tags(2), c])
                    let index = h * channelsPerHub + c
                    let count = articles / channels + (index < articles % channels ? 1 : 0)
                    for a in 0..<count {
                        let id = "\(channelID)/article\(a)"
                        ids.append(id)
                        let body = "<h1>Article \(a)</h1><p>" + String(repeating: "Words of article \(a) in \(channelID). ", count: 8) + "</p>"
                        try articleStatement.execute(arguments: [
                            id, channelID, "Article \(a) of \(channelID)", tags(3), a, body,
                            "https://example.com/\(id)"
                        ])
                    }
                }
            }
        }
        return ids
    }
}
