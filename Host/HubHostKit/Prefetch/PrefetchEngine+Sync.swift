import Foundation
import GRDB
import Synchronization

/// Catalog sync: fetch the pages of changes since the stored cursor, apply each in one
/// transaction (sources, categories, items, tombstones), then announce what changed.
extension PrefetchEngine {
    /// What a `sync` changed.
    public struct SyncReport: Codable, Sendable, Equatable {
        /// The catalog pages fetched and applied.
        public var pages: Int
        /// The ids of new items.
        public var discovered: [String]
        /// The ids of changed items.
        public var updated: [String]
        /// The ids of items the catalog deleted.
        public var evicted: [String]
        /// The cursor the next sync asks from.
        public var cursor: String
        /// Imported items that became the catalog's entry for the same content: imported id -> catalog id.
        public var merged: [String: String] = [:]
    }

    /// Fetches the catalog now. Throws when not registered or when the service fails (the
    /// catalog keeps what it had; the cursor only moves after a page is applied).
    @discardableResult
    public func sync() throws -> SyncReport {
        guard let catalog, let registration = try store.meta("registration_id") else {
            throw PrefetchError.notRegistered((try? store.lastFailure())??.reason ?? "register first (hubhost prefetch register)")
        }
        let device = try deviceID()
        var catalogObjects: (categories: [String], sources: [String]) = ([], [])
        var report = SyncReport(pages: 0, discovered: [], updated: [], evicted: [], cursor: try store.meta("cursor") ?? "")
        for _ in 0..<Self.maxPages {
            let delta: CatalogProtocol.CatalogDelta
            do {
                delta = try catalog.catalog(deviceID: device, registration: registration, since: report.cursor.isEmpty ? nil : report.cursor)
            } catch {
                recordFailure("sync: \(error)")
                throw error
            }
            if delta.registered == false {
                try store.setMeta(["registration_id": nil, "initialized": nil])
                markNotRegistered(delta.reason ?? "the service no longer knows this device")
                throw PrefetchError.notRegistered(delta.reason ?? "the service no longer knows this device")
            }
            guard let cursor = delta.cursor, !cursor.isEmpty, cursor.utf8.count <= 1024 else {
                throw PrefetchError.service("the catalog page has no usable cursor")
            }
            for item in delta.items ?? [] {
                do { try CatalogProtocol.checkItem(item) } catch { throw PrefetchError.service("\(error)") }
            }
            let changes = try apply(delta, cursor: cursor)
            report.pages += 1
            report.discovered += changes.discovered
            report.updated += changes.updated
            report.evicted += changes.evicted
            report.cursor = cursor
            for merge in changes.merges { report.merged[merge.imported.uniqueId] = merge.item.uniqueId }
            catalogObjects.categories += changes.categories
            catalogObjects.sources += changes.sources
            for (item, previous) in changes.transitions { announceState(item, previous: previous) }
            if delta.more != true { break }
        }
        let now = Clock.wallMs()
        let first = try store.meta("initialized") == nil
        try store.setMeta(["last_sync_ms": "\(now)", "initialized": "1", "sync_requested": nil])
        setSynced(now)
        if !report.discovered.isEmpty {
            notifications.post(PrefetchNotificationName.itemsDiscovered, ["ids": .array(report.discovered.map(JSONValue.string))])
        }
        if !report.evicted.isEmpty {
            notifications.post(PrefetchNotificationName.itemsEvicted, ["ids": .array(report.evicted.map(JSONValue.string))])
        }
        if !catalogObjects.categories.isEmpty || !catalogObjects.sources.isEmpty {
            notifications.post(
                PrefetchNotificationName.catalogChanged,
                [
                    "categories": .array(catalogObjects.categories.map(JSONValue.string)),
                    "sources": .array(catalogObjects.sources.map(JSONValue.string))
                ])
        }
        if first { notifications.post(PrefetchNotificationName.didInitialize, ["items": .number(Double(report.discovered.count))]) }
        return report
    }

