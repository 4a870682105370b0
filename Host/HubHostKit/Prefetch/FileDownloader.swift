import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// Downloads one file to disk with AsyncHTTPClient, streamed (never whole in memory), resuming
/// what is already on disk: the partial file is `localPath + ".part"`; its length is the offset
/// asked for with `Range: bytes=N-` and, when the first answer gave one, `If-Range` with its
/// validator (so a file changed at the origin restarts from zero instead of being spliced). With
/// neither a validator nor a sha256 to check, the bytes on disk are not trusted: the download
/// starts again from zero. The file is moved to `localPath` only after its size (and sha256, when
/// the catalog gives one) is verified; a mismatch deletes the partial file, so it is never resumed
/// or reported cached. Disk writes run on the BlockingPool, never on a concurrency thread.
final class FileDownloader: Sendable {
    let client: HTTPClient
    /// Hosts a redirect may lead to besides the requested URL's own: the provider instance's
    /// `http_allow`, named in a refusal as `owner`.
    let redirectHosts: [String]
    let owner: String

    enum Failure: Error, CustomStringConvertible, Equatable {
        case http(Int)
        case transport(String)
        case sizeMismatch(expected: Int64, got: Int64)
        case checksumMismatch
        case disk(String)
        case badAnswer(String)
        /// A redirect outside the requested host and the provider's http_allow: not followed.
        case redirectRefused(String)
        /// Stopped on purpose (pause, cancel): not a failure of the file.
        case stopped

        var description: String {
            switch self {
            case .http(let code): return "the server answered HTTP \(code)"
            case .transport(let why): return why
            case .sizeMismatch(let expected, let got): return "size mismatch: expected \(expected) bytes, got \(got)"
            case .checksumMismatch: return "sha256 mismatch: the file was discarded"
            case .disk(let why): return "disk: \(why)"
            case .badAnswer(let why): return why
            case .redirectRefused(let why): return why
            case .stopped: return "stopped"
            }
        }
    }

    /// What one request got: bytes received in this request, the validator to keep, and whether the
    /// file is complete (verified and moved into place) or, for a download stopped at `stopAt`, still
    /// the `.part` file with `onDisk` bytes made durable (fsync) before the answer.
    struct Outcome: Sendable {
        var fetched: Int64
        var validator: String?
        var complete = true
        var onDisk: Int64 = 0
    }

    /// - Parameters:
    ///   - readTimeout: the longest wait for the next bytes (a hanging server fails the attempt).
    ///   - redirectHosts: hosts a redirect may lead to besides the requested URL's (lower case).
    ///   - owner: the instance whose allow-list that is, for refusals.
    init(readTimeout: Double, redirectHosts: [String] = [], owner: String = "") {
        self.redirectHosts = redirectHosts.map { $0.lowercased() }
        self.owner = owner
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: .nanoseconds(Int64(SafeTime.durationNs(readTimeout))))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        configuration.redirectConfiguration = .disallow  // followed by `execute`, after each hop is checked
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// Sends `request` (a GET), following at most HTTPFetcher.maxRedirects redirects, each only
    /// when it stays on the requested URL's host or goes to one of `redirectHosts`; otherwise
    /// throws `Failure.redirectRefused` naming the host, and nothing is sent there. Authorization
    /// and Cookie headers are not carried to another host. `timeout` is per hop.
    func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse {
        var request = request
        guard let first = URL(string: request.url) else { return try await client.execute(request, timeout: timeout) }
        let allowed = redirectHosts + [first.host?.lowercased() ?? ""]
        for hop in 0...HTTPFetcher.maxRedirects {  // bounded: at most maxRedirects hops
            let response = try await client.execute(request, timeout: timeout)
            guard let current = URL(string: request.url),
                let target = HTTPFetcher.redirectTarget(
                    status: Int(response.status.code), location: response.headers.first(name: "location"), from: current)
            else { return response }
            _ = try? await response.body.collect(upTo: 64 << 10)  // the redirect's own body is not used
            guard hop < HTTPFetcher.maxRedirects else {
                throw Failure.redirectRefused("\(first.absoluteString.prefix(200)): more than \(HTTPFetcher.maxRedirects) redirects")
            }
            if let refusal = HTTPFetcher.refusal(of: target, from: first, .allowedHosts(allowed, owner: owner)) {
                throw Failure.redirectRefused("\(current.absoluteString.prefix(200)): \(refusal)")
            }
            if target.host?.lowercased() != current.host?.lowercased() {
                request.headers.remove(name: "Authorization")
                request.headers.remove(name: "Cookie")
            }
            request.url = target.absoluteString
        }
        throw Failure.redirectRefused("\(first.absoluteString.prefix(200)): more than \(HTTPFetcher.maxRedirects) redirects")
    }

