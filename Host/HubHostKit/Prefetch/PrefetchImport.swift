import Foundation

/// The PCD SDK's addDownloadedItem: content the app already has, or wants at once, joins the
/// catalog. The document is a JSON object with the PCD SDK's VocImportFileMetadata keys without the
/// prefix: ContentId, Provider, DownloadStatus, FilePath, Duration, Size, ContentType, ContentUrl,
/// Title, Summary, ThumbFile, ExpiryDate, TimeStamp, DownloadFinishedTime, SDKPassthroughInfo.
/// DownloadStatus (VocImportFileDownloadStatus):
/// - `FullyDownloaded`: FilePath (one file) is copied into the item's folder, its size checked
///   against Size, and the item is Cached; an HLS download (FilePath a `.m3u8` file or the folder
///   holding it: PrefetchHLSImport) is stored with every file it names, as an HLS download is;
/// - `NewlyAdding`: the item is queued at once, user-initiated, from ContentUrl;
/// - `PartiallyDownloaded`: only the metadata is imported: the item is Discovered.
/// The item's uniqueId is `Provider:ContentId` (the service's id is not known yet); an item of the
/// same source and contentId already in the catalog is refused. Works before and after registration.
package struct PrefetchImportMetadata: Codable, Sendable, Equatable {
    package enum Status: String, Codable, Sendable {
        case fullyDownloaded = "FullyDownloaded", newlyAdding = "NewlyAdding", partiallyDownloaded = "PartiallyDownloaded"
    }

    package var contentId: String
    package var provider: String
    package var downloadStatus: Status
    package var filePath: String?
    package var duration: Double?
    package var size: Int64?
    package var contentType: String?
    package var contentUrl: String?
    package var title: String?
    package var summary: String?
    package var thumbFile: String?
    /// Seconds since 1970.
    package var expiryDate: Int64?
    package var timeStamp: Int64?
    package var downloadFinishedTime: Int64?
    package var sdkPassthroughInfo: String?

    package init(
        contentId: String, provider: String, downloadStatus: Status, filePath: String? = nil, duration: Double? = nil,
        size: Int64? = nil, contentType: String? = nil, contentUrl: String? = nil, title: String? = nil, summary: String? = nil,
        thumbFile: String? = nil, expiryDate: Int64? = nil, timeStamp: Int64? = nil, downloadFinishedTime: Int64? = nil,
        sdkPassthroughInfo: String? = nil
    ) {
        self.contentId = contentId
        self.provider = provider
        self.downloadStatus = downloadStatus
        self.filePath = filePath
        self.duration = duration
        self.size = size
        self.contentType = contentType
        self.contentUrl = contentUrl
        self.title = title
        self.summary = summary
        self.thumbFile = thumbFile
        self.expiryDate = expiryDate
        self.timeStamp = timeStamp
        self.downloadFinishedTime = downloadFinishedTime
        self.sdkPassthroughInfo = sdkPassthroughInfo
    }

    enum CodingKeys: String, CodingKey {
        case contentId = "ContentId", provider = "Provider", downloadStatus = "DownloadStatus", filePath = "FilePath"
        case duration = "Duration", size = "Size", contentType = "ContentType", contentUrl = "ContentUrl", title = "Title"
        case summary = "Summary", thumbFile = "ThumbFile", expiryDate = "ExpiryDate", timeStamp = "TimeStamp"
        case downloadFinishedTime = "DownloadFinishedTime", sdkPassthroughInfo = "SDKPassthroughInfo"
    }
}

