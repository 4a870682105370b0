import Foundation
import XCTest

/// A real `nats-server -js` (Debian's nats-server) on 127.0.0.1 with a temporary store, as a child
/// process: started on a free port, stopped with SIGKILL (mid-stream, for the fault tests) and
/// started again on the same port and store. The stream is read back with Tests/Fixtures/
/// nats_stream_reader.c (libnats), compiled on first use.
final class NatsServerProcess {
    let port: Int
    let storeDirectory: String
    private var process: Process?
    var url: String { "nats://127.0.0.1:\(port)" }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// One stored message as read back.
    struct Message: Equatable {
        var sequence: Int
        var msgID: String
        var subject: String
        var data: String
        /// The `traceparent` header ("" when none); read only by `read(stream:traceparents: true)`.
        var traceparent = ""
    }

    init(storeDirectory: String) throws {
        self.storeDirectory = storeDirectory
        port = try Self.freePort()
        try start()
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Starts the server and waits (at most 15 s) until it takes connections.
    func start() throws {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/sbin/nats-server")
        server.arguments = ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDirectory]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        process = server
        for _ in 0..<150 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return }
            usleep(100_000)
        }
        throw Failure(description: "nats-server did not listen on \(port) within 15 s")
    }

    /// SIGKILL: no goodbye to the clients, whatever was not yet on disk is the server's loss.
    func kill() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    static func reader(in folder: String) throws -> String {
        // Versioned: a helper built by an older checkout (without --traceparent) is not reused.
        try TestSupport.compileProgram("nats_stream_reader.c", to: folder + "/nats_stream_reader-2", libraries: ["nats"])
    }

    /// Every message of `stream`, in sequence order.
    func read(stream: String, traceparents: Bool = false) throws -> [Message] {
        let reader = try Self.reader(in: NSTemporaryDirectory() + "hubhost-nats-helper-\(getuid())")
        let run = try TestSupport.run(reader, [url, stream] + (traceparents ? ["--traceparent"] : []), timeout: 60)
        guard run.status == 0 else { throw Failure(description: "reading \(stream): \(run.stderr)") }
        return try run.stdout.split(separator: "\n").map { line in
            var text = Substring(line)
            var traceparent = ""
            if traceparents, let tab = text.lastIndex(of: "\t") {  // the last field; DATA (JSON) holds no tab
                traceparent = String(text[text.index(after: tab)...])
                text = text[..<tab]
            }
            let fields = text.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 4, let sequence = Int(fields[0]) else { throw Failure(description: "bad line: \(line)") }
            return Message(sequence: sequence, msgID: fields[1], subject: fields[2], data: fields[3], traceparent: traceparent)
        }
    }

    deinit { kill() }
}