    func shutdown() async { try? await client.shutdown() }

    /// The length of the partial file, 0 when there is none.
    static func partialLength(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path + ".part"))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// Fetches `url` into `localPath + ".part"` from its current length, then verifies and moves it.
    /// `progress(onDisk)` is called after each chunk with the bytes on disk; answering false stops
    /// the download (`Failure.stopped`), bytes kept for a later resume. `stopAt` (a partial
    /// download, less than `expectedSize`) asks only up to that byte (`Range: bytes=N-(stopAt-1)`),
    /// keeps the `.part` file, fsyncs it and answers `complete: false`; a later call without it
    /// resumes from there. Long: the request, the answer's checks (status, range, length), the
    /// chunk loop and the verification share the open file and the byte counts; each step is
    /// commented where it starts.
    func download(
        url: String, headers: [String: String], localPath: String, expectedSize: Int64?, sha256: String?,
        validator: String?, stopAt requestedStop: Int64? = nil, maxSize: Int64? = nil, onValidator: @escaping @Sendable (String?) -> Void,
        progress: @escaping @Sendable (Int64) async -> Bool
    ) async throws -> Outcome {
        let part = localPath + ".part"
        // A stop at or past the whole file is a full download.
        let stopAt = requestedStop.flatMap { stop in stop > 0 && (expectedSize.map { stop < $0 } ?? true) ? stop : nil }
        try await BlockingPool.run {
            try FileManager.default.createDirectory(
                atPath: (localPath as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if !FileManager.default.fileExists(atPath: part) {
                guard FileManager.default.createFile(atPath: part, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                    throw Failure.disk("cannot create \(part)")
                }
            }
        }
        var offset = Self.partialLength(localPath)
        if let expectedSize, offset > expectedSize {
            // More than the file holds: the partial file is not this file. Start again.
            try await BlockingPool.run { try Self.truncate(part, to: 0) }
            offset = 0
        }
        if offset > 0, validator == nil, sha256 == nil {
            // Nothing can tell whether the bytes on disk are of the file the origin has now: no
            // validator to send as If-Range, no digest to check at the end. A resume could splice
            // two versions, so the download starts again from zero.
            try await BlockingPool.run { try Self.truncate(part, to: 0) }
            offset = 0
        }
        var fetched: Int64 = 0
        var keptValidator = validator
        // The length the answer announced (Content-Length, or Content-Range's total), checked at
        // the end when the catalog gives no size (HLS segments): a cut body is never complete.
        var announced: Int64?
        let complete = expectedSize.map { offset == $0 && $0 > 0 } ?? false
        if let stopAt, offset >= stopAt {
            return Outcome(fetched: 0, validator: validator, complete: false, onDisk: offset)
        }
        if !complete {
            var request = HTTPClientRequest(url: url)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if offset > 0 || stopAt != nil {
                request.headers.replaceOrAdd(name: "Range", value: "bytes=\(offset)-\(stopAt.map { String($0 - 1) } ?? "")")
                if offset > 0, let validator { request.headers.replaceOrAdd(name: "If-Range", value: validator) }
            }
            let response: HTTPClientResponse
            do {
                response = try await execute(request, timeout: .hours(24))
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure.transport("\(url): \(HTTPFetcher.describe(error))")
            }
            let code = Int(response.status.code)
            var total: Int64?
            switch code {
            case 206:
                guard let range = response.headers.first(name: "content-range"), let parsed = Self.contentRange(range), parsed.start == offset else {
                    throw Failure.badAnswer("\(url) answered 206 without a Content-Range starting at byte \(offset)")
                }
                total = parsed.total
                if keptValidator == nil {
                    // The first answer of a partial download is a 206: its validator guards the resume.
                    keptValidator = response.headers.first(name: "etag") ?? response.headers.first(name: "last-modified")
                    if keptValidator != nil { onValidator(keptValidator) }
                }
            case 200:
                if offset > 0 { try await BlockingPool.run { try Self.truncate(part, to: 0) } }
                offset = 0
                total = response.headers.first(name: "content-length").flatMap { Int64($0) }.flatMap {
                    (0...CatalogProtocol.maxFileSize).contains($0) ? $0 : nil
                }
                keptValidator = response.headers.first(name: "etag") ?? response.headers.first(name: "last-modified")
                onValidator(keptValidator)
            case 416 where expectedSize != nil && offset == expectedSize:
                total = offset
            default:
                throw Failure.http(code)
            }
            if let expectedSize, let total, total != expectedSize {
                throw Failure.sizeMismatch(expected: expectedSize, got: total)
            }
            if let maxSize, let total, total > maxSize { throw Failure.sizeMismatch(expected: maxSize, got: total) }
            announced = total
            let fd = open(part, O_WRONLY | O_APPEND | O_CLOEXEC)
            guard fd >= 0 else { throw Failure.disk("cannot open \(part): errno \(errno)") }
            defer { close(fd) }
            let limit = expectedSize ?? total ?? maxSize ?? CatalogProtocol.maxFileSize
            do {
                for try await received in response.body {
                    if Task.isCancelled { throw Failure.stopped }
                    var buffer = received
                    if let stopAt, offset + Int64(buffer.readableBytes) > stopAt {
                        // A server that ignored the Range end: keep only the bytes asked for.
                        buffer = buffer.getSlice(at: buffer.readerIndex, length: Int(stopAt - offset)) ?? buffer
                    }
                    let count = Int64(buffer.readableBytes)
                    guard offset + count <= limit else { throw Failure.sizeMismatch(expected: limit, got: offset + count) }
                    let chunk = buffer
                    try await BlockingPool.run { try Self.writeAll(fd, chunk) }
                    offset += count
                    fetched += count
                    guard await progress(offset) else { throw Failure.stopped }
                    if let stopAt, offset >= stopAt { break }
                }
                if let stopAt {
                    guard offset >= stopAt else {
                        throw Failure.transport("\(url): the partial download stopped after \(offset) of \(stopAt) bytes")
                    }
                    // Durable before the item is announced partially cached.
                    try await BlockingPool.run {
                        guard fsync(fd) == 0 else { throw Failure.disk("fsync \(part) failed: errno \(errno)") }
                    }
                    return Outcome(fetched: fetched, validator: keptValidator, complete: false, onDisk: offset)
                }
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure.transport("\(url): the download stopped after \(offset) bytes: \(HTTPFetcher.describe(error))")
            }
        }
        let onDisk = offset
        let announcedLength = announced
        try await BlockingPool.run {
            if let expectedSize, onDisk != expectedSize {
                throw Failure.sizeMismatch(expected: expectedSize, got: onDisk)
            }
            if expectedSize == nil, let announcedLength, onDisk != announcedLength {
                throw Failure.sizeMismatch(expected: announcedLength, got: onDisk)
            }
            if let sha256, SHA256.hex(ofFile: part)?.lowercased() != sha256.lowercased() {
                try? FileManager.default.removeItem(atPath: part)
                throw Failure.checksumMismatch
            }
            guard rename(part, localPath) == 0 else { throw Failure.disk("cannot move \(part) into place: errno \(errno)") }
        }
        return Outcome(fetched: fetched, validator: keptValidator, complete: true, onDisk: onDisk)
    }

    static func truncate(_ path: String, to length: Int64) throws {
        guard Glibc.truncate(path, off_t(length)) == 0 else { throw Failure.disk("cannot truncate \(path): errno \(errno)") }
    }

    static func writeAll(_ fd: Int32, _ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { raw in
            var written = 0
            var attempts = 0
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR && attempts < 1000 {
                        attempts += 1
                        continue
                    }
                    throw Failure.disk("write failed: errno \(errno)")
                }
                if n == 0 { throw Failure.disk("write wrote nothing") }
                written += n
            }
        }
    }

    /// "bytes START-END/TOTAL" (TOTAL may be "*"), numbers range-checked.
    static func contentRange(_ value: String) -> (start: Int64, end: Int64, total: Int64?)? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst(6).split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start >= 0, end >= start,
            end <= CatalogProtocol.maxFileSize
        else { return nil }
        let total = Int64(parts[1])
        if let total, total <= end || total > CatalogProtocol.maxFileSize { return nil }
        return (start, end, total)
    }
}

extension FileDownloader {
    /// The length of a finished file, 0 when there is none.
    static func fileLength(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
