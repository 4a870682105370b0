import Foundation
import HubHostKit

/// A minimal HTTP server on 127.0.0.1 that answers every request with one fixed JSON body: the
/// weather endpoint of `hubhost bench events`, so the benchmark never leaves the machine.
/// Safe to share: `stopped`, the only mutable field, is read and written under `lock`; the socket, port and body are
/// `let`s set in init.
final class LoopbackJSONServer: @unchecked Sendable {
    private let listener: Int32
    let port: UInt16
    private let body: String
    private let lock = NSLock()
    private var stopped = false

    init(body: String) throws {
        self.body = body
        let opened = LoopbackSocket.open()
        guard let bound = opened, listen(bound.fd, 16) == 0 else {
            if let fd = opened?.fd { close(fd) }
            throw PluginLoadError.workerFailed(instance: "bench", reason: "cannot listen on 127.0.0.1")
        }
        listener = bound.fd
        port = bound.port
        Thread { [self] in serve() }.start()
    }

    private func serve() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 || lock.withLock({ stopped }) {
                if fd >= 0 { close(fd) }
                return
            }
            var buffer = [UInt8](repeating: 0, count: 8192)
            _ = recv(fd, &buffer, buffer.count, 0)  // a GET: its headers fit
            let reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            _ = reply.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            close(fd)
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
