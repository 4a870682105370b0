import Foundation
import HTTPTypes
import HubHostKit
import Hummingbird
import NIOCore

/// A response body fixed for the life of the process (hubhost's own stylesheet and script for the
/// web hub), served with a strong ETag (its SHA-256) and Cache-Control, and answered 304 Not
/// Modified when the browser already holds it (If-None-Match): one hash at start-up instead of
/// the bytes on every page view. A new hubhost version changes the bytes and so the ETag.
struct StaticAsset: Sendable {
    let contentType: String
    let body: ByteBuffer
    let etag: String
    /// A browser reuses it for an hour without asking, then revalidates (a 304 when unchanged).
    static let cacheControl = "public, max-age=3600"

    init(_ text: String, contentType: String) {
        self.contentType = contentType
        body = ByteBuffer(string: text)
        etag = "\"" + SHA256.hex(of: Data(text.utf8)).prefix(32) + "\""
    }

    func response(to request: Request) -> Response {
        var headers: HTTPFields = [.contentType: contentType, .eTag: etag, .cacheControl: Self.cacheControl]
        if let given = request.headers[.ifNoneMatch], Self.matches(given, etag) {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }

    /// If-None-Match: `*` or a list of tags, strong or weak (`W/"..."`: the weak comparison).
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }
}
