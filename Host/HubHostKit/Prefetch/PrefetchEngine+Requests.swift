import Foundation
import Synchronization

/// What an app (or a user through the CLI and HTTP API) asks of items: download, pause, cancel,
/// fill, delete, save, lock. Each answer says per item whether it was done and, if not, why.
extension PrefetchEngine {
    /// The answer for one item of a request.
    public struct Answer: Codable, Sendable, Equatable {
        /// The item's uniqueId.
        public var id: String
        /// Whether the request was taken (also true when nothing needed doing).
        public var accepted: Bool
        /// Why it was refused, or a note when nothing needed doing ("already queued").
        public var reason: String?
        /// The item's state after the request; nil for an unknown item.
        public var state: PrefetchItemState?

        /// An answer with each field given.
        public init(id: String, accepted: Bool, reason: String?, state: PrefetchItemState?) {
            self.id = id
            self.accepted = accepted
            self.reason = reason
            self.state = state
        }
    }

    private func answer(_ id: String, _ body: (inout PrefetchItem) -> Result<Bool, PrefetchError>) -> Answer {
        var refusal: String?
        var note: String?
        do {
            let updated = try transition(id) { item in
                switch body(&item) {
                case .success(let changed):
                    if !changed { note = "nothing to change (\(item.state.rawValue))" }
                    return changed
                case .failure(let error):
                    if case .refused(_, let reason) = error { refusal = reason } else { refusal = "\(error)" }
                    return false
                }
            }
            let state = try updated?.state ?? store.item(id)?.state
            return Answer(id: id, accepted: refusal == nil, reason: refusal ?? note, state: state)
        } catch {
            return Answer(id: id, accepted: false, reason: "\(error)", state: nil)
        }
    }

    /// The PCD SDK's downloadItems: queues each item ahead of policy-driven ones. Refused for Cached,
    /// Deleted and Downloading items, with the reason; an item already queued stays queued once
    /// (asking twice never downloads twice). A Paused or Failed item leaves that state only this
    /// way. `behavior` sets the items' downloadBehavior override as the PCD SDK's option does.
    /// `partial` (videoPartialDownloadLength) asks for only the start of the item's `main` file:
    /// the item ends `partially_cached` once that much is on disk; a later download without it
    /// resumes from there to `cached` (the bytes on disk are not fetched again).
    public func download(
        _ ids: [String], behavior: PrefetchSettings.DownloadBehavior? = nil,
        partial: PrefetchPartialLength? = nil
    ) throws -> [Answer] {
        let partial = try partial?.validated()
        let answers = ids.map { id in
            answer(id) { item in
                switch item.state {
                case .cached: return .failure(.refused(id: id, reason: "already cached"))
                case .deleted: return .failure(.refused(id: id, reason: "the item was deleted"))
                case .downloading: return .failure(.refused(id: id, reason: "already downloading"))
                default: break
                }
                let before = item.files.map(\.partialLength)
                let secondsBefore = item.files.map(\.partialSeconds)
                if case .failure(let error) = Self.setPartialLength(&item, partial) { return .failure(.refused(id: id, reason: "\(error)")) }
                switch item.state {
                case .queued:
                    if let behavior { item.downloadBehavior = behavior }
                    guard !item.userInitiated else { return .success(item.files.map(\.partialLength) != before) }
                    item.userInitiated = true
                    return .success(true)
                case .partiallyCached
                where item.files.allSatisfy({ file in
                    file.done || !file.isMain || file.partialLength.map { FileDownloader.partialLength(file.localPath) >= $0 } == true
                        || file.partialSeconds.map { wanted in
                            secondsBefore.indices.contains(file.index) && (secondsBefore[file.index].map { $0 >= wanted } ?? false)
                        } == true
                }):
                    // That much is already on disk (an HLS item: the segments of at least that many seconds).
                    return .success(false)
                default:
                    if let behavior { item.downloadBehavior = behavior }
                    item.state = .queued
                    item.userInitiated = true
                    item.waitReason = nil
                    item.retryAtMs = nil
                    item.attempts = 0
                    item.downloadError = nil
                    return .success(true)
                }
            }
        }
        try pump()
        return answers
    }

