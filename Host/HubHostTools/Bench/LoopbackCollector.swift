import Foundation
import HubHostKit

/// A minimal HTTP collector on 127.0.0.1 for `hubhost bench sinks`: reads each request whole (by
/// its Content-Length) and answers 200, one connection at a time, so the HTTP collector sink is
/// measured against loopback, never the network.
/// Safe to share: `stopped`, the only mutable field, is read and written under `lock`; the socket and port are `let`s
/// set in init.
final class LoopbackCollector: @unchecked Sendable {
    private let listener: Int32
    let port: UInt16
    private let lock = NSLock()
    private var stopped = false
    /// The most a request may carry: a number from outside, checked before it sizes anything.
    static let maxBody = 64 << 20

    init() throws {
        let opened = LoopbackSocket.open()
        guard let bound = opened, listen(bound.fd, 16) == 0 else {
            if let fd = opened?.fd { close(fd) }
            throw PluginLoadError.workerFailed(instance: "bench", reason: "cannot listen on 127.0.0.1")
        }
        listener = bound.fd
        port = bound.port
        Thread { [self] in serve() }.start()
    }

    var url: String { "http://127.0.0.1:\(port)/events" }

    private func serve() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 || lock.withLock({ stopped }) {
                if fd >= 0 { close(fd) }
                return
            }
            Thread { Self.answer(fd) }.start()
        }
    }

    /// Serves requests on one connection until the client closes it.
    private static func answer(_ fd: Int32) {
        defer { close(fd) }
        var pending = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<1_000_000 {  // bounded: one request per round
            var headerEnd: Int?
            while headerEnd == nil {
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 { return }
                pending.append(contentsOf: chunk[0..<n])
                headerEnd = pending.firstRange(of: [13, 10, 13, 10])?.upperBound
                if pending.count > 1 << 20 && headerEnd == nil { return }
            }
            let head = String(decoding: pending[0..<headerEnd!], as: UTF8.self).lowercased()
            let length =
                head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            guard (0...maxBody).contains(length) else { return }
            while pending.count < headerEnd! + length {
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 { return }
                pending.append(contentsOf: chunk[0..<n])
            }
            pending.removeFirst(headerEnd! + length)
            let reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
            guard reply.withCString({ send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }) > 0 else { return }
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
