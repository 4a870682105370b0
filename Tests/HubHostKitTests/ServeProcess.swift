import Foundation

@testable import HubHostKit

/// `hubhost serve` on a test's plugins.yaml, as a child process: started, its address read from
/// the line it prints ("hubhost serving on http://127.0.0.1:PORT", waited for 30 s at most), and
/// killed with SIGKILL when released unless the test ended it first.
/// Safe to share: every field is a `let` set in init; the process is only read (its pid, whether it
/// runs) and signalled after it started, and HTTPFetcher is safe to share. `call` is JSONCalls'.
final class ServeProcess: JSONCalls, @unchecked Sendable {
    let process = Process()
    /// `http://127.0.0.1:PORT`
    let base: String
    let port: Int
    let http = HTTPFetcher()

    struct DidNotStart: Error, CustomStringConvertible {
        var output: String
        var description: String { "hubhost serve did not start: \(output)" }
    }

    convenience init(manifest: String, arguments: [String] = [], scheme: String = "http") throws {
        try self.init(command: ["serve", "--manifest", manifest] + arguments, scheme: scheme)
    }

    /// Any hubhost command that prints "... serving on URL" once it listens (serve, bench floor-server).
    init(command: [String], scheme: String = "http") throws {
        process.executableURL = URL(fileURLWithPath: TestSupport.hubhostExecutable)
        process.arguments = command
        let banner = try TestSupport.startReadingFirstLine(process)
        guard let address = banner.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines),
            address.hasPrefix("\(scheme)://127.0.0.1:"), let port = Int(address.split(separator: ":").last ?? "")
        else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw DidNotStart(output: banner)
        }
        base = address
        self.port = port
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