    /// Sets (or, for a full download, clears) the partial target of each `main` file of `item`.
    static func setPartialLength(_ item: inout PrefetchItem, _ partial: PrefetchPartialLength?) -> Result<Void, PrefetchError> {
        guard let partial else {
            for index in item.files.indices {
                item.files[index].partialLength = nil
                item.files[index].partialSeconds = nil
            }
            return .success(())
        }
        if !item.files.contains(where: { $0.role == "main" }), let hls = item.files.firstIndex(where: { $0.role == "hls_main_index" }) {
            // An HLS item: the segments of the first N seconds (PrefetchEngine+HLS), by their #EXTINF durations.
            guard case .seconds(let seconds) = partial else {
                return .failure(.invalid("an HLS item's partial download is given in seconds (partial_seconds, --partial-seconds), not bytes"))
            }
            item.files[hls].partialSeconds = seconds
            return .success(())
        }
        guard item.files.contains(where: { $0.role == "main" }) else {
            return .failure(.invalid("a partial download needs a main file or an HLS main index"))
        }
        for index in item.files.indices where item.files[index].role == "main" {
            switch partial.bytes(of: item.files[index]) {
            case .success(let bytes): item.files[index].partialLength = bytes
            case .failure(let error): return .failure(error)
            }
        }
        return .success(())
    }

    /// The PCD SDK's pauseItems: Queued, Downloading or Idle -> Paused; the bytes on disk stay for a
    /// later download. A download running in another process stops at its next progress write.
    public func pause(_ ids: [String]) throws -> [Answer] {
        let answers = ids.map { id in
            answer(id) { item in
                guard [.queued, .downloading, .idle].contains(item.state) else {
                    return .failure(.refused(id: id, reason: "only queued, downloading or idle items can be paused, not \(item.state.rawValue)"))
                }
                item.state = .paused
                item.waitReason = PrefetchWaitReason.pausedByUser.rawValue
                item.retryAtMs = nil
                return .success(true)
            }
        }
        stopLocal(answers.filter(\.accepted).map(\.id))
        return answers
    }

    /// The PCD SDK's cancelCurrentDownload: every download in progress (in any process sharing the
    /// data directory) -> Idle with reason `cancelled`; they are queued again after one
    /// sync_interval, or at once by `download` or `fill`.
    public func cancelCurrentDownloads() throws -> [Answer] {
        let ids = try store.items(where: "state = 'downloading'").map(\.uniqueId)
        let retryAt = Clock.wallMs() + Int64(min(settings.syncInterval, 86_400) * 1000)
        let answers = ids.map { id in
            answer(id) { item in
                guard item.state == .downloading else { return .failure(.refused(id: id, reason: "no longer downloading")) }
                item.state = .idle
                item.waitReason = PrefetchWaitReason.cancelled.rawValue
                item.retryAtMs = retryAt
                return .success(true)
            }
        }
        stopLocal(ids)
        return answers
    }

    /// startDownloadUserInitiated (the PCD SDK's "force fill"): syncs when registered, then
    /// queues every Discovered and Idle item whose own downloadBehavior is not `none`, whatever
    /// item_download_behavior says, as user-initiated. Returns the ids queued.
    public func fill() throws -> [String] {
        if [.registered, .initialized].contains(serviceState) {
            do { try sync() } catch { logger.warning("prefetch fill: sync failed, filling from the catalog as it is: \(error)") }
        }
        var queued: [String] = []
        for item in try store.items(where: "state IN ('discovered', 'idle')") where item.downloadBehavior != PrefetchSettings.DownloadBehavior.none {
            let changed = try transition(item.uniqueId) { item in
                guard [.discovered, .idle].contains(item.state) else { return false }
                item.state = .queued
                item.userInitiated = true
                item.waitReason = nil
                item.retryAtMs = nil
                return true
            }
            if changed != nil { queued.append(item.uniqueId) }
        }
        try pump()
        return queued
    }

