import Foundation

/// A real HTTP server on 127.0.0.1 (plain sockets, one connection at a time) that plays an event
/// collector and an OAuth token endpoint, with faults on demand: an HTTP status, a hang, a closed
/// connection. It records every request it read.
final class TestCollector: @unchecked Sendable {
    enum Behavior: Equatable {
        case status(Int)
        /// Read the request, then never answer (until the server stops).
        case hang
        /// Read the request, then close the connection without an answer.
        case close
    }

    struct Request {
        var method: String
        var path: String
        var headers: [String: String]
        var body: Data
    }

    private let lock = NSLock()
    private var listener: Int32 = -1
    private(set) var port: UInt16 = 0
    private var stopped = false
    private var script: [Behavior] = []
    private var fallback: Behavior = .status(200)
    private var received: [Request] = []
    private var tokenCount = 0
    private var openConnections: [Int32] = []

    /// The address it listens on (a loopback address such as 127.0.0.1 or 127.0.0.2).
    let address: String

    /// Starts listening on `address` (default 127.0.0.1) on a free port.
    init(address: String = "127.0.0.1") throws {
        self.address = address
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(self.address)
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(listener, 16) == 0 else { throw NSError(domain: "TestCollector", code: Int(errno)) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [weak self] in self?.serve() }
        thread.start()
    }

    var url: String { "http://127.0.0.1:\(port)/collect" }
    /// An Open-Meteo-like forecast endpoint.
    var forecastURL: String { "http://127.0.0.1:\(port)/v1/forecast" }
    /// What the forecast endpoint answers (status, body).
    var forecast: (status: Int, body: String) {
        get { lock.withLock { forecastAnswer } }
        set { lock.withLock { forecastAnswer = newValue } }
    }
    private var forecastAnswer = (status: 200, body: #"{"latitude":47.61,"current_units":{"temperature_2m":"°C"},"current":{"time":"2026-11-22T08:00","temperature_2m":11.5,"weather_code":3}}"#)
    /// Fixed answers for other paths (e.g. a campaign config or ping endpoint): path -> (status, body).
    var routes: [String: (status: Int, body: String)] {
        get { lock.withLock { fixedRoutes } }
        set { lock.withLock { fixedRoutes = newValue } }
    }
    private var fixedRoutes: [String: (status: Int, body: String)] = [:]
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }
    /// The path (with its query) of every request recorded, in order.
    var paths: [String] { lock.withLock { received.map(\.path) } }
    /// How many requests each fixed route got.
    func hits(_ path: String) -> Int { lock.withLock { received.filter { $0.path == path }.count } }

    /// The paths (with queries) of the forecast requests received.
    var forecastRequests: [String] { lock.withLock { received.filter { $0.path.hasPrefix("/v1/forecast") }.map(\.path) } }
    var tokenURL: String { "http://127.0.0.1:\(port)/token" }

    /// The next requests to /collect get these behaviors in order, then `then` for the rest.
    func script(_ behaviors: [Behavior], then: Behavior = .status(200)) {
        lock.withLock {
            script = behaviors
            fallback = then
        }
    }

    var requests: [Request] { lock.withLock { received.filter { $0.path == "/collect" } } }
    var tokenRequests: Int { lock.withLock { tokenCount } }

    /// The idempotency keys of the events in every batch the collector accepted (answered 2xx).
    var acceptedKeys: [String] { lock.withLock { accepted } }
    private var accepted: [String] = []

    func stop() {
        lock.withLock {
            stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
            for fd in openConnections { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
            openConnections = []
        }
    }

    deinit { stop() }

    private func serve() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            if lock.withLock({ stopped }) { close(fd); return }
            handle(fd)
        }
    }

    private func handle(_ fd: Int32) {
        guard let request = read(fd) else { close(fd); return }
        if request.path == "/token" {
            lock.withLock { tokenCount += 1 }
            let token = "token-\(lock.withLock { tokenCount })"
            respond(fd, 200, "{\"access_token\":\"\(token)\",\"expires_in\":3600,\"token_type\":\"bearer\"}")
            return
        }
        if let fixed = lock.withLock({ () -> (status: Int, body: String)? in
            guard let answer = fixedRoutes[request.path] else { return nil }
            received.append(request)
            return answer
        }) {
            respond(fd, fixed.status, fixed.body)
            return
        }
        if request.path.hasPrefix("/v1/forecast") {
            let answer = lock.withLock { () -> (status: Int, body: String) in
                received.append(request)
                return forecastAnswer
            }
            respond(fd, answer.status, answer.body)
            return
        }
        let behavior: Behavior = lock.withLock {
            received.append(request)
            return script.isEmpty ? fallback : script.removeFirst()
        }
        switch behavior {
        case .status(let code):
            if (200..<300).contains(code), let json = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
               let events = json["events"] as? [[String: Any]] {
                lock.withLock { accepted += events.compactMap { $0["idempotencyKey"] as? String } }
            }
            respond(fd, code, "{}")
        case .hang:
            lock.withLock { openConnections.append(fd) }  // closed by stop()
        case .close:
            close(fd)
        }
    }

    private func respond(_ fd: Int32, _ code: Int, _ body: String) {
        let text = "HTTP/1.1 \(code) X\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        _ = text.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        close(fd)
    }

    private func read(_ fd: Int32) -> Request? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Range<Data.Index>?
        var deadline = 0
        while headerEnd == nil {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return nil }
            data.append(contentsOf: buffer[0..<n])
            headerEnd = data.range(of: Data("\r\n\r\n".utf8))
            deadline += 1
            if deadline > 10_000 { return nil }
        }
        let head = String(decoding: data[..<headerEnd!.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = head[0].split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        var body = Data(data[headerEnd!.upperBound...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            body.append(contentsOf: buffer[0..<n])
        }
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body)
    }
}