extension PrefetchEngine {
    /// Imports one item; returns it as stored. Throws PrefetchError.invalid with the reason.
    @discardableResult
    package func addDownloadedItem(_ metadata: PrefetchImportMetadata) throws -> PrefetchItem {
        guard CatalogProtocol.isValidID(metadata.provider), CatalogProtocol.isValidID(metadata.contentId) else {
            throw PrefetchError.invalid("Provider and ContentId must be 1-256 letters, digits, '-', '_', '.' or ':'")
        }
        if let size = metadata.size, !(0...CatalogProtocol.maxFileSize).contains(size) { throw PrefetchError.invalid("Size \(size) is out of range") }
        if let expiry = metadata.expiryDate, !(0...253_402_300_799).contains(expiry) { throw PrefetchError.invalid("ExpiryDate is out of range") }
        let id = "\(metadata.provider):\(metadata.contentId)"
        guard CatalogProtocol.isValidID(id) else { throw PrefetchError.invalid("Provider:ContentId is longer than 256 bytes") }
        if try !store.items(where: "source_name = ? AND content_id = ? AND state <> 'deleted'", arguments: [metadata.provider, metadata.contentId])
            .isEmpty
        {
            throw PrefetchError.invalid("\(metadata.provider)/\(metadata.contentId) is already in the catalog")
        }
        let url = metadata.contentUrl ?? ""
        let validURL = URL(string: url).map { ["http", "https"].contains($0.scheme?.lowercased() ?? "") && $0.host != nil } ?? false
        if metadata.downloadStatus == .newlyAdding && !validURL { throw PrefetchError.invalid("NewlyAdding needs an http(s) ContentUrl") }
        let extensionSource = metadata.filePath ?? url
        var main = PrefetchFile(
            role: "main", index: 0, url: url, size: metadata.size, sha256: nil, autoDownload: true,
            localPath: localPath(item: id, index: 0, role: "main", url: URL(fileURLWithPath: extensionSource).absoluteString),
            bytesDownloaded: 0, done: false, validator: nil)
        var files: [PrefetchFile] = []
        var state = PrefetchItemState.discovered
        switch metadata.downloadStatus {
        case .fullyDownloaded:
            guard let path = metadata.filePath else { throw PrefetchError.invalid("FullyDownloaded needs FilePath") }
            if PrefetchHLSImport.applies(to: path) {
                let source = try PrefetchHLSImport(path: path)
                if let size = metadata.size, size != source.length {
                    throw PrefetchError.invalid("the HLS download at FilePath has \(source.summary), Size says \(size)")
                }
                main = try storeHLSImport(source, id: id)
                state = .cached
                break
            }
            guard FileManager.default.fileExists(atPath: path) else { throw PrefetchError.invalid("FilePath '\(path)' does not exist") }
            let length = FileDownloader.fileLength(path)
            if let size = metadata.size, size != length { throw PrefetchError.invalid("FilePath has \(length) bytes, Size says \(size)") }
            try FileManager.default.createDirectory(atPath: folder(id), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try? FileManager.default.removeItem(atPath: main.localPath)
            try FileManager.default.copyItem(atPath: path, toPath: main.localPath)
            main.size = length
            main.bytesDownloaded = length
            main.done = true
            state = .cached
        case .newlyAdding:
            state = .queued
        case .partiallyDownloaded:
            state = .discovered
        }
        files.append(main)
        if let thumb = metadata.thumbFile, FileManager.default.fileExists(atPath: thumb) {
            var file = PrefetchFile(
                role: "thumbnail", index: 1, url: "", size: FileDownloader.fileLength(thumb), sha256: nil, autoDownload: false,
                localPath: localPath(item: id, index: 1, role: "thumbnail", url: URL(fileURLWithPath: thumb).absoluteString),
                bytesDownloaded: 0, done: false, validator: nil)
            try FileManager.default.createDirectory(atPath: folder(id), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try? FileManager.default.removeItem(atPath: file.localPath)
            try FileManager.default.copyItem(atPath: thumb, toPath: file.localPath)
            file.bytesDownloaded = file.size ?? 0
            file.done = true
            files.append(file)
        }
        let now = Clock.wallMs()
        let item = PrefetchItem(
            uniqueId: id, contentId: metadata.contentId, sourceName: metadata.provider, categories: [],
            title: metadata.title ?? "", summary: metadata.summary ?? "", shareURL: nil, type: metadata.contentType,
            state: state, downloadError: nil, waitReason: nil, retryAtMs: nil, attempts: 0, downloadBehavior: nil,
            userInitiated: state == .queued, bytesDownloaded: files.filter(\.done).reduce(0) { $0 + $1.bytesDownloaded },
            size: metadata.size ?? (main.done ? main.bytesDownloaded : main.size ?? 0), files: files, persistentUserInfo: [:],
            sdkMetadataPassthrough: metadata.sdkPassthroughInfo, expiryMs: metadata.expiryDate.map { $0 * 1000 },
            saved: false, locked: false, viewed: false, discoveredMs: now, updatedMs: now)
        try store.pool.write { db in
            // A deleted tombstone of the same id gives way to the import.
            try PrefetchStore.write(db, item)
        }
        notifications.post(PrefetchNotificationName.itemsDiscovered, ["ids": .array([.string(id)]), "imported": .bool(true)])
        if state == .cached { notifications.post(PrefetchNotificationName.itemsDownloaded, ["ids": .array([.string(id)])]) }
        if state == .queued { try pump() }
        return item
    }
}
