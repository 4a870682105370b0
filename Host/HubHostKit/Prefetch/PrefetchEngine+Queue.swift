import Foundation
import GRDB
import Synchronization

/// The download queue: policy decides which discovered items are queued (and records why the
/// others wait), interrupted downloads go back to the queue by themselves, and up to
/// `max_concurrent_downloads` items download at once in this process, user-initiated first.
extension PrefetchEngine {
    /// One round of background work (the "prefetch" runtime service, every second): register
    /// when due, sync when due, recover downloads of dead processes, apply policy, start downloads.
    public func round() throws {
        let now = Clock.wallMs()
        let syncInterval = settings.syncInterval
        let (current, registerDue, refused, syncDue) = service.withLock { service in
            (
                service.state, now >= service.nextRegisterAtMs, service.refusedLicense,
                service.lastSyncMs.map { Double(now - $0) / 1000 >= syncInterval } ?? true
            )
        }
        if current == .notRegistered, registerDue, license.key != nil, refused != license.key, catalog != nil {
            do { try register() } catch { logger.warning("prefetch: registration failed: \(error)") }
        }
        if [.registered, .initialized].contains(serviceState), try syncDue || store.meta("sync_requested") != nil {
            do { try sync() } catch {
                logger.warning("prefetch: catalog sync failed: \(error)")
                service.withLock { $0.lastSyncMs = now }  // the next attempt waits a sync interval, not a second
            }
        }
        try recoverOrphans()
        if settings.enableAutoPurge { try purge() }
        try applyPolicy()
        try startThumbnailDownloads()
        try pump()
    }

    /// Downloads whose process died (kill -9): Idle (interrupted), then Queued again; the bytes on
    /// disk are kept and the download resumes with a Range request.
    func recoverOrphans() throws {
        for id in try store.orphanedDownloads() where service.withLock({ $0.running[id] == nil }) {
            try transition(id) { item in
                guard item.state == .downloading else { return false }
                item.state = .idle
                item.waitReason = PrefetchWaitReason.waitingToRetry.rawValue
                item.retryAtMs = Clock.wallMs()
                return true
            }
        }
    }

    /// Moves items by policy: due Idle items back to Queued, Discovered items whose behavior is
    /// full auto to Queued when policy allows, and records each waiting item's reason.
    func applyPolicy() throws {
        let now = Clock.wallMs()
        for item in try store.items(where: "state = 'idle' AND (retry_at_ms IS NULL OR retry_at_ms <= ?)", arguments: [now])
        where item.waitReason != PrefetchWaitReason.cancelled.rawValue || (item.retryAtMs ?? 0) <= now {
            try transition(item.uniqueId) { item in
                guard item.state == .idle else { return false }
                item.state = .queued
                item.waitReason = nil
                item.retryAtMs = nil
                return true
            }
        }
        let policy = try currentPolicy()
        let device = self.device()  // once per round: a plugin call may read /sys
        // Items that wait whatever the conditions (behavior none or thumbnail_only), and every
        // full-auto item when a reason holds them all, take their reason in one statement each:
        // a round stays cheap with a large catalog of waiting items.
        let defaultBehavior = settings.itemDownloadBehavior.rawValue
        func mark(_ behavior: PrefetchSettings.DownloadBehavior, _ reason: PrefetchWaitReason) throws {
            try store.pool.write { db in
                try db.execute(
                    sql: """
                        UPDATE item SET wait_reason = ? WHERE state = 'discovered' AND COALESCE(download_behavior, ?) = ? AND wait_reason IS NOT ?
                        """, arguments: [reason.rawValue, defaultBehavior, behavior.rawValue, reason.rawValue])
            }
        }
        try mark(.none, .downloadBehaviorNone)
        try mark(.thumbnailOnly, .thumbnailOnly)
        if let reason = try policyReason(policy, device: device, fileSize: nil, categoryCount: nil) {
            try mark(.fullAuto, reason)
            return
        }
        // Counted as items are queued: items_per_category holds items discovered in the same sync too.
        var counts = try categoryCounts()
        for item in try store.items(where: "state = 'discovered' AND COALESCE(download_behavior, ?) = 'full_auto'", arguments: [defaultBehavior]) {
            let categoryCount = item.categories.map { counts[$0] ?? 0 }.max()
            let largest = item.files.filter { $0.isMain || $0.autoDownload }.compactMap(\.size).max()
            let reason = try policyReason(policy, device: device, fileSize: largest, categoryCount: categoryCount)
            let changed = try transition(item.uniqueId) { current in
                guard current.state == .discovered else { return false }
                if let reason {
                    guard current.waitReason != reason.rawValue else { return false }
                    current.waitReason = reason.rawValue
                } else {
                    current.state = .queued
                    current.waitReason = nil
                }
                return true
            }
            if let changed, changed.state == .queued {
                for category in Set(changed.categories) { counts[category, default: 0] += 1 }
            }
        }
    }

