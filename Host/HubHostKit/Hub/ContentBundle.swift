import Foundation
import GRDB
import Synchronization

/// A content bundle: one SQLite file (the ZBiM SDK's contentDB.sqlite3) holding one content source's
/// hubs, channels and articles, the resources the articles use (CSS, images), its metadata and the
/// local notifications it schedules. `hubhost bundle build` writes one; the hub engine reads the
/// active one. The bundle is opened read-only: nothing here ever changes a verified file.
///
/// Ids are paths: hub `news`, channel `news/sports`, article `news/sports/final-score` (the
/// folder and file names the bundle was built from), so `zbimdb://article/news/sports/final-score`
/// names an article.
/// Sendable: every field is a `let` of a Sendable type (GRDB's DatabaseQueue serialises every access
/// to the bundle file), and the static serial counter lives in a Mutex.
public final class ContentBundle: Sendable {
    /// The bundle's tables. `tags` columns hold a JSON array of strings; `position` is the order the
    /// author gave (front matter `order`, then name), which is the "bundle order" ties fall back to.
    public static let schema = """
        CREATE TABLE metadata (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
        CREATE TABLE hubs (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '[]',
                           position INTEGER NOT NULL);
        CREATE TABLE channels (id TEXT PRIMARY KEY NOT NULL, hub_id TEXT NOT NULL REFERENCES hubs(id), title TEXT NOT NULL,
                               tags TEXT NOT NULL DEFAULT '[]', position INTEGER NOT NULL);
        CREATE TABLE articles (id TEXT PRIMARY KEY NOT NULL, channel_id TEXT NOT NULL REFERENCES channels(id),
                               title TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '[]', position INTEGER NOT NULL,
                               body_html TEXT NOT NULL, source_url TEXT);
        CREATE INDEX articles_by_source_url ON articles(source_url);
        CREATE TABLE resources (path TEXT PRIMARY KEY NOT NULL, mime_type TEXT NOT NULL, data BLOB NOT NULL);
        CREATE TABLE notifications (id TEXT PRIMARY KEY NOT NULL, fire_at_ms INTEGER NOT NULL, message TEXT NOT NULL,
                                    action_uri TEXT NOT NULL);
        """

    /// `metadata` keys.
    public enum MetadataKey {
        /// The author's version string (`bundle.yaml` `version`; default: the build time), e.g. "2026.11.22-1".
        public static let version = "version"  // the author's version string, e.g. "2026.11.22-1"
        /// When the bundle was built: ISO 8601, UTC. A bundle created before the active one is refused when installed.
        public static let created = "created"  // ISO 8601, UTC
        /// The content source's name (`bundle.yaml` `content_source`; default: the content folder's name).
        public static let contentSource = "content_source"  // the content source's name
        /// The version of `schema` the file follows: "1".
        public static let formatVersion = "format"  // this schema's version: "1"
    }

    /// The bundle's `metadata` table, as read when it was opened; a key it lacks reads as "".
    public struct Metadata: Codable, Equatable, Sendable {
        /// The author's version string (`MetadataKey.version`), e.g. "2026.11.22-1".
        public var version: String
        /// When the bundle was built (`MetadataKey.created`): ISO 8601, UTC.
        public var created: String
        /// The content source's name (`MetadataKey.contentSource`).
        public var contentSource: String
    }

    /// A hub: a top-level folder of the content, with its channels.
    public struct Hub: Codable, Equatable, Sendable {
        /// The hub's id: its folder name, e.g. `news` (`zbimdb://hub/news`).
        public var id: String
        /// The hub's title, as presented (`_index` `title`; default: the folder name).
        public var title: String
        /// The hub's tags (`_index` `tags`): a user's counts of them score the hub when the hub engine picks one.
        public var tags: [String]
        /// The hub's place in bundle order among the hubs, from 0 (`order`, then the name).
        public var position: Int
        /// The hub's channels in bundle order (never empty in a bundle `hubhost bundle build` wrote).
        public var channels: [Channel]
    }

