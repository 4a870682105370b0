import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

/// How an item plays (as in the PCD SDK): an HLS item through the local HLS endpoint of `hubhost serve`
/// (`<server>/v1/prefetch/hls/<id>/index.m3u8`: cached segments from disk, the others relayed
/// from the origin), any other item from its local file when cached (path, and the server's
/// `/v1/prefetch/items/<id>/file` with Range support), through that route when its start is on
/// disk (the rest relayed from the origin), else from its origin URL (the PCD SDK's "not yet
/// cached: play the file's URL").
public struct PrefetchPlayback: Codable, Sendable, Equatable {
    /// How the item is played: decided by its files, not by its state.
    public enum Kind: String, Codable, Sendable {
        /// The item has an HLS main index (`hls_main_index` file): it plays through the HLS endpoint of `hubhost serve`.
        case hls
        /// The item's `main` file plays: from disk, through the server's file route, or from its origin URL.
        case file
    }

    /// The item's unique id.
    public var id: String
    /// The item's state when the answer was made (`cached` plays entirely from disk).
    public var state: PrefetchItemState
    /// Whether the item plays as HLS or as one file.
    public var kind: Kind
    /// What a player opens: the HLS endpoint's URL, the local file's URL on the server, or (a file
    /// not cached) the origin URL; nil when no server address is known and the file is not cached.
    public var url: String?
    /// The PCD SDK's hlsServerRelativePath: `<id>/index.m3u8` under the HLS endpoint (HLS items).
    public var relativePath: String?
    /// The verified local file (non-HLS items, cached only).
    public var localPath: String?
    /// The catalog URL of the item's main file or main index.
    public var originURL: String
    /// True when every byte plays from this disk (cached); false when some or all come from the origin.
    public var local: Bool
}

/// The playback side of a PrefetchEngine: the HLS endpoint's address while `serve` offers it, and
/// the HLS layouts it serves (a bounded memory cache, so a playlist is not rebuilt per segment).
/// Sendable: the server's address and the layouts live in a Mutex.
final class PrefetchPlaybackState: Sendable {
    private let state = Mutex<(serverURL: String?, layouts: [String: HLSLayout])>((nil, [:]))
    /// The most layouts kept in memory; beyond, one is dropped (it is rebuilt when asked again).
    static let maxLayouts = 64

    var server: String? { state.withLock { $0.serverURL } }
    func setServer(_ url: String?) { state.withLock { $0.serverURL = url } }

    func layout(_ id: String, indexURL: String) -> HLSLayout? {
        state.withLock { $0.layouts[id].flatMap { $0.indexURL == indexURL ? $0 : nil } }
    }

    func remember(_ id: String, _ layout: HLSLayout) {
        state.withLock { state in
            if state.layouts[id] == nil, state.layouts.count >= Self.maxLayouts, let victim = state.layouts.keys.first {
                state.layouts[victim] = nil
            }
            state.layouts[id] = layout
        }
    }

    func forget(_ id: String) { _ = state.withLock { $0.layouts.removeValue(forKey: id) } }
}

/// What the HLS endpoint answers for one local name.
package enum PrefetchHLSResource: Sendable {
    /// A playlist, rewritten to local names.
    case playlist(String)
    /// A resource on disk (complete and in place).
    case file(path: String, contentType: String)
    /// A resource not on disk: relayed from its origin for this request, not kept.
    case origin(url: String, contentType: String)
}

/// A resource's answer from the origin, relayed by the HLS endpoint as it arrives.
package struct PrefetchOriginStream: Sendable {
    package let status: Int
    package let contentLength: Int64?
    package let contentRange: String?
    let body: HTTPClientResponse.Body

    /// Calls `write` with each chunk of the body; fails past `limit` bytes (by default
    /// HLSPlaylist.Limits.maxResourceBytes, an HLS resource's bound).
    package func forEachChunk(limit: Int64 = HLSPlaylist.Limits.maxResourceBytes, _ write: (ByteBuffer) async throws -> Void) async throws {
        var count: Int64 = 0
        for try await chunk in body {
            count += Int64(chunk.readableBytes)
            guard count <= limit else { throw FileDownloader.Failure.sizeMismatch(expected: limit, got: count) }
            try await write(chunk)
        }
    }
}

extension PrefetchEngine {
    /// The HLS endpoint's base URL (`<server>/v1/prefetch/hls/`) while `serve` offers it (the
    /// PCD SDK's hlsServerUrl), nil otherwise.
    package var hlsServerURL: String? { playbackState.server.map { $0 + "/v1/prefetch/hls/" } }

    /// Called by `hubhost serve` when its HTTP server listens at `serverURL` (`http://HOST:PORT`):
    /// the HLS endpoint is available; announces `PrefetchHLSServerStarted` `{"url"}`.
    package func hlsServerStarted(serverURL: String) {
        playbackState.setServer(serverURL)
        notifications.post(PrefetchNotificationName.hlsServerStarted, ["url": .string(serverURL + "/v1/prefetch/hls/")])
    }