    /// The payload key that addresses a push notification to prefetch (the PCD SDK's
    /// didReceiveRemoteNotification hook): `{"hubhost_prefetch": "refresh"}` asks for a catalog refresh.
    public static let notificationKey = "hubhost_prefetch"

    /// Asks for a catalog sync at the next round of whichever process runs the `prefetch` service
    /// (kept in the catalog, so `hubhost notifications received` beside a running serve works).
    public func requestRefresh() throws {
        try store.setMeta(["sync_requested": "1"])
        service.withLock { $0.lastSyncMs = nil }
    }

    struct AppliedChanges {
        var discovered: [String] = []
        var updated: [String] = []
        var evicted: [String] = []
        var transitions: [(PrefetchItem, PrefetchItemState)] = []
        /// Items whose download was in flight when their files changed: queued again for the new version.
        var restarted: [String] = []
        /// Imported items merged with their catalog entry (announced by finishMerges).
        var merges: [Merge] = []
        /// Categories and sources the page added, changed or removed.
        var categories: [String] = []
        var sources: [String] = []
    }

    /// Applies a page of changes in one transaction; `cursor` nil leaves the stored cursor (a look-up).
    /// Long: items, their files, categories and sources change inside one transaction, and the
    /// changes collected for the notifications are the transaction's own.
    func apply(_ delta: CatalogProtocol.CatalogDelta, cursor: String?) throws -> AppliedChanges {
        var changes = AppliedChanges()
        var doomedFolders: [String] = []
        let digests = importDigests(delta.items ?? [])
        try store.pool.write { db in
            for source in delta.sources ?? [] where !source.name.isEmpty {
                // Subscription is the user's: the server's value only seeds a new source.
                try db.execute(
                    sql: """
                        INSERT INTO source(name, display_name, subscribed) VALUES (?, ?, ?)
                        ON CONFLICT(name) DO UPDATE SET display_name = excluded.display_name
                        """, arguments: [source.name, source.displayName ?? source.name, source.subscribed ?? true])
                changes.sources.append(source.name)
            }
            for category in delta.categories ?? [] where !category.id.isEmpty {
                try db.execute(
                    sql: """
                        INSERT INTO category(id, name, parent, selected, suggested) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT(id) DO UPDATE SET name = excluded.name, parent = excluded.parent, suggested = excluded.suggested
                        """,
                    arguments: [category.id, category.name ?? category.id, category.parent, category.selected ?? true, category.suggested ?? false])
                changes.categories.append(category.id)
            }
            let now = Clock.wallMs()
            for entry in delta.items ?? [] {
                let files = entry.files.enumerated().map { index, file in
                    PrefetchFile(
                        role: file.role, index: index, url: file.url, size: file.size, sha256: file.sha256?.lowercased(),
                        autoDownload: file.autoDownload ?? CatalogProtocol.mainRoles.contains(file.role),
                        localPath: localPath(item: entry.uniqueId, index: index, role: file.role, url: file.url),
                        bytesDownloaded: 0, done: false, validator: nil, duration: file.duration)
                }
                let size = files.filter { $0.isMain || $0.autoDownload }.reduce(Int64(0)) { $0 + ($1.size ?? 0) }
                if var item = try PrefetchStore.item(db, entry.uniqueId) {
                    let previous = item.state
                    item.contentId = entry.contentId
                    item.sourceName = entry.source
                    item.categories = entry.categories
                    item.title = entry.title ?? ""
                    item.summary = entry.summary ?? ""
                    item.shareURL = entry.shareUrl
                    item.type = entry.type
                    item.expiryMs = entry.expiry.map { $0 * 1000 }
                    item.sdkMetadataPassthrough = entry.sdkMetadataPassthrough
                    let same = item.files.map(\.version) == files.map(\.version)
                    if !same && item.state != .deleted {
                        // The files changed at the origin: the old ones are dropped and the item starts again.
                        doomedFolders.append(folder(item.uniqueId))
                        item.files = files
                        item.bytesDownloaded = 0
                        item.size = size
                        if [.cached, .partiallyCached, .failed, .idle].contains(item.state) {
                            item.state = .discovered
                            item.attempts = 0
                        } else if item.state == .downloading {
                            // The download in flight fetches the old version: it is stopped (its
                            // commits check the version) and the item is queued for the new one.
                            item.state = .queued
                            item.waitReason = nil
                            item.retryAtMs = nil
                            item.attempts = 0
                            item.downloadError = nil
                            try db.execute(sql: "UPDATE item SET owner = NULL WHERE unique_id = ?", arguments: [item.uniqueId])
                            changes.restarted.append(item.uniqueId)
                        }
                    }
                    item.updatedMs = now
                    try PrefetchStore.write(db, item)
                    changes.updated.append(item.uniqueId)
                    if item.state != previous { changes.transitions.append((item, previous)) }
                } else if let merge = try mergeImport(db, entry: entry, files: files, size: size, now: now, digests: digests) {
                    changes.merges.append(merge)
                    changes.updated.append(merge.item.uniqueId)
                } else {
                    let item = PrefetchItem(
                        uniqueId: entry.uniqueId, contentId: entry.contentId, sourceName: entry.source, categories: entry.categories,
                        title: entry.title ?? "", summary: entry.summary ?? "", shareURL: entry.shareUrl, type: entry.type,
                        state: .discovered, downloadError: nil, waitReason: nil, retryAtMs: nil, attempts: 0,
                        downloadBehavior: nil, userInitiated: false, bytesDownloaded: 0, size: size, files: files,
                        persistentUserInfo: [:], sdkMetadataPassthrough: entry.sdkMetadataPassthrough,
                        expiryMs: entry.expiry.map { $0 * 1000 }, saved: false, locked: false, viewed: false,
                        discoveredMs: now, updatedMs: now)
                    try PrefetchStore.write(db, item)
                    changes.discovered.append(item.uniqueId)
                }
            }
            for id in delta.deleted?.items ?? [] {
                guard var item = try PrefetchStore.item(db, id), item.state != .deleted else { continue }
                let previous = item.state
                doomedFolders.append(folder(id))
                item.files = item.files.map {
                    var file = $0
                    file.done = false
                    file.bytesDownloaded = 0
                    return file
                }
                item.bytesDownloaded = 0
                item.state = .deleted
                item.waitReason = nil
                item.updatedMs = now
                try PrefetchStore.write(db, item)
                changes.evicted.append(id)
                changes.transitions.append((item, previous))
            }
            for id in delta.deleted?.categories ?? [] {
                try db.execute(sql: "DELETE FROM category WHERE id = ?", arguments: [id])
                changes.categories.append(id)
            }
            for name in delta.deleted?.sources ?? [] {
                try db.execute(sql: "DELETE FROM source WHERE name = ?", arguments: [name])
                changes.sources.append(name)
            }
            if let cursor { try PrefetchStore.setMeta(db, ["cursor": cursor]) }
        }
        // Files go after the commit: a crash in between leaves files of a Deleted item (removed
        // at the next deletion or purge), never a Cached item without files.
        for path in doomedFolders { try? FileManager.default.removeItem(atPath: path) }
        stopLocal(changes.restarted)
        finishMerges(changes.merges)
        return changes
    }
}

extension PrefetchFile {
    /// What identifies the version of a file: its role, URL, size and digest as the catalog gives
    /// them. A sync that changes it makes the file another one: what was fetched of the old one is
    /// never committed as the new one.
    struct Version: Equatable, Sendable {
        var role: String
        var url: String
        var size: Int64?
        var sha256: String?
    }

    var version: Version { Version(role: role, url: url, size: size, sha256: sha256) }
}