    /// A channel: a folder inside a hub, with its articles.
    public struct Channel: Codable, Equatable, Sendable {
        /// The channel's id: its hub's id and its folder name, e.g. `news/sports` (`zbimdb://channel/news/sports`).
        public var id: String
        /// The id of the hub the channel belongs to.
        public var hubID: String
        /// The channel's title, as presented (`_index` `title`; default: the folder name).
        public var title: String
        /// The channel's tags (`_index` `tags`).
        public var tags: [String]
        /// The channel's place in bundle order within its hub, from 0 (`order`, then the name).
        public var position: Int
        /// The channel's articles in bundle order (never empty in a bundle `hubhost bundle build` wrote).
        public var articles: [Article]
    }

    /// An article without its body (read it with `body(ofArticle:)`), so that a bundle of 100,000
    /// articles stays small in memory.
    public struct Article: Codable, Equatable, Sendable {
        /// The article's id: its channel's id and its file name without extension, e.g. `news/sports/final-score`.
        public var id: String
        /// The id of the channel the article belongs to.
        public var channelID: String
        /// The article's title, as presented (front matter `title`; default: its first level-1 heading, else the file name).
        public var title: String
        /// The article's tags (front matter `tags`): reading the article adds 1 to each in the active user's counts.
        public var tags: [String]
        /// The article's place in bundle order within its channel, from 0 (`order`, then the name).
        public var position: Int
        /// The original page the article comes from (front matter `source_url`, for app indexing); nil when not given.
        public var sourceURL: String?
    }

    /// A local notification the bundle schedules (`notifications.yaml`).
    public struct ScheduledNotification: Codable, Equatable, Sendable {
        /// The notification's id, unique in the bundle; `LocalNotifications` handles only ids a bundle scheduled.
        public var id: String
        /// When the notification is due, in ms since 1970 (`at`).
        public var fireAtMs: Int64
        /// The text shown to the user, e.g. as the alert before the action.
        public var message: String
        /// The URI presented when the notification is handled, e.g. `zbimdb://article/news/sports/final-score`.
        public var actionURI: String
    }

    /// A file stored in the bundle that articles use (CSS, an image).
    public struct Resource: Sendable {
        /// The path articles reference it by, e.g. `resources/site.css`.
        public var path: String
        /// The MIME type, from the file's extension when the bundle was built, e.g. `text/css`.
        public var mimeType: String
        /// The file's bytes.
        public var data: Data
    }

    /// Why a file cannot be opened as a content bundle (`init(path:)`).
    public enum OpenError: Error, CustomStringConvertible {
        /// The file at `path` is not SQLite, lacks a table or column, holds a value of the wrong type or a dangling reference;
        /// `reason` says which.
        case notABundle(path: String, reason: String)

        public var description: String {
            switch self {
            case .notABundle(let path, let reason): return "\(path) is not a hubhost content bundle: \(reason)"
            }
        }
    }

    /// The bundle file's path, as given to `init(path:)` (in the bundle store: `<sha256>.sqlite3`).
    public let path: String
    /// A number no other bundle opened by this process carries: what is derived from this bundle
    /// and kept in memory (the web hub's rendered pages) is keyed on it, so a newly activated
    /// bundle never meets pages of the one before, even when both have the same path or version.
    public let serial: Int = ContentBundle.nextSerial()
    /// The bundle's version, creation time and content source.
    public let metadata: Metadata
    /// Hubs in bundle order, each with its channels and their articles in bundle order.
    public let hubs: [Hub]
    /// The local notifications the bundle schedules, by due time (then id).
    public let notifications: [ScheduledNotification]

    private let database: DatabaseQueue
    /// For a bundle opened from the bundle store: the claim that keeps other processes from deleting
    /// its file while it is open (BundleLease); released with the bundle.
    private let lease: BundleLease?
    private let hubIndex: [String: Int]
    private let channelIndex: [String: (hub: Int, channel: Int)]
    private let articleIndex: [String: (hub: Int, channel: Int, article: Int)]

