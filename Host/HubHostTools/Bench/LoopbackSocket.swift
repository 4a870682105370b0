import Foundation

/// A TCP socket bound to a loopback address (127.0.0.1 unless told) on a port the system picks,
/// for the benchmarks' and the tests' local servers.
package enum LoopbackSocket {
    /// The socket and its port; nil (the socket closed) when it cannot be bound.
    package static func open(address text: String = "127.0.0.1") -> (fd: Int32, port: UInt16)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(text)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            close(fd)
            return nil
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, UInt16(bigEndian: address.sin_port))
    }
}
