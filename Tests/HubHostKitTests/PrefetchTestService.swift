import Foundation
import HubHostTools

/// The prefetch tests' catalog service and file server on 127.0.0.1 (one LoopbackHTTPServer, each
/// request answered on a thread of its own so that a slow or hanging file does not hold the
/// others): `<base>/svc/prefetch/register`, `<base>/svc/prefetch/catalog` (pages keyed by the
/// `since` cursor) and `<base>/files/NAME` with Range, ETag and If-Range, plus scripted faults.
final class PrefetchTestService: @unchecked Sendable {
    enum Fault {
        case status(Int)
        /// Sends the head with the full length, then only this many body bytes, then closes.
        case truncate(Int)
        /// Never answers (until the server stops).
        case hang
        /// Sends the body in chunks of `chunk` bytes with `delayMs` between them.
        case slow(chunk: Int, delayMs: Int)
        /// Sends other bytes than the file's (same length).
        case wrongBytes
    }

    private let server: LoopbackHTTPServer
    let lock = NSLock()
    var license = "good-licence"
    /// Answers 500 to this many register requests first.
    var registerFailures = 0
    var policy = #"{"network_selection": "wifi"}"#
    /// Catalog pages by the `since` they answer ("" for the first).
    var pages: [String: String] = [:]
    var files: [String: Data] = [:]
    /// Item entries (JSON) the look-up resource knows, by contentId.
    var lookupItems: [String: String] = [:]
    /// Answers 500 to this many look-ups first.
    var lookupFailures = 0
    private(set) var lookups = 0
    /// Faults by file name, each used by one request, in order.
    var faults: [String: [Fault]] = [:]
    /// Faults applied to every request of a file (after the one-shot ones).
    var steadyFaults: [String: Fault] = [:]
    /// Files served without a validator (no ETag): a Range request is answered from the bytes as they are now.
    var withoutValidator: Set<String> = []
    private(set) var bytesSent: [String: Int] = [:]
    private(set) var ranges: [String: [String?]] = [:]
    /// The headers of each file request, by file name.
    private(set) var fileHeaders: [String: [[String: String]]] = [:]
    private(set) var registerQueries: [[String: String]] = []
    private(set) var catalogQueries: [[String: String]] = []

    var base: String { "http://127.0.0.1:\(server.port)" }
    var serviceURL: String { base + "/svc" }
    func fileURL(_ name: String) -> String { base + "/files/" + name }

    init() throws {
        server = try LoopbackHTTPServer()
        server.start { [self] fd, request in
            Thread { self.handle(fd, request) }.start()
        }
    }

    func stop() { server.stop() }

    func sent(_ name: String) -> Int { lock.withLock { bytesSent[name] ?? 0 } }
    func requestRanges(_ name: String) -> [String?] { lock.withLock { ranges[name] ?? [] } }

