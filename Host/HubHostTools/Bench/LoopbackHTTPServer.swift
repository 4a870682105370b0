import Foundation
import Synchronization

/// The loopback HTTP server of the tests and the benchmarks: listens on a loopback address and a
/// free port and reads each request (head and body, every read bounded). Two ways to serve:
/// `start` accepts one connection at a time on its own thread and hands each request to a handler
/// that answers with `respond`, closes, or keeps the connection open until `stop` (the tests' fake
/// services, with faults); `startKeepAlive` serves each connection on a thread of its own, many
/// requests per connection, with one fixed answer (the benchmarks' collector and weather endpoint,
/// measured without the network).
/// Sendable: the stop flag, the connections kept open and whether the accept thread started live in
/// a Mutex; the listener, address and port are `let`s set in init.
package final class LoopbackHTTPServer: Sendable {
    package struct Request: Sendable {
        package var method: String
        /// The request target: path and query, as sent.
        package var path: String
        /// Header names lowercased.
        package var headers: [String: String]
        package var body: Data
    }

    /// One fixed answer (`startKeepAlive`).
    package struct Answer: Sendable {
        package var status: Int
        package var headers: [String: String]
        package var body: Data

        package init(status: Int = 200, headers: [String: String] = [:], body: Data) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// The most a request body may carry: a number from outside, checked before it sizes anything.
    package static let maxBody = 64 << 20

    package let address: String
    package let port: UInt16
    private let listener: Int32
    private struct State {
        var stopped = false
        var openConnections: [Int32] = []
        var acceptThreadStarted = false
    }
    private let state = Mutex(State())
    /// Signalled when the accept thread has returned: the listener is closed only then, so its
    /// descriptor number cannot be reused by another server while this thread still accepts on it
    /// (it would take that server's connections and close them).
    private let acceptThreadDone = DispatchSemaphore(value: 0)

    /// Binds `address` (a loopback address) on a free port. Call `start` or `startKeepAlive` to begin accepting.
    package init(address: String = "127.0.0.1") throws {
        self.address = address
        guard let bound = LoopbackSocket.open(address: address), listen(bound.fd, 64) == 0 else {
            throw NSError(domain: "LoopbackHTTPServer", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "cannot listen on \(address)"])
        }
        listener = bound.fd
        port = bound.port
    }

    /// `http://ADDRESS:PORT` followed by `path`.
    package func url(_ path: String = "") -> String { "http://\(address):\(port)\(path)" }

    /// Accepts connections on a thread of its own until `stop`; a request that cannot be read
    /// (closed early, no head within the bounds) is dropped.
    package func start(_ handle: @escaping @Sendable (Int32, Request) -> Void) {
        state.withLock { $0.acceptThreadStarted = true }
        let thread = Thread { [self] in
            defer { acceptThreadDone.signal() }
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 { return }
                if state.withLock({ $0.stopped }) {
                    close(fd)
                    return
                }
                var timeout = timeval(tv_sec: 5, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                guard let request = Self.read(fd) else {
                    close(fd)
                    continue
                }
                handle(fd, request)
            }
        }
        thread.name = "loopback-accept"
        thread.start()
    }

    /// Accepts connections until `stop`, each served on a thread of its own: request after request
    /// on one connection (at most 1,000,000), each answered with `answer`, until the client closes it.
    package func startKeepAlive(_ answer: Answer) {
        var head = "HTTP/1.1 \(answer.status) X\r\nContent-Length: \(answer.body.count)\r\n"
        for (name, value) in answer.headers { head += "\(name): \(value)\r\n" }
        let reply = Data((head + "\r\n").utf8) + answer.body
        start { fd, request in
            Thread {
                defer { close(fd) }
                var next: Request? = request
                for _ in 0..<1_000_000 {  // bounded: one request per round
                    guard next != nil, Self.sendAll(fd, reply) else { return }
                    next = Self.read(fd)
                }
            }.start()
        }
    }

    /// Leaves the connection unanswered (a hanging server); `stop` closes it.
    package func keepOpen(_ fd: Int32) {
        state.withLock { $0.openConnections.append(fd) }
    }

    package func stop() {
        let waitForThread: Bool? = state.withLock { state in
            guard !state.stopped else { return nil }  // the first stop closes the listener
            state.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))  // wakes the accept thread
            for fd in state.openConnections {
                shutdown(fd, Int32(SHUT_RDWR))
                close(fd)
            }
            state.openConnections = []
            return state.acceptThreadStarted
        }
        guard let waitForThread else { return }
        if waitForThread && Thread.current.name != "loopback-accept" {
            _ = acceptThreadDone.wait(timeout: .now() + 5)  // bounded: a handler may still be answering
        }
        close(listener)
    }

    deinit { stop() }

    /// Sends a whole answer and closes the connection. `declaredLength` (default: the body's) is the
    /// Content-Length sent: a larger one makes an answer cut short.
    package static func respond(_ fd: Int32, _ code: Int, headers: [String: String] = [:], declaredLength: Int? = nil, _ body: Data) {
        var head = "HTTP/1.1 \(code) X\r\nContent-Length: \(declaredLength ?? body.count)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        _ = sendAll(fd, Data((head + "\r\n").utf8) + body)
        close(fd)
    }

    /// Writes all of `data` (at most 100,000 sends); false when the connection failed first.
    package static func sendAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var sent = 0
            var attempts = 0
            while sent < raw.count && attempts < 100_000 {
                let n = send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                sent += n
                attempts += 1
            }
            return sent == raw.count
        }
    }

    /// Reads one request: the head (at most 10,000 reads), then `Content-Length` bytes of body.
    package static func read(_ fd: Int32) -> Request? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Range<Data.Index>?
        var reads = 0
        while headerEnd == nil {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return nil }
            data.append(contentsOf: buffer[0..<n])
            headerEnd = data.range(of: Data("\r\n\r\n".utf8))
            reads += 1
            if reads > 10_000 { return nil }
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
        guard let length = Int(headers["content-length"] ?? "0"), (0...maxBody).contains(length) else { return nil }
        while body.count < length {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            body.append(contentsOf: buffer[0..<n])
        }
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body)
    }
}
