import Foundation
import XCTest

@testable import HubHostKit

/// Every reload is in serve's log at the default logging level (severity error): an applied one
/// with what it changed and its generation, a refused one with its problems.
final class ReloadLoggingTests: XCTestCase {
    func testAnOperatorActionPassesAnySeverityButNone() {
        let applied = LogRecord(severity: .info, verbosity: .debug, timeMs: 0, source: "hubhost", message: "reloaded", isOperatorAction: true)
        XCTAssertTrue(LogFilter().allows(applied), "the default filter (error) passes it")
        XCTAssertTrue(LogFilter(severity: .criticalError).allows(applied))
        XCTAssertFalse(LogFilter(severity: .none).allows(applied), "logging off is off")
        XCTAssertFalse(LogFilter(verbosity: .none).allows(applied))
        var ordinary = applied
        ordinary.isOperatorAction = false
        XCTAssertFalse(LogFilter().allows(ordinary), "an ordinary info record stays filtered at error")
    }

    func testSighupAndTheReloadCommandAreLoggedAtTheDefaultLevel() throws {
        let folder = try TestSupport.temporaryFolder(self)
        func manifest(_ extra: String) -> String {
            """
            data_dir: data
            server: {host: 127.0.0.1, port: 0}
            plugins:
              - id: logfile
                use: jsonl-logger
                config: {path: logs/hubhost.jsonl}
            \(extra)
            """
        }
        try TestSupport.write(manifest(""), to: folder + "/plugins.yaml")
        let server = try ServeProcess(manifest: folder + "/plugins.yaml")  // stopped when released
        let log = folder + "/data/logs/hubhost.jsonl"

        /// The log's lines once one contains `text`, waited for 20 s at most.
        func waitForLine(_ text: String) -> String? {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                if let line = lines.first(where: { $0.contains(text) }) { return String(line) }
                usleep(50_000)
            }
            return nil
        }

        try TestSupport.write(manifest("  - id: extra\n    use: noop"), to: folder + "/plugins.yaml")
        kill(server.process.processIdentifier, SIGHUP)
        let applied = waitForLine("reloaded plugins.yaml (generation 1): added [extra], removed [], changed [], settings []")
        XCTAssertNotNil(applied, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "no log")
        XCTAssertTrue(applied?.contains("info") == true, "it keeps its true severity: \(applied ?? "")")

        try TestSupport.write(manifest("  - id: extra\n    use: noop\n    no_such_key: 1"), to: folder + "/plugins.yaml")
        let refused = try TestSupport.hubhost(["reload", "--manifest", folder + "/plugins.yaml", "--url", server.base])
        XCTAssertEqual(refused.status, 1, refused.stdout)
        let line = waitForLine("reload refused, nothing changed: ")
        XCTAssertNotNil(line, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "no log")
        XCTAssertTrue(line?.contains("no_such_key") == true, line ?? "")
    }
}
