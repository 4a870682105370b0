import Foundation
import GRDB

/// Auto purge (the PCD SDK's enableAutoPurge), with rules that SDK leaves to each implementation:
/// - expired items (expiry in the past) are evicted whenever purge runs;
/// - under storage pressure (free bytes below prefetch.storage_low) or above the cache size limit
///   (prefetch.cache_size_limit), items with files are evicted one by one until the pressure is
///   relieved: consumed (viewed) before unconsumed, then least recently used (oldest updatedMs:
///   the last time the item changed: cached, consumed, flagged);
/// - saved and locked items are never purged; downloading items are not touched.
/// An evicted item's files are removed and it becomes Deleted (like a catalog tombstone, so policy
/// does not download it again at once), announced with PrefetchItemsEvicted.
extension PrefetchEngine {
    /// What a purge did.
    public struct PurgeReport: Codable, Sendable, Equatable {
        /// The ids of the items evicted (now Deleted).
        public var evicted: [String]
        /// The bytes of item files removed.
        public var freedBytes: Int64
        /// Why purge ran beyond expired items: "storage_low", "cache_size_limit", or nil.
        public var pressure: String?
    }

    /// Bytes of the item files on disk (done files and partial ones).
    func cachedBytes() throws -> Int64 {
        try store.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(bytes_downloaded), 0) FROM item WHERE state <> 'deleted'") ?? 0
        }
    }

    /// Runs the purge rules now (the `prefetch` service runs it every round when
    /// enable_auto_purge is true; `prefetch purge` runs it on request either way).
    @discardableResult
    public func purge() throws -> PurgeReport {
        var report = PurgeReport(evicted: [], freedBytes: 0, pressure: nil)
        let now = Clock.wallMs()
        let device = self.device()
        let limit = Int64(settings.cacheSizeLimit)
        var onDisk = try cachedBytes()
        var free = device?.freeBytes.map { Int64(clamping: $0) }
        let unprotected = "saved = 0 AND locked = 0 AND state NOT IN ('deleted', 'downloading')"
        var candidates = try store.items(
            where: "\(unprotected) AND expiry_ms IS NOT NULL AND expiry_ms < ?", arguments: [now],
            orderBy: "expiry_ms, unique_id")
        // The whole list of items with files only under pressure: a round without pressure stays cheap.
        if free.map({ $0 < Int64(settings.storageLow) }) == true || (limit > 0 && onDisk > limit) {
            candidates += try store.items(
                where: "\(unprotected) AND bytes_downloaded > 0 AND (expiry_ms IS NULL OR expiry_ms >= ?)",
                arguments: [now], orderBy: "viewed DESC, updated_ms, unique_id")
        }
        for item in candidates {
            let expired = (item.expiryMs ?? Int64.max) < now
            let storagePressure = free.map { $0 < Int64(settings.storageLow) } ?? false
            let sizePressure = limit > 0 && onDisk > limit
            guard expired || storagePressure || sizePressure else { continue }
            if !expired && report.pressure == nil { report.pressure = storagePressure ? "storage_low" : "cache_size_limit" }
            let evicted = try transition(item.uniqueId) { current in
                guard !current.saved, !current.locked, current.state != .downloading, current.state != .deleted else { return false }
                removeFiles(&current)
                current.state = .deleted
                current.waitReason = nil
                current.retryAtMs = nil
                return true
            }
            guard evicted != nil else { continue }
            report.evicted.append(item.uniqueId)
            report.freedBytes += item.bytesDownloaded
            onDisk -= item.bytesDownloaded
            free = free.map { $0 + item.bytesDownloaded }
        }
        if !report.evicted.isEmpty {
            notifications.post(
                PrefetchNotificationName.itemsEvicted,
                [
                    "ids": .array(report.evicted.map(JSONValue.string)),
                    "reason": .string(report.pressure ?? "expired")
                ])
        }
        return report
    }
}