    /// Opens `path` read-only and reads its structure. Throws OpenError naming the file when it is not
    /// a bundle (not SQLite, a table or column missing, a dangling reference).
    public convenience init(path: String) throws {
        try self.init(path: path, lease: nil)
    }

    init(path: String, lease: BundleLease?) throws {
        self.path = path
        self.lease = lease
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "content-bundle"
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
            (metadata, hubs, notifications) = try database.read { db in try ContentBundle.readStructure(db, path: path) }
        } catch let error as OpenError {
            throw error
        } catch {
            throw OpenError.notABundle(path: path, reason: "\(error)")
        }
        var hubIndex: [String: Int] = [:]
        var channelIndex: [String: (Int, Int)] = [:]
        var articleIndex: [String: (Int, Int, Int)] = [:]
        for (h, hub) in hubs.enumerated() {
            hubIndex[hub.id] = h
            for (c, channel) in hub.channels.enumerated() {
                channelIndex[channel.id] = (h, c)
                for (a, article) in channel.articles.enumerated() { articleIndex[article.id] = (h, c, a) }
            }
        }
        self.hubIndex = hubIndex
        self.channelIndex = channelIndex
        self.articleIndex = articleIndex
    }

    private static let lastSerial = Mutex(0)

    private static func nextSerial() -> Int {
        lastSerial.withLock { last in
            last += 1
            return last
        }
    }

    /// The hub with id `id` (e.g. `news`), nil when the bundle has none.
    public func hub(_ id: String) -> Hub? { hubIndex[id].map { hubs[$0] } }

    /// The channel with id `id` (e.g. `news/sports`), nil when the bundle has none.
    public func channel(_ id: String) -> Channel? { channelIndex[id].map { hubs[$0.hub].channels[$0.channel] } }

    /// The article with id `id` (e.g. `news/sports/final-score`), without its body; nil when the bundle has none.
    public func article(_ id: String) -> Article? {
        articleIndex[id].map { hubs[$0.hub].channels[$0.channel].articles[$0.article] }
    }

    /// The article whose original source URL is `url` (app indexing), compared verbatim.
    public func article(sourceURL url: String) -> Article? {
        guard
            let id = try? database.read({ db in
                try String.fetchOne(db, sql: "SELECT id FROM articles WHERE source_url = ? ORDER BY position LIMIT 1", arguments: [url])
            })
        else { return nil }
        return article(id)
    }

    /// The article's HTML body, nil when there is no such article.
    public func body(ofArticle id: String) -> String? {
        try? database.read { db in try String.fetchOne(db, sql: "SELECT body_html FROM articles WHERE id = ?", arguments: [id]) }
    }

    /// A resource stored in the bundle (e.g. `resources/site.css`), nil when absent.
    public func resource(_ path: String) -> Resource? {
        guard
            let row = try? database.read({ db in
                try Row.fetchOne(db, sql: "SELECT mime_type, data FROM resources WHERE path = ?", arguments: [path])
            })
        else { return nil }
        // Optional reads: a damaged row is an absent resource, never a trap.
        guard let mimeType = try? row.decode(String.self, forColumn: "mime_type"), let data = try? row.decode(Data.self, forColumn: "data") else {
            return nil
        }
        return Resource(path: path, mimeType: mimeType, data: data)
    }

    /// Every resource path, sorted.
    public func resourcePaths() -> [String] {
        (try? database.read { db in try String.fetchAll(db, sql: "SELECT path FROM resources ORDER BY path") }) ?? []
    }

    private static func readStructure(_ db: Database, path: String) throws -> (Metadata, [Hub], [ScheduledNotification]) {
        for table in ["metadata", "hubs", "channels", "articles", "resources", "notifications"] where try !db.tableExists(table) {
            throw OpenError.notABundle(path: path, reason: "the '\(table)' table is missing")
        }
        // Every column read through `value`: a file that is damaged or was written by someone else
        // may hold NULL or another type anywhere, and GRDB's subscripts trap on that. Such a file
        // is not a bundle, said with the table, column and row.
        func value<T: DatabaseValueConvertible>(_ row: Row, _ column: String, in table: String) throws -> T {
            do {
                return try row.decode(T.self, forColumn: column)
            } catch {
                let found = (row[column] as DatabaseValue?).map { "\($0)" } ?? "nothing"
                throw OpenError.notABundle(path: path, reason: "\(table).\(column) holds \(found.prefix(80)) where \(T.self) belongs")
            }
        }
        let meta = Dictionary(
            try Row.fetchAll(db, sql: "SELECT key, value FROM metadata").map {
                (try value($0, "key", in: "metadata") as String, try value($0, "value", in: "metadata") as String)
            }, uniquingKeysWith: { first, _ in first })
        let metadata = Metadata(
            version: meta[MetadataKey.version] ?? "", created: meta[MetadataKey.created] ?? "",
            contentSource: meta[MetadataKey.contentSource] ?? "")
        func tags(_ row: Row, in table: String) throws -> [String] {
            let text: String = try value(row, "tags", in: table)
            guard let list = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String] else {
                let id: String = try value(row, "id", in: table)
                throw OpenError.notABundle(path: path, reason: "'\(id)' has tags that are not a JSON list of strings: \(text.prefix(80))")
            }
            return list
        }
        var articlesByChannel: [String: [Article]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT id, channel_id, title, tags, position, source_url FROM articles ORDER BY position, id") {
            let article = Article(
                id: try value(row, "id", in: "articles"), channelID: try value(row, "channel_id", in: "articles"),
                title: try value(row, "title", in: "articles"), tags: try tags(row, in: "articles"),
                position: try value(row, "position", in: "articles"), sourceURL: try value(row, "source_url", in: "articles"))
            articlesByChannel[article.channelID, default: []].append(article)
        }
        var channelsByHub: [String: [Channel]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT id, hub_id, title, tags, position FROM channels ORDER BY position, id") {
            let id: String = try value(row, "id", in: "channels")
            let channel = Channel(
                id: id, hubID: try value(row, "hub_id", in: "channels"), title: try value(row, "title", in: "channels"),
                tags: try tags(row, in: "channels"), position: try value(row, "position", in: "channels"),
                articles: articlesByChannel.removeValue(forKey: id) ?? [])
            channelsByHub[channel.hubID, default: []].append(channel)
        }
        var hubs: [Hub] = []
        for row in try Row.fetchAll(db, sql: "SELECT id, title, tags, position FROM hubs ORDER BY position, id") {
            let id: String = try value(row, "id", in: "hubs")
            hubs.append(
                Hub(
                    id: id, title: try value(row, "title", in: "hubs"), tags: try tags(row, in: "hubs"),
                    position: try value(row, "position", in: "hubs"), channels: channelsByHub.removeValue(forKey: id) ?? []))
        }
        if let orphan = articlesByChannel.values.first?.first {
            throw OpenError.notABundle(path: path, reason: "article '\(orphan.id)' names channel '\(orphan.channelID)', which does not exist")
        }
        if let orphan = channelsByHub.values.first?.first {
            throw OpenError.notABundle(path: path, reason: "channel '\(orphan.id)' names hub '\(orphan.hubID)', which does not exist")
        }
        let notifications = try Row.fetchAll(db, sql: "SELECT id, fire_at_ms, message, action_uri FROM notifications ORDER BY fire_at_ms, id").map {
            ScheduledNotification(
                id: try value($0, "id", in: "notifications"), fireAtMs: try value($0, "fire_at_ms", in: "notifications"),
                message: try value($0, "message", in: "notifications"), actionURI: try value($0, "action_uri", in: "notifications"))
        }
        return (metadata, hubs, notifications)
    }
}
