import Foundation

/// `nats-server -js` on 127.0.0.1 for `hubhost bench sinks`: a free port, a store in the bench's
/// temporary folder, waited for (15 s at most), ended with SIGKILL.
final class LocalNatsServer {
    private let process = Process()
    let port: UInt16
    var url: String { "nats://127.0.0.1:\(port)" }

    struct DidNotStart: Error, CustomStringConvertible { var description: String }

    init(executable: String, storeDirectory: String) throws {
        guard let probe = LoopbackSocket.open() else { throw DidNotStart(description: "no free port on 127.0.0.1") }
        port = probe.port
        close(probe.fd)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDirectory]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<150 where process.isRunning {
            if Self.accepts(port) { return }
            usleep(100_000)
        }
        stop()
        throw DidNotStart(description: "nats-server did not listen on 127.0.0.1:\(port) within 15 s")
    }

    static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
