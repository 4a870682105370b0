import Foundation
import GRDB

/// One user's campaign state: impressions left, opt-outs, satisfied triggers, the queue and the
/// message handed out. Stored as JSON under `campaigns.cache.<user>` in the event store's `state` table.
struct UserCache: Codable, Equatable {
    var impressionsLeft: [String: Int] = [:]
    var knownMaxImpressions: [String: Int] = [:]
    var optedOut: Set<String> = []
    /// Campaign id -> indexes of its satisfied triggers (app-start ones live in the launch only).
    var satisfied: [String: Set<Int>] = [:]
    var queue: [String] = []
    /// The message handed out by `next` and not yet reported shown or closed.
    var current: String?
    /// When this user's latest impressions were counted (ms since 1970, oldest first), for the
    /// frequency caps: only those the caps still look at are kept (FrequencyCaps.prune).
    var shownAt: [Int64]?
    /// Campaign id -> when its latest impression was counted (`frequency_caps.campaign_interval`).
    var lastShownAt: [String: Int64]?
    /// The impressions counted in the event engine's current session (`frequency_caps.per_session`).
    var session: SessionCount?
    /// Campaigns put back with `later`: their triggers are checked again before they show.
    var later: [String]?

    /// Impressions counted in the session that started at `startMs`.
    struct SessionCount: Codable, Equatable {
        var startMs: Int64
        var count: Int
    }
}

/// Where the campaign engine's state lives, shared by every process on the data directory
/// (`hubhost serve` and CLI commands beside it): rows of the event store's `state` table.
///
/// - `campaigns.list` (the ping response as loaded) and `campaigns.listVersion` (bumped when the
///   list changes);
/// - `campaigns.enabled`, `campaigns.user` (the current user) and `campaigns.cache.<user>` (UserCache,
///   which holds the user's impression times for the frequency caps too);
/// - `campaigns.pause` (`CampaignEngine.Pause`: every message held, until a time or a resume);
/// - `campaigns.version`, bumped by every write of any of them.
///
/// Every change is a read-modify-write in ONE write transaction (BEGIN IMMEDIATE, so no other
/// process writes in between): the engine re-reads what is stored, applies the change to it and
/// writes it back with a new version. Two processes' impressions therefore add up and never
/// overwrite each other, and a change is on disk when the call returns. Before answering, the
/// engine compares `campaigns.version` with the one it last saw (one indexed read) and re-reads the
/// state when another process changed it.
struct CampaignSharedState {
    static let versionKey = "campaigns.version"
    static let listKey = "campaigns.list"
    static let listVersionKey = "campaigns.listVersion"
    static let enabledKey = "campaigns.enabled"
    static let userKey = "campaigns.user"
    static let pauseKey = "campaigns.pause"
    static func cacheKey(_ user: CampaignEngine.User) -> String { "campaigns.cache.\(user.cacheKey)" }

    let state: KeyValueState

    /// The version of the whole state (0 before anything was written).
    func version() throws -> Int64 { try state.read { db in try version(db) } }

    func version(_ db: Database) throws -> Int64 { try KeyValueState.get(db, Self.versionKey) ?? 0 }
    func listVersion(_ db: Database) throws -> Int64 { try KeyValueState.get(db, Self.listVersionKey) ?? 0 }
    func list(_ db: Database) throws -> Data? { try KeyValueState.get(db, Self.listKey) }
    func enabled(_ db: Database) throws -> Bool { try KeyValueState.get(db, Self.enabledKey) ?? true }
    func user(_ db: Database) throws -> CampaignEngine.User { try KeyValueState.get(db, Self.userKey) ?? CampaignEngine.User() }
    func cache(_ db: Database, for user: CampaignEngine.User) throws -> UserCache? { try KeyValueState.get(db, Self.cacheKey(user)) }

    /// Stores a new list and bumps its version; returns the new list version.
    func setList(_ db: Database, _ data: Data) throws -> Int64 {
        let next = try listVersion(db) + 1
        try KeyValueState.set(db, Self.listKey, data)
        try KeyValueState.set(db, Self.listVersionKey, next)
        return next
    }

    func pause(_ db: Database) throws -> CampaignEngine.Pause { try KeyValueState.get(db, Self.pauseKey) ?? CampaignEngine.Pause() }
    func setPause(_ db: Database, _ pause: CampaignEngine.Pause) throws { try KeyValueState.set(db, Self.pauseKey, pause) }
    /// When the event engine's current session started (its `session` row), nil before any.
    func sessionStart(_ db: Database) throws -> Int64? { (try KeyValueState.get(db, SessionTracker.key) as SessionTracker.State?)?.startedMs }

