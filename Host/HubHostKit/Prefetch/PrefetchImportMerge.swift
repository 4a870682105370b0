import Foundation
import GRDB

/// Merging an imported item (addDownloadedItem, uniqueId `Provider:ContentId`) with the catalog's
/// entry for the same content (same source and contentId, a different uniqueId), when a sync or a
/// look-up brings it (the PCD SDK on addDownloadedItem: "this call will internally update the item with the server
/// information"). The imported item becomes the catalog's: the server's uniqueId, metadata,
/// categories and files; it keeps saved, locked, viewed, persistentUserInfo, its downloadBehavior
/// override and its discovery time, and its consumption records follow it.
///
/// Its file:
/// - kept (hard-linked into the catalog item's folder, the import's folder removed after the
///   commit) when the import was Cached, the catalog entry has exactly one main file of role
///   `main`, and the file's length equals the catalog's size and its sha256 the catalog's digest
///   (each when the catalog gives one): the item is Cached at once, nothing is downloaded. The
///   imported thumbnail takes the catalog's first thumbnail's place;
/// - discarded otherwise (a mismatch: the app's copy is not the server's content, or cannot be
///   checked against an HLS entry): the item starts as the catalog's, `discovered`, so policy (or a
///   download request) fetches the catalog's file, verified as any download.
/// An import still waiting for its download (NewlyAdding: queued, idle, downloading) stays
/// queued and user-initiated under the new id (a download in progress in this process is stopped
/// and starts again from the catalog's URL); a paused import stays paused. Announced with
/// PrefetchImportMerged {"id", "imported", "state", "keptFile"} after the commit.
extension PrefetchEngine {
    struct Merge {
        var item: PrefetchItem
        var imported: PrefetchItem
        var keptFile: Bool
    }

    /// The uniqueId an import of this content has.
    static func importedID(source: String, contentId: String) -> String { "\(source):\(contentId)" }

    /// The sha256 of each imported Cached main file a page's new entries will be checked against,
    /// computed before the write transaction (hashing a large file must not hold the catalog's
    /// write lock). Keyed by the imported item's id.
    func importDigests(_ entries: [CatalogProtocol.ItemEntry]) -> [String: String] {
        var digests: [String: String] = [:]
        for entry in entries {
            let id = Self.importedID(source: entry.source, contentId: entry.contentId)
            guard id != entry.uniqueId, entry.files.contains(where: { $0.role == "main" && $0.sha256 != nil }),
                let imported = try? store.item(id), imported.state == .cached,
                let main = imported.files.first(where: { $0.role == "main" && $0.done }),
                let digest = SHA256.hex(ofFile: main.localPath)
            else { continue }
            digests[id] = digest.lowercased()
        }
        return digests
    }

