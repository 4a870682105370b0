import Foundation
import HTTPTypes
import HubHostKit
import Hummingbird
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// A file on disk as an HTTP answer with byte ranges (RFC 9110 14): no Range, or a unit other than
/// bytes, or several ranges: 200 with the whole file; one satisfiable range (`A-B`, `A-`, `-N`):
/// 206 with Content-Range; a malformed or unsatisfiable bytes range: 416 with
/// `Content-Range: bytes */SIZE`. The body is read in chunks on the BlockingPool as it is sent.
enum FileRangeResponse {
    enum Choice: Equatable {
        case whole
        case part(start: Int64, end: Int64)
        case unsatisfiable
    }

    /// The chunk read from disk per write.
    static let chunkSize = 256 << 10

    /// What a Range header asks of a file of `size` bytes. Numbers are checked before arithmetic.
    static func choose(_ header: String?, size: Int64) -> Choice {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return .whole }
        guard header.lowercased().hasPrefix("bytes=") else { return .whole }  // another unit: ignored
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(",") else { return .whole }  // several ranges: the whole file is allowed
        let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard bounds.count == 2, bounds.allSatisfy({ $0.count <= 19 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else {
            return .unsatisfiable
        }
        switch (Int64(bounds[0]), Int64(bounds[1])) {
        case (let start?, let end?):
            guard start <= end, start < size else { return .unsatisfiable }
            return .part(start: start, end: min(end, size - 1))
        case (let start?, nil):
            guard start < size else { return .unsatisfiable }
            return .part(start: start, end: size - 1)
        case (nil, let suffix?):
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .part(start: max(0, size - suffix), end: size - 1)
        case (nil, nil):
            return .unsatisfiable
        }
    }

    /// The rest of a partly downloaded file: bytes `from...to` from the origin (exactly those).
    typealias Rest = @Sendable (_ from: Int64, _ to: Int64) async throws -> PrefetchOriginStream

    /// A whole file on disk.
    static func response(path: String, contentType: String, range: String?) async throws -> Response {
        let size = try await HTTPAPI.blocking { () -> Int64 in
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path), let size = (attributes[.size] as? NSNumber)?.int64Value
            else {
                throw APIError(.notFound, "the file is no longer on disk")
            }
            return size
        }
        return try await response(path: path, contentType: contentType, size: size, onDisk: size, range: range, rest: nil)
    }

    /// A file of `size` bytes whose first `onDisk` are in `path`; the bytes after them come from
    /// `rest` (a partly downloaded file), so one answer may be the start from disk and the end
    /// from the origin.
    static func response(path: String, contentType: String, size: Int64, onDisk: Int64, range: String?, rest: Rest?) async throws -> Response {
        var headers: HTTPFields = [.contentType: contentType, .acceptRanges: "bytes"]
        let start: Int64
        let end: Int64
        var status = HTTPResponse.Status.ok
        switch choose(range, size: size) {
        case .whole:
            (start, end) = (0, size - 1)
        case .part(let from, let to):
            (start, end) = (from, to)
            status = .partialContent
            headers[.contentRange] = "bytes \(from)-\(to)/\(size)"
        case .unsatisfiable:
            var error = APIError(
                .rangeNotSatisfiable, "the range '\(range?.prefix(80) ?? "")' is not satisfiable for a file of \(size) bytes",
                code: "range_not_satisfiable")
            error.headers = [.contentRange: "bytes */\(size)"]
            throw error
        }
        // The origin's part is opened before the head is sent, so its failure is a clear 502.
        let fromOrigin: PrefetchOriginStream?
        if end >= onDisk {
            guard let rest else { throw APIError(.internalServerError, "the file is shorter than its size") }
            fromOrigin = try await rest(max(start, onDisk), end)
        } else {
            fromOrigin = nil
        }
        let diskEnd = min(end, onDisk - 1)
        let length = max(0, end - start + 1)
        let body = ResponseBody(contentLength: Int(length)) { writer in
            if start <= diskEnd {
                try await writeFromDisk(path, from: start, to: diskEnd, into: &writer)
            }
            if let fromOrigin {
                let expected = end - max(start, onDisk) + 1
                var count: Int64 = 0
                try await fromOrigin.forEachChunk(limit: expected) { chunk in
                    count += Int64(chunk.readableBytes)
                    try await writer.write(chunk)
                }
                guard count == expected else { throw APIError(.badGateway, "the origin sent \(count) of \(expected) bytes") }
            }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// Writes bytes `from...to` of the file at `path`, read in chunks on the BlockingPool.
    static func writeFromDisk(_ path: String, from start: Int64, to end: Int64, into writer: inout any ResponseBodyWriter) async throws {
        let length = end - start + 1
        let fd = try await HTTPAPI.blocking { () -> Int32 in
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw APIError(.notFound, "the file is no longer on disk") }
            return fd
        }
        defer { close(fd) }
        var offset = start
        var left = length
        while left > 0 {
            let want = Int(min(Int64(chunkSize), left))
            let at = offset
            let chunk = try await HTTPAPI.blocking { () -> ByteBuffer in
                var buffer = ByteBufferAllocator().buffer(capacity: want)
                let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw in
                    max(0, pread(fd, raw.baseAddress, want, off_t(at)))
                }
                guard read > 0 else { throw APIError(.internalServerError, "the file got shorter while it was sent") }
                return buffer
            }
            offset += Int64(chunk.readableBytes)
            left -= Int64(chunk.readableBytes)
            try await writer.write(chunk)
        }
    }
}