    private func handle(_ fd: Int32, _ request: LoopbackHTTPServer.Request) {
        let parts = request.path.split(separator: "?", maxSplits: 1)
        let path = String(parts[0])
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query[kv[0]] = kv.count == 2 ? kv[1] : ""
            }
        }
        switch path {
        case "/svc/prefetch/register":
            let (fail, license, policy) = lock.withLock { () -> (Bool, String, String) in
                registerQueries.append(query)
                if registerFailures > 0 {
                    registerFailures -= 1
                    return (true, self.license, self.policy)
                }
                return (false, self.license, self.policy)
            }
            if fail {
                LoopbackHTTPServer.respond(fd, 500, Data("down".utf8))
                return
            }
            let body =
                query["license"] == license
                ? #"{"registered": true, "registration_id": "reg-\#(query["device_id"] ?? "x")", "policy": \#(policy)}"#
                : #"{"registered": false, "reason": "unknown licence"}"#
            LoopbackHTTPServer.respond(fd, 200, headers: ["Content-Type": "application/json"], Data(body.utf8))
        case "/svc/prefetch/catalog":
            let page = lock.withLock { () -> String? in
                catalogQueries.append(query)
                return pages[query["since"] ?? ""]
            }
            guard let page else {
                LoopbackHTTPServer.respond(fd, 404, Data("no such page".utf8))
                return
            }
            LoopbackHTTPServer.respond(fd, 200, headers: ["Content-Type": "application/json"], Data(page.utf8))
        case "/svc/prefetch/items":
            let ids = parts.count == 2 ? parts[1].split(separator: "&").filter { $0.hasPrefix("content_id=") }.map { String($0.dropFirst(11)) } : []
            let (fail, entries) = lock.withLock { () -> (Bool, [String]) in
                lookups += 1
                if lookupFailures > 0 {
                    lookupFailures -= 1
                    return (true, [])
                }
                return (false, ids.compactMap { lookupItems[$0] })
            }
            if fail {
                LoopbackHTTPServer.respond(fd, 500, Data("down".utf8))
                return
            }
            LoopbackHTTPServer.respond(
                fd, 200, headers: ["Content-Type": "application/json"], Data(#"{"items": [\#(entries.joined(separator: ","))]}"#.utf8))
        default:
            guard path.hasPrefix("/files/") else {
                LoopbackHTTPServer.respond(fd, 404, Data())
                return
            }
            serveFile(fd, String(path.dropFirst(7)), request)
        }
    }

    private func serveFile(_ fd: Int32, _ name: String, _ request: LoopbackHTTPServer.Request) {
        let (data, fault, validated) = lock.withLock { () -> (Data?, Fault?, Bool) in
            ranges[name, default: []].append(request.headers["range"])
            fileHeaders[name, default: []].append(request.headers)
            var fault: Fault?
            if var queue = faults[name], !queue.isEmpty {
                fault = queue.removeFirst()
                faults[name] = queue
            } else {
                fault = steadyFaults[name]
            }
            return (files[name], fault, !withoutValidator.contains(name))
        }
        guard var body = data else {
            LoopbackHTTPServer.respond(fd, 404, Data())
            return
        }
        let etag = "\"\(body.count)-\(body.first ?? 0)\""
        var start = 0
        var end = body.count - 1
        var ranged = false
        if let range = request.headers["range"], range.hasPrefix("bytes="), request.headers["if-range"].map({ $0 == etag }) ?? true {
            // "bytes=A-" or "bytes=A-B" (an end past the file is the file's end).
            let bounds = range.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            if let from = Int(bounds.first ?? ""), from < body.count {
                start = from
                if bounds.count == 2, let to = Int(bounds[1]), to >= from { end = min(to, body.count - 1) }
                ranged = start > 0 || end < body.count - 1
            }
        }
        if case .status(let code)? = fault {
            LoopbackHTTPServer.respond(fd, code, Data("fault".utf8))
            return
        }
        if case .hang? = fault {
            server.keepOpen(fd)
            return
        }
        if case .wrongBytes? = fault { body = Data(body.map { $0 ^ 0x5a }) }
        let slice = body[start..<(end + 1)]
        var head =
            "HTTP/1.1 \(ranged ? "206 Partial Content" : "200 OK")\r\nContent-Length: \(slice.count)\r\nConnection: close\r\n\(validated ? "ETag: \(etag)\r\n" : "")Accept-Ranges: bytes\r\n"
        if ranged { head += "Content-Range: bytes \(start)-\(end)/\(body.count)\r\n" }
        var toSend = Data(slice)
        var chunk = toSend.count
        var delayMs = 0
        if case .truncate(let count)? = fault { toSend = toSend.prefix(count) }
        if case .slow(let size, let delay)? = fault {
            chunk = max(1, size)
            delayMs = delay
        }
        _ = LoopbackHTTPServer.sendAll(fd, Data((head + "\r\n").utf8))
        var offset = 0
        var rounds = 0
        while offset < toSend.count && rounds < 1_000_000 {
            rounds += 1
            let piece = toSend[toSend.startIndex + offset..<toSend.startIndex + min(toSend.count, offset + chunk)]
            guard LoopbackHTTPServer.sendAll(fd, Data(piece)) else { break }
            offset += piece.count
            lock.withLock { bytesSent[name, default: 0] += piece.count }
            if delayMs > 0 { usleep(useconds_t(delayMs * 1000)) }
        }
        // A cut body: let the client read what was sent before the connection closes.
        if case .truncate? = fault { usleep(200_000) }
        close(fd)
    }
}
