import Foundation

/// A content service on 127.0.0.1 for delivery tests (plain sockets, one connection at a time):
/// GET /settings (its answer may depend on the query, e.g. location_id), /metadata, and /bundle
/// with `Range: bytes=a-b` support (or, with `honorsRange = false`, the whole body with 200).
/// It records every request (path with query, Range header).
final class TestContentService: @unchecked Sendable {
    struct Request { var path: String; var query: [String: String]; var range: String? }

    private let lock = NSLock()
    private var listener: Int32 = -1
    private(set) var port: UInt16 = 0
    private var stopped = false
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

    var baseURL: String { "http://127.0.0.1:\(port)/content" }
    var requests: [Request] { lock.withLock { received } }

    init() throws {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(listener, 16) == 0 else { throw NSError(domain: "TestContentService", code: Int(errno)) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        Thread { [weak self] in self?.serve() }.start()
    }

    func stop() {
        lock.withLock {
            guard !stopped else { return }
            stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    deinit { stop() }

    private func serve() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            if lock.withLock({ stopped }) { close(fd); return }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            handle(fd)
        }
    }

    private func handle(_ fd: Int32) {
        guard let (target, headers) = readHead(fd) else { close(fd); return }
        let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
        let path = parts[0]
        var query: [String: String] = [:]
        if parts.count > 1 {
            for item in parts[1].split(separator: "&") {
                let pair = item.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query[pair[0]] = pair.count > 1 ? pair[1] : ""
            }
        }
        let range = headers["range"]
        lock.withLock { received.append(Request(path: path, query: query, range: range)) }
        switch path {
        case "/content/settings":
            let (status, body) = settings(query)
            respond(fd, status, [:], Data(body.utf8))
        case "/content/metadata":
            let answer = metadata
            respond(fd, answer.status, [:], Data(answer.body.utf8))
        case "/content/bundle":
            let (bytes, honors) = lock.withLock { (bundleBytes, ranges) }
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
        var head = "HTTP/1.1 \(code) X\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let data = Data((head + "\r\n").utf8) + body
        data.withUnsafeBytes { raw in
            var sent = 0
            var attempts = 0
            while sent < raw.count && attempts < 100_000 {
                let n = send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n <= 0 { break }
                sent += n
                attempts += 1
            }
        }
        close(fd)
    }

    private func readHead(_ fd: Int32) -> (String, [String: String])? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16384)
        for _ in 0..<1000 {
            if let end = data.range(of: Data("\r\n\r\n".utf8)) {
                let lines = String(decoding: data[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
                let requestLine = lines[0].split(separator: " ")
                guard requestLine.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    if let colon = line.firstIndex(of: ":") {
                        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    }
                }
                return (String(requestLine[1]), headers)
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return nil }
            data.append(contentsOf: buffer[0..<n])
        }
        return nil
    }
}
