import Foundation
import GRDB
import Synchronization

/// Thumbnail-only downloads (item download behavior `thumbnail_only`, from the settings or the
/// item's own override): policy fetches the item's thumbnail files and never its main file. The
/// item stays `discovered` (waitReason `thumbnail_only`): thumbnails never change an item's state
/// (as in the PCD SDK). They share `max_concurrent_downloads` with item downloads, obey the same policy
/// (network, battery, time window, ...), and a failed thumbnail is tried again after `retry_delay`.
extension PrefetchEngine {
    /// Starts the thumbnail downloads policy allows now (called each round after applyPolicy).
    func startThumbnailDownloads() throws {
        let policy = try currentPolicy()
        guard try policyReason(policy, device: device(), fileSize: nil, categoryCount: nil) == nil else { return }
        let now = Clock.wallMs()
        let candidates = try store.items(
            where: """
                state = 'discovered' AND COALESCE(download_behavior, ?) = 'thumbnail_only' AND (retry_at_ms IS NULL OR retry_at_ms <= ?)
                AND EXISTS (SELECT 1 FROM json_each(item.files) WHERE json_extract(value, '$.role') = 'thumbnail' AND json_extract(value, '$.done') = 0)
                """, arguments: [settings.itemDownloadBehavior.rawValue, now], limit: 64)
        for item in candidates {
            let maxConcurrent = settings.maxConcurrentDownloads
            let (busy, full, isClosed) = service.withLock {
                ($0.running[item.uniqueId] != nil, $0.running.count >= maxConcurrent, $0.closed)
            }
            if full || isClosed { break }
            if busy { continue }
            let owner = ProcessIdentity.current
            guard try store.claimWithoutStateChange(item.uniqueId, state: .discovered, owner: owner) else { continue }
            let id = item.uniqueId
            let thumbnails = item.files.filter { $0.role == "thumbnail" && !$0.done }
            service.withLock { service in
                service.running[id] = Task { [self] in
                    await downloadThumbnails(id, thumbnails, owner: owner)
                    _ = self.service.withLock { $0.running.removeValue(forKey: id) }
                }
            }
        }
    }

    /// Fetches `files` (an item's thumbnails) one after another while the item stays discovered;
    /// a failure is logged and sets the item's retry time, never its state.
    func downloadThumbnails(_ id: String, _ files: [PrefetchFile], owner: String) async {
        var failure: String?
        for file in files {
            do {
                try await fetchFile(id, file, stopAt: nil) { [self] _ in try store.item(id)?.state == .discovered }
            } catch FileDownloader.Failure.stopped {
                break
            } catch {
                if Task.isCancelled { break }
                failure = "\(error)"
                logger.warning("prefetch: \(id): thumbnail file \(file.index) failed (the item's state does not depend on it): \(error)")
            }
        }
        let retryAt = failure.map { _ in Clock.wallMs() + Int64(min(settings.retryDelay, 86_400) * 1000) }
        _ = try? await BlockingPool.run { [self] in
            _ = try store.update(id) { item in
                guard item.state == .discovered, item.retryAtMs != retryAt else { return false }
                item.retryAtMs = retryAt
                return true
            }
            try store.release(id, owner: owner)
        }
    }
}

extension PrefetchStore {
    /// Takes item `id` for work that does not change its state (thumbnail-only downloads): true
    /// when it is in `state` and no other running process owns it, with `owner` now set.
    func claimWithoutStateChange(_ id: String, state: PrefetchItemState, owner: String) throws -> Bool {
        try pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT state, owner FROM item WHERE unique_id = ?", arguments: [id]),
                (row["state"] as String) == state.rawValue
            else { return false }
            if let current = row["owner"] as String?, current != owner, ProcessIdentity.isRunning(current) { return false }
            try db.execute(sql: "UPDATE item SET owner = ? WHERE unique_id = ?", arguments: [owner, id])
            return true
        }
    }

    /// Gives item `id` back when `owner` still holds it (a download claim made since is kept).
    func release(_ id: String, owner: String) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE item SET owner = NULL WHERE unique_id = ? AND owner = ? AND state <> 'downloading'", arguments: [id, owner])
        }
    }
}
