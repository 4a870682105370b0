import Foundation

/// The socket part of the tests' HTTP servers (TestCollector, TestContentService): listens on a
/// loopback address and a free port, accepts one connection at a time on its own thread, reads each
/// request (head and body, every read bounded) and hands it to the owner's handler, which answers
/// with `respond`, closes, or keeps the connection open until `stop`.
final class LoopbackHTTPServer: @unchecked Sendable {
    struct Request {
        var method: String
        /// The request target: path and query, as sent.
        var path: String
        /// Header names lowercased.
        var headers: [String: String]
        var body: Data
    }

    let address: String
    let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var stopped = false
    private var openConnections: [Int32] = []
    /// Signalled when the accept thread has returned: the listener is closed only then, so its
    /// descriptor number cannot be reused by another server while this thread still accepts on it
    /// (it would take that server's connections and close them).
    private let acceptThreadDone = DispatchSemaphore(value: 0)
    private var acceptThreadStarted = false

    /// Binds `address` on a free port. Call `start` to begin accepting.
    init(address: String = "127.0.0.1") throws {
        self.address = address
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_addr.s_addr = inet_addr(address)
        socketAddress.sin_port = 0
        let fd = listener
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw NSError(domain: "LoopbackHTTPServer", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "cannot listen on \(address)"])
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &socketAddress) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: socketAddress.sin_port)
    }

    /// Accepts connections on a thread of its own until `stop`; a request that cannot be read
    /// (closed early, no head within the bounds) is dropped.
    func start(_ handle: @escaping (Int32, Request) -> Void) {
        lock.withLock { acceptThreadStarted = true }
        let thread = Thread { [self] in
            defer { acceptThreadDone.signal() }
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 { return }
                if lock.withLock({ stopped }) {
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

    /// Leaves the connection unanswered (a hanging server); `stop` closes it.
    func keepOpen(_ fd: Int32) {
        lock.withLock { openConnections.append(fd) }
    }

    func stop() {
        let waitForThread: Bool? = lock.withLock {
            guard !stopped else { return nil }  // the first stop closes the listener
            stopped = true
            shutdown(listener, Int32(SHUT_RDWR))  // wakes the accept thread
            for fd in openConnections {
                shutdown(fd, Int32(SHUT_RDWR))
                close(fd)
            }
            openConnections = []
            return acceptThreadStarted
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
    static func respond(_ fd: Int32, _ code: Int, headers: [String: String] = [:], declaredLength: Int? = nil, _ body: Data) {
        var head = "HTTP/1.1 \(code) X\r\nContent-Length: \(declaredLength ?? body.count)\r\nConnection: close\r\n"
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

    /// Reads one request: the head (at most 10,000 reads), then `Content-Length` bytes of body.
    static func read(_ fd: Int32) -> Request? {
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
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            body.append(contentsOf: buffer[0..<n])
        }
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body)
    }
}
