import AsyncHTTPClient
import Foundation
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// HLS items (an `hls_main_index` file): the download fetches the main index, the playlists it
/// names and every segment, key and initialisation section they name, into `<item>/hls/`
/// (HLSLayout's local names); the item is Cached only when every one is on disk. Segments are
/// fetched one after another with the FileDownloader, each through the download_request hook
/// (file role `hls_main_index`), and only segments not on disk are fetched again after an
/// interruption (a segment cut in the middle starts again from its first byte: the catalog gives
/// no validator for it). The layout is kept as `hls/layout.json`, so playback serves the same names.
extension PrefetchEngine {
    /// The folder of an HLS item's segments and layout.
    func hlsFolder(_ id: String) -> String { (folder(id) as NSString).appendingPathComponent("hls") }

    func hlsLayoutPath(_ id: String) -> String { (hlsFolder(id) as NSString).appendingPathComponent("layout.json") }

    /// The item's HLS layout: from memory, else `hls/layout.json`, else built from the main index
    /// (on disk, else fetched from the origin) and the playlists it names. `keep` (a download)
    /// writes the main index and the layout to the item's folder; playback keeps it in memory only
    /// (the item's files belong to the download queue).
    func hlsLayout(_ id: String, _ file: PrefetchFile, keep: Bool) async throws -> HLSLayout {
        if let layout = playbackState.layout(id, indexURL: file.url) {
            if keep { try await BlockingPool.run { [self] in try writeLayoutIfMissing(id, file, layout, indexText: nil) } }
            return layout
        }
        let layoutPath = hlsLayoutPath(id)
        let localIndex = file.localPath
        let (stored, indexOnDisk) = try await BlockingPool.run { () -> (HLSLayout?, String?) in
            let stored = FileManager.default.contents(atPath: layoutPath).flatMap { try? JSONDecoder().decode(HLSLayout.self, from: $0) }
            let index = FileManager.default.contents(atPath: localIndex).flatMap { $0.count <= HLSPlaylist.Limits.maxPlaylistBytes ? $0 : nil }
            return (stored, index.map { String(decoding: $0, as: UTF8.self) })
        }
        if let stored, stored.indexURL == file.url {
            playbackState.remember(id, stored)
            return stored
        }
        let indexText: String
        if let indexOnDisk {
            indexText = indexOnDisk
        } else {
            indexText = try await fetchPlaylistText(id, url: file.url)
            if let sha = file.sha256, SHA256.hex(of: Data(indexText.utf8)).lowercased() != sha.lowercased() {
                throw FileDownloader.Failure.checksumMismatch
            }
            if let size = file.size, Int64(indexText.utf8.count) != size {
                throw FileDownloader.Failure.sizeMismatch(expected: size, got: Int64(indexText.utf8.count))
            }
        }
        let layout = try await HLSLayout.build(indexURL: file.url, indexText: indexText) { [self] url in
            try await fetchPlaylistText(id, url: url)
        }
        if keep { try await BlockingPool.run { [self] in try writeLayoutIfMissing(id, file, layout, indexText: indexText) } }
        playbackState.remember(id, layout)
        return layout
    }

    /// Writes the main index (when given and missing) and `hls/layout.json` (atomically), so a
    /// restart or another process serves and resumes the same names.
    private func writeLayoutIfMissing(_ id: String, _ file: PrefetchFile, _ layout: HLSLayout, indexText: String?) throws {
        let folder = hlsFolder(id)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if let indexText, !FileManager.default.fileExists(atPath: file.localPath) {
            try Data(indexText.utf8).write(to: URL(fileURLWithPath: file.localPath), options: .atomic)
        }
        let path = hlsLayoutPath(id)
        if !FileManager.default.fileExists(atPath: path) {
            try PrefetchStore.encoder.encode(layout).write(to: URL(fileURLWithPath: path), options: .atomic)
        }
    }

    /// A playlist's text from the origin (through the download_request hook), at most
    /// HLSPlaylist.Limits.maxPlaylistBytes.
    func fetchPlaylistText(_ id: String, url: String) async throws -> String {
        let convert = convertRequest
        let (target, headers) = try await BlockingPool.run { try convert(url, [:], id, "hls_main_index") }
        var request = HTTPClientRequest(url: target)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response: HTTPClientResponse
        do { response = try await downloader.execute(request, timeout: .seconds(60)) } catch let failure as FileDownloader.Failure {
            throw failure
        } catch {
            throw FileDownloader.Failure.transport("\(url): \(HTTPFetcher.describe(error))")
        }
        guard response.status.code == 200 else { throw FileDownloader.Failure.http(Int(response.status.code)) }
        do {
            let body = try await response.body.collect(upTo: HLSPlaylist.Limits.maxPlaylistBytes)
            return String(decoding: body.readableBytesView, as: UTF8.self)
        } catch let error as NIOTooManyBytesError {
            _ = error
            throw HLSPlaylist.Invalid(description: "playlist \(url.prefix(200)) is larger than \(HLSPlaylist.Limits.maxPlaylistBytes) bytes")
        } catch {
            throw FileDownloader.Failure.transport("\(url): \(HTTPFetcher.describe(error))")
        }
    }