    /// Items per category that are queued, downloading or cached (the server's items_per_category).
    func categoryCounts() throws -> [String: Int] {
        try store.pool.read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT c.category_id AS id, count(*) AS n FROM item_category c JOIN item i ON i.unique_id = c.item_id
                    WHERE i.state IN ('queued', 'downloading', 'cached', 'partially_cached') GROUP BY c.category_id
                    """)
            { counts[row["id"]] = row["n"] }
            return counts
        }
    }

    /// Starts downloads of queued items while fewer than max_concurrent_downloads run here.
    /// The network and storage checks hold user-initiated downloads too; each queued item then says why.
    func pump() throws {
        let policy = try currentPolicy()
        let device = self.device()
        if let reason = device.map(policy.holdAll) ?? .deviceConditionsUnavailable {
            try store.pool.write { db in
                try db.execute(sql: "UPDATE item SET wait_reason = ? WHERE state = 'queued'", arguments: [reason.rawValue])
            }
            return
        }
        while true {
            let maxConcurrent = settings.maxConcurrentDownloads
            let (busy, full, isClosed) = service.withLock { (Set($0.running.keys), $0.running.count >= maxConcurrent, $0.closed) }
            guard !full, !isClosed, let item = try store.claimNext(owner: ProcessIdentity.current, excluding: busy) else { break }
            announceState(item, previous: .queued)
            notifications.post(PrefetchNotificationName.itemsStartDownloading, ["ids": .array([.string(item.uniqueId)])])
            let id = item.uniqueId
            service.withLock { service in
                service.running[id] = Task { [self] in
                    await download(item)
                    _ = self.service.withLock { $0.running.removeValue(forKey: id) }
                    try? await BlockingPool.run { [self] in try pump() }
                }
            }
        }
        // What the rest of the queue waits for.
        try store.pool.write { db in
            try db.execute(
                sql: "UPDATE item SET wait_reason = ? WHERE state = 'queued' AND wait_reason IS NOT ?",
                arguments: [PrefetchWaitReason.waitingForSlot.rawValue, PrefetchWaitReason.waitingForSlot.rawValue])
        }
    }

    /// True while item `id` downloads in this process.
    public func isDownloadingHere(_ id: String) -> Bool { service.withLock { $0.running[id] != nil } }

    /// Downloads one claimed item's files, one after another: main files decide the outcome,
    /// thumbnails and subtitles (when auto_download) are fetched too but never change the state.
    /// A main file with a `partialLength` stops there; when every main file is done or has its
    /// partial length on disk (fsynced), the item is `partially_cached` instead of `cached`.
    func download(_ claimed: PrefetchItem) async {
        let id = claimed.uniqueId
        // An HLS item downloaded in part (its partialSeconds) has those segments on disk.
        var hlsPartialDone = false
        for file in claimed.files where !file.done && (file.isMain || file.autoDownload) {
            do {
                if file.role == "hls_main_index" {
                    // The playlists and every segment they name (PrefetchEngine+HLS).
                    if try await !fetchHLS(id, file) { hlsPartialDone = true }
                    continue
                }
                try await fetchFile(id, file, stopAt: file.isMain ? file.partialLength : nil) { [self] onDisk in
                    // Persist progress and learn whether the item is still ours to download
                    // (a pause, cancel or delete from another process shows here).
                    try recordProgress(id, file, onDisk: onDisk)
                }
            } catch FileDownloader.Failure.stopped {
                return
            } catch {
                if Task.isCancelled { return }
                if file.isMain {
                    _ = try? await BlockingPool.run { [self] in try failAttempt(id, claimed, error: "\(error)") }
                    return
                }
                logger.warning("prefetch: \(id): \(file.role) file failed (the item's state does not depend on it): \(error)")
            }
        }
        let hlsPartial = hlsPartialDone
        _ = try? await BlockingPool.run { [self] in
            var finalState: PrefetchItemState?
            let done = try transition(id) { item in
                // A sync that changed the files meanwhile queued the item for the new version.
                guard item.state == .downloading, item.files.map(\.version) == claimed.files.map(\.version) else { return false }
                if item.files.allSatisfy({ $0.done || !$0.isMain }) {
                    item.state = .cached
                } else if item.files.allSatisfy({ file in
                    file.done || !file.isMain || file.partialLength.map { FileDownloader.partialLength(file.localPath) >= $0 } == true
                        || (hlsPartial && file.role == "hls_main_index" && file.partialSeconds != nil)
                }) {
                    item.state = .partiallyCached
                } else {
                    return false
                }
                finalState = item.state
                item.attempts = 0
                item.downloadError = nil
                item.waitReason = nil
                item.retryAtMs = nil
                item.userInitiated = false
                return true
            }
            // Declined: the item moved on (paused, deleted, or queued again by a sync, perhaps
            // claimed by another process since); its owner is not this download's to clear.
            if done != nil {
                try store.setOwner(id, nil)
                clearFailure(item: id)
            }
            if done != nil, finalState == .cached { notifications.post(PrefetchNotificationName.itemsDownloaded, ["ids": .array([.string(id)])]) }
        }
    }

    /// Fetches one file of item `id` (resuming its `.part`), up to `stopAt` bytes when given, and
    /// records the outcome in the item's files. `stillWanted(onDisk)` runs on the BlockingPool at
    /// most twice a second; false stops the download (`Failure.stopped`), bytes kept.
    func fetchFile(_ id: String, _ file: PrefetchFile, stopAt: Int64?, stillWanted: @escaping @Sendable (Int64) throws -> Bool) async throws {
        final class Progress: Sendable {
            let lastWriteNs = Mutex<UInt64>(0)
        }
        let progress = Progress()
        let before = FileDownloader.partialLength(file.localPath)
        let index = file.index
        let version = file.version
        let convert = convertRequest
        let (url, headers) = try await BlockingPool.run { try convert(file.url, [:], id, file.role) }
        let outcome = try await downloader.download(
            url: url, headers: headers, localPath: file.localPath, expectedSize: file.size, sha256: file.sha256,
            validator: file.validator, stopAt: stopAt,
            onValidator: { [self] validator in
                _ = try? store.update(id) { item in
                    guard item.files.indices.contains(index), item.files[index].version == version else { return false }
                    item.files[index].validator = validator
                    return true
                }
            },
            progress: { onDisk in
                let now = Clock.monotonicNs()
                let due = progress.lastWriteNs.withLock { lastWriteNs -> Bool in
                    guard now &- lastWriteNs >= 500_000_000 else { return false }
                    lastWriteNs = now
                    return true
                }
                guard due else { return !Task.isCancelled }
                let still = (try? await BlockingPool.run { try stillWanted(onDisk) }) ?? false
                return still && !Task.isCancelled
            })
        try await BlockingPool.run { [self] in
            try addBytesToday(outcome.fetched)
            let kept = try store.update(id) { item in
                // Another version of the file by now (a sync changed it): not this download's to record.
                guard item.files.indices.contains(index), item.files[index].version == version else { return false }
                if outcome.complete {
                    item.files[index].done = true
                    item.files[index].bytesDownloaded = item.files[index].size ?? FileDownloader.fileLength(item.files[index].localPath)
                } else {
                    item.files[index].bytesDownloaded = outcome.onDisk
                }
                item.files[index].validator = outcome.validator ?? item.files[index].validator
                item.bytesDownloaded = item.files.reduce(0) { $0 + ($1.done ? $1.bytesDownloaded : FileDownloader.partialLength($1.localPath)) }
                return true
            }
            if kept == nil { throw FileDownloader.Failure.stopped }
        }
        logger.debug(
            "prefetch: \(id) file \(index) \(outcome.complete ? "done" : "partial, \(outcome.onDisk) bytes on disk"), \(outcome.fetched) bytes fetched (\(before) were on disk)"
        )
    }

    /// Stores a file's progress; false when the item is no longer Downloading or the file is
    /// another version by now (a sync changed it).
    func recordProgress(_ id: String, _ file: PrefetchFile, onDisk: Int64) throws -> Bool {
        var still = false
        let index = file.index
        let item = try store.update(id) { item in
            guard item.state == .downloading, item.files.indices.contains(index), item.files[index].version == file.version else { return false }
            still = true
            item.files[index].bytesDownloaded = onDisk
            item.bytesDownloaded = item.files.reduce(0) { $0 + ($1.index == index ? onDisk : ($1.done ? $1.bytesDownloaded : 0)) }
            return true
        }
        if let item {
            notifications.post(
                PrefetchNotificationName.downloadProgress,
                ["id": .string(id), "bytesDownloaded": .number(Double(item.bytesDownloaded)), "size": .number(Double(item.size))])
        }
        return still
    }

    /// A main file's attempt failed: Idle to retry later (with backoff), or, after 3 retries,
    /// Failed with downloadError and the files removed; no automatic retry then. Nothing changes
    /// when the item's files are no longer the `claimed` item's (a sync queued the new version).
    func failAttempt(_ id: String, _ claimed: PrefetchItem, error: String) throws {
        let changed = try transition(id) { item in
            guard item.state == .downloading, item.files.map(\.version) == claimed.files.map(\.version) else { return false }
            item.attempts += 1
            item.downloadError = error
            if item.attempts > Self.maxRetries {
                item.state = .failed
                item.waitReason = nil
                item.retryAtMs = nil
                removeFiles(&item)
            } else {
                item.state = .idle
                item.waitReason = PrefetchWaitReason.waitingToRetry.rawValue
                let delay = settings.retryDelay * pow(2, Double(item.attempts - 1))
                item.retryAtMs = Clock.wallMs() + Int64(min(delay, 86_400) * 1000)
            }
            return true
        }
        if changed != nil {
            try store.setOwner(id, nil)
            recordFailure(error, item: id)
        }
    }
}
