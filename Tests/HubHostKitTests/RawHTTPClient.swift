import Foundation

/// A plain-socket HTTP/1.1 client for tests that must send what a well-behaved client would not:
/// a foreign Host header, any Origin, raw bytes (a chunked body), or nothing at all (idle connections).
/// Loopback only; every read and every send waits 10 s at most.
final class RawHTTPClient {
    let fd: Int32

    struct Failure: Error, CustomStringConvertible { var description: String }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "connect: \(errno)")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends one request and reads the answer: its status and body (Connection: close).
    func request(_ method: String, _ path: String, headers: [String: String] = [:], body: String = "") throws -> (status: Int, body: String) {
        var head = "\(method) \(path) HTTP/1.1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
        if headers["Host"] == nil { head += "Host: 127.0.0.1\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return try exchange(head + "\r\n" + body)
    }

    /// Sends `request` exactly as given (it should say `Connection: close`) and reads the answer:
    /// its status and body.
    func exchange(_ request: String) throws -> (status: Int, body: String) {
        send(request)
        let text = readAll()
        guard let line = text.split(separator: "\r\n").first, let status = Int(line.split(separator: " ").dropFirst().first ?? "") else {
            throw Failure(description: "no HTTP answer: \(text.prefix(200))")
        }
        let answerBody = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, answerBody)
    }

    /// Reads until the server closes the connection (or 10 s without data).
    func readAll() -> String {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<10_000 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads what arrives (a stream's answer, kept open) until it contains `marker`, the server
    /// closes the connection or 10 s pass without data; returns everything read.
    func read(until marker: String, after text: String = "") -> String {
        var data = Data(text.utf8)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<10_000 where !String(decoding: data, as: UTF8.self).contains(marker) {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// True when the server closed the connection: recv answers 0 (EOF) within 10 s.
    func isClosedByServer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }
}