    /// Downloads an HLS item's main index, playlists and every resource they name, skipping those
    /// already on disk; marks the main index file done when all are. Progress (the bytes of the
    /// item's segments on disk) is stored about twice a second, which also tells whether the item
    /// is still ours to download (a pause or delete stops it, segments kept). With `partialSeconds`
    /// only the resources that start before that many seconds are fetched (and fsynced): answers
    /// false when that is not all of them (the item is then partially cached), true when complete.
    @discardableResult
    func fetchHLS(_ id: String, _ file: PrefetchFile) async throws -> Bool {
        let layout = try await hlsLayout(id, file, keep: true)
        let folder = hlsFolder(id)
        let convert = convertRequest
        var total: Int64 = 0
        var lastRecordNs: UInt64 = 0
        let wanted = file.partialSeconds.map { seconds in layout.order.filter { (layout.starts?[$0] ?? 0) < seconds } } ?? layout.order
        for name in wanted {
            if Task.isCancelled { throw FileDownloader.Failure.stopped }
            guard let url = layout.resources[name] else { continue }
            let path = (folder as NSString).appendingPathComponent(name)
            let existing = try await BlockingPool.run { () -> Int64? in
                guard FileManager.default.fileExists(atPath: path) else {
                    // No validator is kept for a segment: a cut one starts again whole.
                    try? FileManager.default.removeItem(atPath: path + ".part")
                    return nil
                }
                return FileDownloader.fileLength(path)
            }
            if let existing {
                total += existing
                continue
            }
            let (target, headers) = try await BlockingPool.run { try convert(url, [:], id, file.role) }
            let outcome = try await downloader.download(
                url: target, headers: headers, localPath: path, expectedSize: nil, sha256: nil, validator: nil,
                maxSize: HLSPlaylist.Limits.maxResourceBytes, onValidator: { _ in }, progress: { _ in !Task.isCancelled })
            total += outcome.onDisk
            let now = Clock.monotonicNs()
            let due = now &- lastRecordNs >= 500_000_000
            if due { lastRecordNs = now }
            let (sum, fetched) = (total, outcome.fetched)
            let still = try await BlockingPool.run { [self] () -> Bool in
                try addBytesToday(fetched)
                if due { return try recordProgress(id, file, onDisk: sum) }
                return true
            }
            guard still else { throw FileDownloader.Failure.stopped }
        }
        let (sum, index, version) = (total, file.index, file.version)
        if wanted.count < layout.order.count {
            // Durable before the item is announced partially cached, as a partial file is.
            let paths = wanted.map { (folder as NSString).appendingPathComponent($0) }
            try await BlockingPool.run { [self] in
                for path in paths {
                    let fd = open(path, O_RDONLY | O_CLOEXEC)
                    guard fd >= 0 else { throw FileDownloader.Failure.disk("cannot open \(path): errno \(errno)") }
                    defer { Glibc.close(fd) }
                    guard fsync(fd) == 0 else { throw FileDownloader.Failure.disk("fsync \(path) failed: errno \(errno)") }
                }
                let kept = try store.update(id) { item in
                    // Another version of the index by now (a sync changed it): not this download's to record.
                    guard item.files.indices.contains(index), item.files[index].version == version else { return false }
                    item.files[index].bytesDownloaded = sum
                    item.bytesDownloaded = item.files.reduce(0) { $0 + ($1.index == index ? sum : ($1.done ? $1.bytesDownloaded : 0)) }
                    return true
                }
                if kept == nil { throw FileDownloader.Failure.stopped }
            }
            logger.debug("prefetch: \(id) HLS partial: \(wanted.count) of \(layout.order.count) resources, \(sum) bytes on disk")
            return false
        }
        try await BlockingPool.run { [self] in
            let kept = try store.update(id) { item in
                guard item.files.indices.contains(index), item.files[index].version == version else { return false }
                item.files[index].done = true
                item.files[index].bytesDownloaded = sum
                item.bytesDownloaded = item.files.reduce(0) { $0 + ($1.done ? $1.bytesDownloaded : FileDownloader.partialLength($1.localPath)) }
                return true
            }
            if kept == nil { throw FileDownloader.Failure.stopped }
        }
        logger.debug("prefetch: \(id) HLS: \(layout.order.count) resources, \(sum) bytes on disk")
        return true
    }
}
