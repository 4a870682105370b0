import Foundation
import HubHostKit

/// A minimal HTTP server on 127.0.0.1 that answers every request with one fixed JSON body: the
/// weather endpoint of `hubhost bench events`, so the benchmark never leaves the machine.
final class LoopbackJSONServer: @unchecked Sendable {
    private let listener: Int32
    let port: UInt16
    private let body: String
    private let lock = NSLock()
    private var stopped = false

    init(body: String) throws {
        self.body = body
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw PluginLoadError.workerFailed(instance: "bench", reason: "cannot listen on 127.0.0.1")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in serve() }.start()
    }

    private func serve() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 || lock.withLock({ stopped }) { if fd >= 0 { close(fd) }; return }
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