    func setEnabled(_ db: Database, _ enabled: Bool) throws { try KeyValueState.set(db, Self.enabledKey, enabled) }
    func setUser(_ db: Database, _ user: CampaignEngine.User) throws { try KeyValueState.set(db, Self.userKey, user) }
    func setCache(_ db: Database, _ cache: UserCache, for user: CampaignEngine.User) throws {
        try KeyValueState.write(db, key: Self.cacheKey(user), json: cache.json)  // by hand: see UserCache+JSON.swift
    }

    /// Bumps the version (inside the write transaction that changed the state); returns the new one.
    func bumpVersion(_ db: Database) throws -> Int64 {
        let next = try version(db) + 1
        try KeyValueState.set(db, Self.versionKey, next)
        return next
    }
}

extension CampaignEngine {
    /// Re-reads the shared state when another process changed it (the caller holds `lock`).
    func refresh() throws {
        guard try shared.version() != seenVersion else { return }
        try shared.state.read { db in try load(db) }
    }

    /// `refresh()` for calls that cannot throw: a failed read keeps what was read last, and says so.
    func refreshQuietly() {
        do { try refresh() } catch { logger.warning("campaign state not re-read (the last state read is used): \(error)") }
    }

    /// `refreshQuietly()` for the event path, which asks before every tracked batch: while the event
    /// store's data_version says no other connection committed since the last look, the stored
    /// state is what this engine last read or wrote (every write of it in this process goes through
    /// `update` on the store's writer connection, and `update` keeps `seenVersion`), so the version
    /// is not read: a read transaction on a pooled connection, GRDB's part of it most of the cost,
    /// was the largest fixed cost of a small group commit. After a failed write (`seenVersion` -1)
    /// the state is re-read whatever the data_version says. The caller holds `lock`.
    func refreshForEvents() {
        do {
            let dataVersion = try shared.state.store.dataVersion()
            if dataVersion == seenDataVersion, seenVersion >= 0 { return }
            try refresh()
            seenDataVersion = dataVersion  // read before the version: a commit in between shows as a change next time
        } catch {
            logger.warning("campaign state not re-read (the last state read is used): \(error)")
        }
    }

    /// Reads every part of the state that changed since `seenVersion` (inside a transaction).
    private func load(_ db: Database) throws {
        let version = try shared.version(db)
        guard version != seenVersion else { return }
        let listVersion = try shared.listVersion(db)
        if listVersion != seenListVersion {
            if let data = try shared.list(db) {
                do {
                    use(try parse(data))
                } catch {
                    logger.error("the stored campaign list cannot be read: \(error)")
                    use(([], ["the stored campaign list: \(error)"]))
                }
            } else {
                use(([], []))
            }
            seenListVersion = listVersion
        }
        enabled = try shared.enabled(db)
        let storedPause = try shared.pause(db)
        holds.withLock { $0.pause = storedPause }
        currentUser = try shared.user(db)
        cache = try shared.cache(db, for: currentUser) ?? UserCache()
        reconcile()  // in memory; the next change writes it
        seenVersion = version
    }

    /// Runs `body` on the state as stored now, inside ONE write transaction, and writes what changed
    /// with a new version: the read-modify-write that makes changes from several processes add up.
    /// `body` changes the engine's memory (`cache`, `currentUser`...), writes any other key itself
    /// and sets `wrote` when it did; the current user's cache is written when it changed. The caller
    /// holds `lock`. When the transaction fails, memory is re-read at the next call (it may hold
    /// what was rolled back).
    @discardableResult
    func update<T>(_ body: (Database, inout Bool) throws -> T) throws -> T {
        var changed = false
        defer { if changed { streams.changed() } }
        do {
            return try shared.state.write { db in
                try load(db)
                var wrote = false
                let stored = cache
                reconcile()
                if cache != stored {
                    try shared.setCache(db, cache, for: currentUser)
                    wrote = true
                }
                let userBefore = currentUser
                let cacheBefore = cache
                let result = try body(db, &wrote)
                if currentUser != userBefore || cache != cacheBefore {
                    try shared.setCache(db, cache, for: currentUser)
                    wrote = true
                }
                if wrote {
                    seenVersion = try shared.bumpVersion(db)
                    changed = true
                }
                return result
            }
        } catch {
            seenVersion = -1
            seenListVersion = -1
            throw error
        }
    }
}