    /// deleteItem (files and metadata -> Deleted) or, with `filesOnly`, deleteFiles: the files
    /// go (the thumbnails stay with `keepThumbnail`), the item returns to Discovered with its
    /// downloadBehavior set to `none`, so it downloads again only when asked. Locked items are
    /// refused (an app locks an item while it is consumed).
    public func delete(_ ids: [String], filesOnly: Bool = false, keepThumbnail: Bool = false) throws -> [Answer] {
        stopLocal(ids)
        let answers = ids.map { id in
            answer(id) { item in
                if item.locked { return .failure(.refused(id: id, reason: "the item is locked")) }
                if item.state == .deleted { return .failure(.refused(id: id, reason: "already deleted")) }
                removeFiles(&item, keepThumbnails: filesOnly && keepThumbnail)
                item.waitReason = nil
                item.retryAtMs = nil
                item.attempts = 0
                item.userInitiated = false
                if filesOnly {
                    item.state = .discovered
                    item.downloadBehavior = PrefetchSettings.DownloadBehavior.none
                    item.waitReason = PrefetchWaitReason.downloadBehaviorNone.rawValue
                } else {
                    item.state = .deleted
                    item.persistentUserInfo = [:]
                    item.saved = false
                }
                return .success(true)
            }
        }
        for id in answers.filter(\.accepted).map(\.id) where !filesOnly { service.withLock { $0.userInfos[id] = nil } }
        return answers
    }

    /// An item flag `set(_:_:on:)` changes: saved and locked protect it from purge (locked also from
    /// deletion); viewed marks it consumed.
    public enum Flag: String, Sendable, CaseIterable {
        /// Kept by the user: never purged; cleared when the item is deleted.
        case saved
        /// Never purged, and deletion is refused while it is set.
        case locked
        /// Consumed (also set when consumption is recorded): under storage pressure, purge evicts viewed items first.
        case viewed
    }

    /// save/unsave, lock/unlock (and viewed): flags that protect items from purge and deletion.
    public func set(_ flag: Flag, _ value: Bool, on ids: [String]) -> [Answer] {
        ids.map { id in
            answer(id) { item in
                if item.state == .deleted { return .failure(.refused(id: id, reason: "the item was deleted")) }
                switch flag {
                case .saved:
                    guard item.saved != value else { return .success(false) }
                    item.saved = value
                case .locked:
                    guard item.locked != value else { return .success(false) }
                    item.locked = value
                case .viewed:
                    guard item.viewed != value else { return .success(false) }
                    item.viewed = value
                }
                return .success(true)
            }
        }
    }

    /// Sets an item's persistentUserInfo, which is kept in the catalog (unlike `userInfo`).
    /// Throws PrefetchError.unknownItem for an id not in the catalog.
    public func setPersistentUserInfo(_ id: String, _ info: [String: JSONValue]) throws {
        guard
            try store.update(
                id,
                { item in
                    item.persistentUserInfo = info
                    return true
                }) != nil
        else { throw PrefetchError.unknownItem(id) }
    }

    /// Stops this process's download tasks of `ids` (their state was already changed).
    func stopLocal(_ ids: [String]) {
        let tasks = service.withLock { service in ids.compactMap { service.running[$0] } }
        for task in tasks { task.cancel() }
    }

    /// Runs the queue in this process until every item of `ids` left Queued/Downloading/Idle (or
    /// `timeout` passed): what `prefetch download --wait` uses when no server runs the queue.
    /// `onProgress` hears each item as it is after each round. Returns the items as they are.
    public func waitForDownloads(_ ids: [String], timeout: Double, onProgress: @escaping ([PrefetchItem]) -> Void = { _ in }) async throws
        -> [PrefetchItem]
    {
        let deadline = Clock.monotonicNs() &+ SafeTime.durationNs(timeout)
        let busy: Set<PrefetchItemState> = [.queued, .downloading, .idle]
        while true {
            try await BlockingPool.run { [self] in try round() }
            let items = try await BlockingPool.run { [self] in try ids.compactMap { try store.item($0) } }
            onProgress(items)
            let settled = items.allSatisfy {
                !busy.contains($0.state) || ($0.state == .idle && $0.waitReason == PrefetchWaitReason.cancelled.rawValue)
            }
            if settled || Clock.monotonicNs() >= deadline { return items }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
    }
}
