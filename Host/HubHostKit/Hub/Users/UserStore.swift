import Foundation
import GRDB
import Synchronization

/// The Content Hub's users (the ZBiM SDK's "SDK Initialization" and "User Tags"): anonymous user ids,
/// which one is active, and each user's tag usage counts, which tailoring reads. One SQLite file,
/// `<data_dir>/hub/users.sqlite` (WAL), so users, the active user and their counts survive restarts.
/// Several users may exist (an app with several logins keeps each one's profile); one is active.
/// Sendable: the active-user cache lives in a Mutex; `pool` (a DatabasePool) and `versionReader`
/// (a DatabaseQueue) are `let`s, and GRDB makes both thread-safe.
public final class UserStore: Sendable {
    /// The SQLite file, as given to `init(path:)` (the host's is `<data_dir>/hub/users.sqlite`).
    public let path: String
    /// Shared with the local-notification log, which keeps its small table in the same file.
    let pool: DatabasePool
    /// One connection of its own for the active-user cache (see `activeUser()`): SQLite's
    /// `PRAGMA data_version` compares commits against what ONE connection saw before, so it must
    /// always be asked on the same connection (the pool's readers take turns).
    private let versionReader: DatabaseQueue
    /// The active user as last read, with the file's data_version on `versionReader` then.
    private let cachedActive = Mutex<(user: String?, dataVersion: Int64)?>(nil)

    /// Why a user operation was refused; nothing was changed.
    public enum UserError: Error, Equatable, CustomStringConvertible {
        /// The id is empty, longer than 256 characters, holds a line break or NUL, or is `active` (reserved); the text says which.
        case invalidID(String)
        /// A user with this id exists already (`createUser`).
        case exists(String)
        /// No user has this id.
        case unknown(String)
        /// The operation needs an active user and none was activated (`activate`).
        case noActiveUser
        /// A tag is empty or longer than 256 characters; the text says which.
        case invalidTag(String)

        public var description: String {
            switch self {
            case .invalidID(let reason): return "invalid user id: \(reason)"
            case .exists(let id): return "user '\(id)' already exists; activate it with `users activate \(id)` or pick another id"
            case .unknown(let id): return "no user '\(id)'; create it first (`users create --id \(id)`), or see `users list`"
            case .noActiveUser: return "no user is active; create one and activate it (`users create`, `users activate ID`)"
            case .invalidTag(let reason): return "invalid tag: \(reason)"
            }
        }
    }

    /// One user as `list()` shows it.
    public struct User: Codable, Equatable, Sendable {
        /// The user's id: given to `createUser`, or a generated lowercase UUID.
        public var id: String
        /// When the user was created, in ms since 1970.
        public var createdMs: Int64
        /// Whether the user is the active one, the user tailoring and tag updates use.
        public var isActive: Bool
    }