    /// Called by `hubhost serve` when it begins to shut down: announces `PrefetchHLSServerStopped` `{"url"}`.
    package func hlsServerStopped() {
        guard let url = playbackState.server else { return }
        playbackState.setServer(nil)
        notifications.post(PrefetchNotificationName.hlsServerStopped, ["url": .string(url + "/v1/prefetch/hls/")])
    }

    /// How item `id` plays (blocking: reads the catalog). `serverURL` (`http://HOST:PORT`) is the
    /// server that offers the endpoints, by default the one this process serves. Refused
    /// (PrefetchError.refused) for a deleted item, and for an HLS item when no server is known.
    public func playback(_ id: String, serverURL: String? = nil) throws -> PrefetchPlayback {
        guard let item = try store.item(id) else { throw PrefetchError.unknownItem(id) }
        guard item.state != .deleted else { throw PrefetchError.refused(id: id, reason: "not playable: the item is deleted") }
        let server = serverURL ?? playbackState.server
        if let index = item.files.first(where: { $0.role == "hls_main_index" }) {
            guard let server else {
                throw PrefetchError.refused(
                    id: id,
                    reason:
                        "not playable here: HLS plays through hubhost serve's HLS endpoint; no server is running in this process (give the server's address)"
                )
            }
            let relative = "\(id)/\(HLSLayout.indexName)"
            return PrefetchPlayback(
                id: id, state: item.state, kind: .hls, url: server + "/v1/prefetch/hls/" + relative, relativePath: relative,
                localPath: nil, originURL: index.url, local: item.state == .cached)
        }
        guard let main = item.files.first(where: { $0.role == "main" }) else {
            throw PrefetchError.refused(id: id, reason: "not playable: the item has no main file")
        }
        if item.state == .cached, main.done {
            return PrefetchPlayback(
                id: id, state: item.state, kind: .file, url: server.map { $0 + "/v1/prefetch/items/\(id)/file" },
                relativePath: nil, localPath: main.localPath, originURL: main.url, local: true)
        }
        if let server, let size = main.size, size > 0, FileDownloader.partialLength(main.localPath) > 0 {
            // Its start is on disk (partially cached, or a download stopped midway): the file route
            // serves that from disk and asks the origin only for the rest.
            return PrefetchPlayback(
                id: id, state: item.state, kind: .file, url: server + "/v1/prefetch/items/\(id)/file", relativePath: nil,
                localPath: nil, originURL: main.url, local: false)
        }
        return PrefetchPlayback(
            id: id, state: item.state, kind: .file, url: main.url, relativePath: nil, localPath: nil,
            originURL: main.url, local: false)
    }

    /// A non-HLS item's main file as the file endpoint serves it: whole from disk when cached;
    /// else (partially cached, or a download stopped midway) the start on disk (`path` is the
    /// `.part` file, `onDisk` bytes of it) and the rest from `originURL`, asked with Range and the
    /// first answer's validator as If-Range, so the two halves are the same file.
    package struct PlaybackFile: Sendable, Equatable {
        package var path: String
        package var contentType: String
        /// The file's length (the catalog's size when not cached).
        package var size: Int64
        /// The bytes at the start of `path` to serve from disk; `size` when cached.
        package var onDisk: Int64
        package var originURL: String
        package var validator: String?
        package var complete: Bool { onDisk >= size }
    }

    /// The main file of a non-HLS item for the file endpoint: cached, or partly on disk with the
    /// catalog's size known; refused otherwise (nothing on disk: play its origin URL).
    package func playbackFile(_ id: String) throws -> PlaybackFile {
        guard let item = try store.item(id) else { throw PrefetchError.unknownItem(id) }
        guard item.state != .deleted else { throw PrefetchError.refused(id: id, reason: "not playable: the item is deleted") }
        guard let main = item.files.first(where: { $0.role == "main" }) else {
            throw PrefetchError.refused(
                id: id,
                reason: "not playable as a file: the item has no main file (an HLS item plays through /v1/prefetch/hls/\(id)/\(HLSLayout.indexName))")
        }
        let type = Self.contentType(main.localPath)
        if main.done, let length = try? FileManager.default.attributesOfItem(atPath: main.localPath)[.size] as? NSNumber {
            return PlaybackFile(
                path: main.localPath, contentType: type, size: length.int64Value, onDisk: length.int64Value, originURL: main.url,
                validator: main.validator)
        }
        let onDisk = FileDownloader.partialLength(main.localPath)
        guard let size = main.size, size > 0, onDisk > 0 else {
            throw PrefetchError.refused(
                id: id, reason: "nothing of it is on disk (state \(item.state.rawValue)): play its origin URL, or download it first")
        }
        return PlaybackFile(
            path: main.localPath + ".part", contentType: type, size: size, onDisk: min(onDisk, size), originURL: main.url,
            validator: main.validator)
    }

