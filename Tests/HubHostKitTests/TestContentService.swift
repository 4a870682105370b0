import Foundation
import HubHostTools

/// A content service on 127.0.0.1 for delivery tests (plain sockets, one connection at a time):
/// GET /settings (its answer may depend on the query, e.g. location_id), /metadata, and /bundle
/// with `Range: bytes=a-b` support (or, with `honorsRange = false`, the whole body with 200).
/// It records every request (path with query, Range header).
final class TestContentService: @unchecked Sendable {
    struct Request {
        var path: String
        var query: [String: String]
        var range: String?
    }

    private let lock = NSLock()
    private let server: LoopbackHTTPServer
    var port: UInt16 { server.port }
    private var received: [Request] = []

    /// The settings answer for a request's query (status, body).
    var settings: @Sendable ([String: String]) -> (Int, String) {
        get { lock.withLock { settingsAnswer } }
        set { lock.withLock { settingsAnswer = newValue } }
    }
    private var settingsAnswer: @Sendable ([String: String]) -> (Int, String) = { _ in (200, "{}") }
    var metadata: (status: Int, body: String) {
        get { lock.withLock { metadataAnswer } }
        set { lock.withLock { metadataAnswer = newValue } }
    }
    private var metadataAnswer = (status: 404, body: "{}")
    var bundle: Data {
        get { lock.withLock { bundleBytes } }
        set { lock.withLock { bundleBytes = newValue } }
    }
    private var bundleBytes = Data()
    var honorsRange: Bool {
        get { lock.withLock { ranges } }
        set { lock.withLock { ranges = newValue } }
    }
    private var ranges = true
    /// When set, bundle answers promise their whole length but send only this many bytes, then
    /// close the connection (a transfer cut short).
    var cutBundleAfter: Int? {
        get { lock.withLock { cut } }
        set { lock.withLock { cut = newValue } }
    }
    private var cut: Int?

    var baseURL: String { "http://127.0.0.1:\(port)/content" }
    var requests: [Request] { lock.withLock { received } }

    init() throws {
        server = try LoopbackHTTPServer()
        server.start(answeringWith: self) { service, fd, request in service.handle(fd, request) }
    }

    func stop() { server.stop() }

    deinit { stop() }

    private func handle(_ fd: Int32, _ request: LoopbackHTTPServer.Request) {
        let parts = request.path.split(separator: "?", maxSplits: 1).map(String.init)
        let path = parts[0]
        var query: [String: String] = [:]
        if parts.count > 1 {
            for item in parts[1].split(separator: "&") {
                let pair = item.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query[pair[0]] = pair.count > 1 ? pair[1] : ""
            }
        }
        let range = request.headers["range"]
        lock.withLock { received.append(Request(path: path, query: query, range: range)) }
        switch path {
        case "/content/settings":
            let (status, body) = settings(query)
            respond(fd, status, [:], Data(body.utf8))
        case "/content/metadata":
            let answer = metadata
            respond(fd, answer.status, [:], Data(answer.body.utf8))
        case "/content/bundle":
            let (bytes, honors, cutAfter) = lock.withLock { (bundleBytes, ranges, cut) }
            if let cutAfter {
                // The connection breaks at byte `cutAfter` of the bundle: a whole answer stops
                // there, and so does the Range answer that spans it (later ones send nothing).
                let (start, last) =
                    honors ? (range.flatMap(parse).map { ($0.0, min($0.1, bytes.count - 1)) } ?? (0, bytes.count - 1)) : (0, bytes.count - 1)
                if last >= cutAfter {
                    let sent = start < cutAfter ? bytes.subdata(in: start..<cutAfter) : Data()
                    let head = honors && range != nil ? ["Content-Range": "bytes \(start)-\(last)/\(bytes.count)"] : [:]
                    LoopbackHTTPServer.respond(fd, honors && range != nil ? 206 : 200, headers: head, declaredLength: last - start + 1, sent)
                    return
                }
            }
            if honors, let range, let (start, end) = parse(range) {
                guard start < bytes.count else {
                    respond(fd, 416, ["Content-Range": "bytes */\(bytes.count)"], Data())
                    return
                }
                let last = min(end, bytes.count - 1)
                respond(fd, 206, ["Content-Range": "bytes \(start)-\(last)/\(bytes.count)"], bytes.subdata(in: start..<(last + 1)))
            } else {
                respond(fd, 200, [:], bytes)
            }
        default:
            respond(fd, 404, [:], Data("{\"error\":\"no such path\"}".utf8))
        }
    }

    private func parse(_ range: String) -> (Int, Int)? {
        guard range.hasPrefix("bytes=") else { return nil }
        let bounds = range.dropFirst(6).split(separator: "-").compactMap { Int($0) }
        return bounds.count == 2 && bounds[0] <= bounds[1] ? (bounds[0], bounds[1]) : nil
    }

    private func respond(_ fd: Int32, _ code: Int, _ headers: [String: String], _ body: Data) {
        LoopbackHTTPServer.respond(fd, code, headers: headers, body)
    }
}