    /// Opens (creating) the store at `path`.
    public init(path: String) throws {
        self.path = path
        let opening = try SharedSQLite.openingLock(for: path)  // until migrated: see openingLock
        defer { opening.release() }
        pool = try SharedSQLite.open(path: path, label: "hub-users")
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 users") { db in
            try db.execute(
                sql: """
                    CREATE TABLE users (id TEXT PRIMARY KEY NOT NULL, created_ms INTEGER NOT NULL);
                    CREATE TABLE tag_counts (user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, tag TEXT NOT NULL,
                                             count INTEGER NOT NULL, PRIMARY KEY (user_id, tag));
                    -- One row at most: the active user.
                    CREATE TABLE active_user (slot INTEGER PRIMARY KEY CHECK (slot = 1), user_id TEXT NOT NULL REFERENCES users(id));
                    """)
        }
        try migrator.migrate(pool)
        versionReader = try DatabaseQueue(path: path, configuration: SharedSQLite.configuration(label: "hub-users-version"))
    }

    /// A new user id, as the SDK's generateDefaultUserId: random and anonymous (a lowercase UUID).
    public func generateID() -> String { UUID().uuidString.lowercased() }

    /// Creates a user with `tags` as its initial profile (each tag counts 1). A nil id is generated;
    /// an id that exists already is an error. Returns the id. The new user is not made active.
    @discardableResult
    public func createUser(id: String? = nil, tags: [String] = []) throws -> String {
        let id = id ?? generateID()
        try UserStore.validate(id: id)
        for tag in tags { try UserStore.validate(tag: tag) }
        let now = Clock.wallMs()
        try pool.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [id]) == true { throw UserError.exists(id) }
            try db.execute(sql: "INSERT INTO users (id, created_ms) VALUES (?, ?)", arguments: [id, now])
            for tag in Set(tags) {
                try db.execute(sql: "INSERT INTO tag_counts (user_id, tag, count) VALUES (?, ?, 1)", arguments: [id, tag])
            }
        }
        return id
    }

    /// Makes `id` the active user: the one tailoring and tag updates use from now on.
    public func activate(_ id: String) throws {
        try pool.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [id]) == true else { throw UserError.unknown(id) }
            try db.execute(sql: "INSERT OR REPLACE INTO active_user (slot, user_id) VALUES (1, ?)", arguments: [id])
        }
    }

    /// The active user, nil before one was activated.
    ///
    /// Cached in memory, and correct across processes: `hubhost users activate` (or `POST
    /// /v1/users/{id}/activate`) in another process commits its change to this SQLite file, and
    /// SQLite's `PRAGMA data_version` on one connection changes whenever any OTHER connection (of
    /// this process or another) committed to the file since that connection last asked. Each call
    /// asks it inside one read transaction on `versionReader`: unchanged, the cached user is
    /// still the stored one; changed, the user is read again in that same transaction, so the
    /// user and the version kept belong to the same snapshot (a commit after it changes the
    /// version again and is read next time). Any commit invalidates (tag counts too), so the cache
    /// saves the read only while nothing is written: the common case of page views without
    /// learning, and every view of a batch of the page-view recorder (HubViewRecorder). The check
    /// itself is SQLite work and so runs on the blocking pool like any other; the request path
    /// never calls this.
    public func activeUser() -> String? {
        cachedActive.withLock { cachedActive in
            do {
                return try versionReader.read { db -> String? in
                    let version = try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? -1
                    if let cached = cachedActive, cached.dataVersion == version { return cached.user }
                    let user = try String.fetchOne(db, sql: "SELECT user_id FROM active_user WHERE slot = 1")
                    cachedActive = (user, version)
                    return user
                }
            } catch {
                cachedActive = nil
                return (try? pool.read { db in try String.fetchOne(db, sql: "SELECT user_id FROM active_user WHERE slot = 1") }) ?? nil
            }
        }
    }

    /// Every user, oldest first.
    public func list() throws -> [User] {
        try pool.read { db in
            let active = try String.fetchOne(db, sql: "SELECT user_id FROM active_user WHERE slot = 1")
            return try Row.fetchAll(db, sql: "SELECT id, created_ms FROM users ORDER BY created_ms, id").map {
                User(id: $0["id"], createdMs: $0["created_ms"], isActive: $0["id"] == active)
            }
        }
    }

    /// The user's tags, sorted by name.
    public func tags(of id: String) throws -> [String] {
        try tagCounts(of: id).keys.sorted()
    }

    /// The user's tag usage counts (every count is at least 1).
    public func tagCounts(of id: String) throws -> [String: Int] {
        try pool.read { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [id]) == true else { throw UserError.unknown(id) }
            let rows = try Row.fetchAll(db, sql: "SELECT tag, count FROM tag_counts WHERE user_id = ?", arguments: [id])
            return Dictionary(rows.map { ($0["tag"] as String, $0["count"] as Int) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// The active user's counts; empty when no user is active.
    public func activeTagCounts() -> [String: Int] {
        guard let id = activeUser() else { return [:] }
        return (try? tagCounts(of: id)) ?? [:]
    }

    /// Adds each delta to the ACTIVE user's count of that tag (the SDK's updateTagUsageCounts); a tag
    /// whose count drops to zero or below is removed. All deltas apply in one transaction. Returns the
    /// active user's counts after the update.
    @discardableResult
    public func updateTagCounts(_ deltas: [String: Int]) throws -> [String: Int] {
        for tag in deltas.keys { try UserStore.validate(tag: tag) }
        return try pool.write { db in
            guard let id = try String.fetchOne(db, sql: "SELECT user_id FROM active_user WHERE slot = 1") else { throw UserError.noActiveUser }
            try UserStore.add(deltas, to: id, db)
            let rows = try Row.fetchAll(db, sql: "SELECT tag, count FROM tag_counts WHERE user_id = ?", arguments: [id])
            return Dictionary(rows.map { ($0["tag"] as String, $0["count"] as Int) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// Adds each article read's tags (one delta map per read, in reading order) to the ACTIVE
    /// user's counts in ONE transaction: the page-view recorder (HubViewRecorder) hands over a
    /// batch of reads at a time. The active user is read inside the write transaction, so a user
    /// another process activated before it is the one that learns. Returns that user; nil when
    /// no user is active (nothing is learned then).
    @discardableResult
    func learn(_ reads: [[String: Int]]) throws -> String? {
        let deltas = reads.filter { !$0.isEmpty }
        guard !deltas.isEmpty else { return nil }
        for read in deltas { for tag in read.keys { try UserStore.validate(tag: tag) } }
        // Written after the page was answered (HubViewRecorder), so without waiting for the disk.
        return try SharedSQLite.writeWithoutWaitingForDisk(pool, restoring: SharedSQLite.durableSynchronous) { db -> String? in
            guard let id = try String.fetchOne(db, sql: "SELECT user_id FROM active_user WHERE slot = 1") else { return nil }
            for read in deltas { try UserStore.add(read, to: id, db) }
            return id
        }
    }

    /// Adds `deltas` to `id`'s counts inside the caller's write transaction; a count that drops to
    /// zero or below removes the tag.
    private static func add(_ deltas: [String: Int], to id: String, _ db: Database) throws {
        for (tag, delta) in deltas.sorted(by: { $0.key < $1.key }) where delta != 0 {
            let current = try Int.fetchOne(db, sql: "SELECT count FROM tag_counts WHERE user_id = ? AND tag = ?", arguments: [id, tag]) ?? 0
            let updated = current + delta
            if updated <= 0 {
                try db.execute(sql: "DELETE FROM tag_counts WHERE user_id = ? AND tag = ?", arguments: [id, tag])
            } else {
                try db.execute(sql: "INSERT OR REPLACE INTO tag_counts (user_id, tag, count) VALUES (?, ?, ?)", arguments: [id, tag, updated])
            }
        }
    }

    static func validate(id: String) throws {
        if id.isEmpty { throw UserError.invalidID("it is empty") }
        if id.count > 256 { throw UserError.invalidID("it is longer than 256 characters") }
        if id.contains(where: { $0.isNewline || $0 == "\0" }) { throw UserError.invalidID("it contains a line break or NUL") }
        if id == "active" { throw UserError.invalidID("'active' is reserved (it names the active user in the HTTP API)") }
    }

    static func validate(tag: String) throws {
        if tag.isEmpty { throw UserError.invalidTag("a tag is empty") }
        if tag.count > 256 { throw UserError.invalidTag("'\(tag.prefix(20))...' is longer than 256 characters") }
    }
}