    static func contentType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "mp4", "m4v": return "video/mp4"
        case "mov": return "video/quicktime"
        case "webm": return "video/webm"
        case "mkv": return "video/x-matroska"
        case "ts": return "video/mp2t"
        case "mp3": return "audio/mpeg"
        case "m4a": return "audio/mp4"
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        default: return "application/octet-stream"
        }
    }

    /// What the HLS endpoint answers for `name` of item `id`: a rewritten playlist, a resource on
    /// disk, or one to relay from the origin. Any state but deleted plays (segments not cached
    /// come from the origin). Unknown names are refused before anything touches the disk.
    package func hlsResource(_ id: String, _ name: String) async throws -> PrefetchHLSResource {
        guard CatalogProtocol.isValidID(id), let item = try await BlockingPool.run({ [self] in try store.item(id) }) else {
            throw PrefetchError.unknownItem(id)
        }
        guard item.state != .deleted else { throw PrefetchError.refused(id: id, reason: "not playable: the item is deleted") }
        guard let index = item.files.first(where: { $0.role == "hls_main_index" }) else {
            throw PrefetchError.refused(id: id, reason: "not an HLS item (no hls_main_index file): see /v1/prefetch/items/\(id)/play-url")
        }
        guard HLSLayout.isLocalName(name) else { throw PrefetchError.invalid("no such HLS resource '\(name.prefix(80))'") }
        let layout: HLSLayout
        do { layout = try await hlsLayout(id, index, keep: false) } catch let invalid as HLSPlaylist.Invalid {
            throw PrefetchError.refused(id: id, reason: "not playable: \(invalid.description)")
        } catch {
            throw PrefetchError.service("\(id): the origin: \(error)")
        }
        if let text = layout.playlists[name] { return .playlist(text) }
        guard let url = layout.resources[name] else { throw PrefetchError.invalid("no such HLS resource '\(name.prefix(80))'") }
        let path = (hlsFolder(id) as NSString).appendingPathComponent(name)
        if try await BlockingPool.run({ FileManager.default.fileExists(atPath: path) }) {
            return .file(path: path, contentType: HLSLayout.contentType(name))
        }
        return .origin(url: url, contentType: HLSLayout.contentType(name))
    }

    /// Asks the origin for a resource of item `id` (through the download_request hook), passing a
    /// player's Range header on. The answer's body is relayed by the caller, not kept: the item's
    /// files belong to the download queue.
    package func openOrigin(_ id: String, url: String, range: String?, ifRange: String? = nil) async throws -> PrefetchOriginStream {
        let convert = convertRequest
        let (target, headers) = try await BlockingPool.run { try convert(url, [:], id, "hls_main_index") }
        var request = HTTPClientRequest(url: target)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let range { request.headers.replaceOrAdd(name: "Range", value: range) }
        if let ifRange { request.headers.replaceOrAdd(name: "If-Range", value: ifRange) }
        let response: HTTPClientResponse
        // The deadline covers the whole relayed body (the rest of a large file may take long); a
        // hanging origin is caught by the client's read timeout (prefetch.read_timeout), as downloads are.
        do { response = try await downloader.execute(request, timeout: .hours(24)) } catch let failure as FileDownloader.Failure {
            throw PrefetchError.service("\(id): the origin: \(failure)")
        } catch {
            throw PrefetchError.service("\(id): the origin: \(HTTPFetcher.describe(error))")
        }
        let code = Int(response.status.code)
        guard code == 200 || code == 206 else { throw PrefetchError.service("\(id): the origin answered HTTP \(code) for \(url.prefix(200))") }
        let length = response.headers.first(name: "content-length").flatMap { Int64($0) }.flatMap {
            (0...HLSPlaylist.Limits.maxResourceBytes).contains($0) ? $0 : nil
        }
        return PrefetchOriginStream(
            status: code, contentLength: length,
            contentRange: code == 206 ? response.headers.first(name: "content-range") : nil, body: response.body)
    }

    /// Bytes `from...to` of a partly downloaded file (PlaybackFile) from its origin: asked with
    /// Range and If-Range (the validator of the bytes on disk); only a 206 for exactly that range
    /// is accepted, so a file that changed at the origin is never spliced onto the bytes on disk.
    package func openOriginRange(_ id: String, _ file: PlaybackFile, from: Int64, to: Int64) async throws -> PrefetchOriginStream {
        guard from >= 0, to >= from, to < file.size else { throw PrefetchError.invalid("bad range \(from)-\(to)") }
        let origin = try await openOrigin(id, url: file.originURL, range: "bytes=\(from)-\(to)", ifRange: file.validator)
        guard origin.status == 206, let range = origin.contentRange.flatMap(FileDownloader.contentRange), range.start == from, range.end == to,
            range.total.map({ $0 == file.size }) ?? true
        else {
            throw PrefetchError.service(
                "\(id): the origin did not answer bytes \(from)-\(to) of the same file (HTTP \(origin.status)): the file may have changed")
        }
        return origin
    }
}
