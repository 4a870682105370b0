import Foundation
import HTTPTypes
import HubHostKit
import Hummingbird
import NIOCore

/// Local playback of prefetched items in `hubhost serve`:
///
///   GET /v1/prefetch/items/{id}/play-url   how the item plays (PrefetchPlayback); 409 not_playable with the reason
///   GET /v1/prefetch/items/{id}/file       a non-HLS item's file, with Range (206, 416): cached from disk;
///                                          partly downloaded: its start from disk, the rest from the origin
///   GET /v1/prefetch/hls/{id}/{name}       the local HLS endpoint: `index.m3u8` and the playlists and
///                                          segments it names (HLSLayout's names); cached ones from
///                                          disk (with Range), the others relayed from the origin
enum PrefetchPlaybackRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let prefetch = router.group("/v1/prefetch")
        prefetch.get("/items/{id}/play-url") { _, context in
            let engine = try PrefetchRoutes.engine(host)
            let id = try context.parameters.require("id")
            return HTTPAPI.json(try await notPlayable { try await HTTPAPI.blocking { try engine.playback(id) } })
        }
        prefetch.get("/items/{id}/file") { request, context in
            let engine = try PrefetchRoutes.engine(host)
            let id = try context.parameters.require("id")
            let file = try await notPlayable { try await HTTPAPI.blocking { try engine.playbackFile(id) } }
            // A partly downloaded file: its start from disk, the rest from the origin (same file, If-Range).
            return try await FileRangeResponse.response(
                path: file.path, contentType: file.contentType, size: file.size, onDisk: file.onDisk,
                range: request.headers[.range]
            ) { from, to in
                try await engine.openOriginRange(id, file, from: from, to: to)
            }
        }
        prefetch.get("/hls/{id}/{name}") { request, context in
            let engine = try PrefetchRoutes.engine(host)
            let id = try context.parameters.require("id")
            let name = try context.parameters.require("name")
            let resource: PrefetchHLSResource
            do { resource = try await notPlayable { try await engine.hlsResource(id, name) } } catch PrefetchError.invalid(let why) {
                throw APIError(.notFound, why)
            }
            switch resource {
            case .playlist(let text):
                return Response(
                    status: .ok, headers: [.contentType: HLSLayout.contentType(HLSLayout.indexName), .cacheControl: "no-cache"],
                    body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
            case .file(let path, let contentType):
                return try await FileRangeResponse.response(path: path, contentType: contentType, range: request.headers[.range])
            case .origin(let url, let contentType):
                let origin = try await engine.openOrigin(id, url: url, range: request.headers[.range])
                var headers: HTTPFields = [.contentType: contentType, .acceptRanges: "bytes"]
                if let range = origin.contentRange { headers[.contentRange] = range }
                let body = ResponseBody(contentLength: origin.contentLength.map { Int($0) }) { writer in
                    try await origin.forEachChunk { try await writer.write($0) }
                    try await writer.finish(nil)
                }
                return Response(status: origin.status == 206 ? .partialContent : .ok, headers: headers, body: body)
            }
        }
    }

    /// A refusal to play (a deleted item, no server, not cached) as 409 with code `not_playable`.
    static func notPlayable<T>(_ work: () async throws -> T) async throws -> T {
        do { return try await work() } catch PrefetchError.refused(let id, let reason) {
            throw APIError(.conflict, "item '\(id)': \(reason)", code: "not_playable")
        }
    }
}