    /// The merged item for a catalog entry not yet in the catalog, when an import of the same
    /// content is; nil when there is none. Writes it and removes the imported row, in `db`'s
    /// transaction; the caller removes the imported folder after the commit.
    func mergeImport(
        _ db: Database, entry: CatalogProtocol.ItemEntry, files: [PrefetchFile], size: Int64,
        now: Int64, digests: [String: String]
    ) throws -> Merge? {
        let importedID = Self.importedID(source: entry.source, contentId: entry.contentId)
        guard importedID != entry.uniqueId, let imported = try PrefetchStore.item(db, importedID),
            imported.sourceName == entry.source, imported.contentId == entry.contentId, imported.state != .deleted
        else { return nil }
        var item = PrefetchItem(
            uniqueId: entry.uniqueId, contentId: entry.contentId, sourceName: entry.source, categories: entry.categories,
            title: entry.title ?? imported.title, summary: entry.summary ?? imported.summary, shareURL: entry.shareUrl,
            type: entry.type ?? imported.type, state: .discovered, downloadError: nil, waitReason: nil, retryAtMs: nil,
            attempts: 0, downloadBehavior: imported.downloadBehavior, userInitiated: false, bytesDownloaded: 0, size: size,
            files: files, persistentUserInfo: imported.persistentUserInfo,
            sdkMetadataPassthrough: entry.sdkMetadataPassthrough ?? imported.sdkMetadataPassthrough,
            expiryMs: entry.expiry.map { $0 * 1000 } ?? imported.expiryMs, saved: imported.saved, locked: imported.locked,
            viewed: imported.viewed, discoveredMs: imported.discoveredMs, updatedMs: now)
        let mains = files.filter(\.isMain)
        var kept = false
        if imported.state == .cached, mains.count == 1, mains[0].role == "main",
            let source = imported.files.first(where: { $0.role == "main" && $0.done })
        {
            let length = FileDownloader.fileLength(source.localPath)
            let target = mains[0]
            let sizeMatches = length > 0 && (target.size.map { $0 == length } ?? true)
            let digestMatches = target.sha256.map { digests[importedID] == $0.lowercased() } ?? true
            if sizeMatches && digestMatches, try link(source.localPath, to: target.localPath, folder: folder(entry.uniqueId)) {
                item.files[target.index].done = true
                item.files[target.index].bytesDownloaded = length
                if let thumb = imported.files.first(where: { $0.role == "thumbnail" && $0.done }),
                    let slot = item.files.firstIndex(where: { $0.role == "thumbnail" }),
                    try link(thumb.localPath, to: item.files[slot].localPath, folder: folder(entry.uniqueId))
                {
                    item.files[slot].done = true
                    item.files[slot].bytesDownloaded = FileDownloader.fileLength(thumb.localPath)
                }
                item.state = .cached
                item.bytesDownloaded = item.files.filter(\.done).reduce(0) { $0 + $1.bytesDownloaded }
                kept = true
            }
        }
        if !kept {
            switch imported.state {
            case .queued, .idle, .downloading:
                item.state = .queued
                item.userInitiated = true
            case .paused:
                item.state = .paused
                item.waitReason = PrefetchWaitReason.pausedByUser.rawValue
            default:
                item.state = .discovered
            }
        }
        try db.execute(sql: "DELETE FROM item_category WHERE item_id = ?", arguments: [importedID])
        try db.execute(sql: "DELETE FROM item WHERE unique_id = ?", arguments: [importedID])
        if try db.tableExists("consumption") {
            try db.execute(sql: "UPDATE consumption SET item_id = ? WHERE item_id = ?", arguments: [entry.uniqueId, importedID])
        }
        try PrefetchStore.write(db, item)
        return Merge(item: item, imported: imported, keptFile: kept)
    }

    /// A hard link of `source` at `target` (same file system: the data directory), replacing a
    /// leftover of an earlier attempt; false when the source is gone or cannot be linked.
    private func link(_ source: String, to target: String, folder: String) throws -> Bool {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try? FileManager.default.removeItem(atPath: target)
        if Foundation.link(source, target) == 0 { return true }
        // Another file system (a data directory spread over mounts): copy instead.
        return (try? FileManager.default.copyItem(atPath: source, toPath: target)) != nil
    }

    /// After the commit: the import's folder goes, a download of it in this process stops, and
    /// the merge is announced.
    func finishMerges(_ merges: [Merge]) {
        guard !merges.isEmpty else { return }
        stopLocal(merges.map(\.imported.uniqueId))
        for merge in merges {
            try? FileManager.default.removeItem(atPath: folder(merge.imported.uniqueId))
            notifications.post(
                PrefetchNotificationName.importMerged,
                [
                    "id": .string(merge.item.uniqueId), "imported": .string(merge.imported.uniqueId),
                    "state": .string(merge.item.state.rawValue), "keptFile": .bool(merge.keptFile)
                ])
            if merge.item.state != merge.imported.state { announceState(merge.item, previous: merge.imported.state) }
        }
        if merges.contains(where: { $0.item.state == .queued }) { try? pump() }
    }
}
