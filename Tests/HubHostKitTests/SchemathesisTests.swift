import Foundation
import XCTest

@testable import HubHostKit

/// The HTTP API fuzzed from its OpenAPI document by schemathesis (PyPI; `.ci/run` installs it):
/// serve's API and services (in this process, InProcessAPI) on 127.0.0.1 with a random port and a
/// content provider, with and without a
/// synced bundle. Every documented operation but the endless notification stream gets generated
/// requests, valid and invalid, in every phase (examples, coverage, fuzzing, stateful), from a fixed
/// seed and at most 25 examples per operation (about 20 s). No answer may be a server error (5xx)
/// or break the document's status codes, content types, headers or response schemas; serve is alive
/// afterwards and stops cleanly as on SIGTERM (its services stopped without an error: exit 0).
final class SchemathesisTests: XCTestCase {
    static let checks = [
        "not_a_server_error", "status_code_conformance", "content_type_conformance",
        "response_headers_conformance", "response_schema_conformance"
    ]

    /// A hub with content: a signed bundle built from the fixture content, read by the local content
    /// provider and synced before serve starts, so the hub's pages and present answer with content.
    func testWithContentEveryRouteAnswersAsDocumented() async throws {
        try await fuzz(synced: true)
    }

    /// A fresh install: the content provider is configured but has nothing yet (its folder is empty),
    /// so no bundle is active: every hub route must still answer as documented, without a 5xx
    /// other than the ones the document gives for it.
    func testBeforeAnyContentEveryRouteAnswersAsDocumented() async throws {
        try await fuzz(synced: false)
    }

    private func fuzz(synced: Bool, file: StaticString = #filePath, line: UInt = #line) async throws {
        let folder = try TestSupport.temporaryFolder(self)
        // schemathesis must be there: CI installs it (.ci/run); this test is never skipped.
        let version = try TestSupport.run("/usr/bin/env", ["python3", "-m", "schemathesis.cli", "--version"], timeout: 60)
        XCTAssertEqual(
            version.status, 0, "schemathesis is not installed (python3 -m pip install schemathesis): \(version.stderr)", file: file, line: line)
        guard version.status == 0 else { return }

        let keys = try TestKeys.make("EC", name: "key", in: folder)
        try FileManager.default.createDirectory(atPath: folder + "/content", withIntermediateDirectories: true)
        let manifest = folder + "/plugins.yaml"
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {cache_size: 1000, flush_interval: 1 hr}
            hub: {public_key: \(keys.publicKey), custom_url_schemes: [myapp]}
            plugins:
              - id: content
                use: \(TestSupport.plugin("LocalContentProvider"))
                config: {path: "\(folder)/content"}
              - id: operators
                use: \(TestSupport.plugin("StandardOperators"))
            """, to: manifest)
        if synced {
            let built = try TestSupport.hubhost([
                "bundle", "build", TestSupport.repository + "/Tests/Fixtures/content",
                "-o", folder + "/content/bundle.sqlite3", "--key", keys.privateKey
            ])
            XCTAssertEqual(built.status, 0, built.stderr, file: file, line: line)
            let sync = try TestSupport.hubhost(["hub", "sync", "--manifest", manifest])
            XCTAssertEqual(sync.status, 0, sync.stderr, file: file, line: line)
        }

        try await InProcessAPI.listening(manifestPath: manifest, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                if synced { XCTAssertEqual(try server.call("GET", "/v1/hub/status").0, 200, file: file, line: line) }
                let report = folder + "/report"
                try Self.configuration().write(toFile: folder + "/schemathesis.toml", atomically: true, encoding: .utf8)
                let run = try TestSupport.run(
                    "/usr/bin/env",
                    [
                        "python3", "-m", "schemathesis.cli", "--config-file", folder + "/schemathesis.toml",
                        "run", TestSupport.repository + "/openapi.yaml", "--url", server.base,
                        "--checks", Self.checks.joined(separator: ","),
                        // The notification and message streams never end by themselves: a request to one
                        // would only time out, and its body read so far would be judged as a whole answer.
                        "--exclude-operation-id", "streamNotifications", "--exclude-operation-id", "streamMessages",
                        "--max-examples", "25", "--seed", "16", "--workers", "1", "--request-timeout", "10",
                        "--generation-database", "none", "--no-color", "--report", "ndjson", "--report-dir", report
                    ], environment: ["SCHEMATHESIS_TELEMETRY": "false", "NO_COLOR": "1"], currentDirectory: folder, timeout: 600)
                let summary = run.stdout.components(separatedBy: "SUMMARY").last ?? run.stdout
                XCTAssertEqual(
                    run.status, 0, "schemathesis found problems:\n\(Self.failures(in: report))\n\(summary.suffix(3000))\n\(run.stderr.suffix(2000))",
                    file: file, line: line)
                // Every operation of the document but the stream was selected and tested.
                func numbers(after label: String) -> [Int] {
                    guard let line = run.stdout.split(separator: "\n").first(where: { $0.contains(label) }) else { return [] }
                    return line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
                }
                let selected = numbers(after: "Selected:")
                let tested = numbers(after: "Tested:")
                XCTAssertEqual(selected.count, 2, "\(run.stdout.suffix(2000))", file: file, line: line)
                if selected.count == 2 {
                    XCTAssertEqual(selected[0], selected[1] - 2, "all operations but the two streams are selected", file: file, line: line)
                    XCTAssertGreaterThan(selected[0], 40, file: file, line: line)
                    XCTAssertEqual(tested, [selected[0]], "every selected operation was tested", file: file, line: line)
                }
                print("schemathesis: \(summary.split(separator: "\n").filter { $0.contains("generated") }.joined(separator: "; "))")

                // serve survived all of it, and stops cleanly as on SIGTERM.
                XCTAssertEqual(try server.call("GET", "/v1/health").0, 200, file: file, line: line)
            }
        }
        // `listening` returned: serve's services stopped without an error (serve's exit 0).
    }

    /// schemathesis.toml: no crash cache; and a 5xx other than 500 that the document gives for an operation (the sync's
    /// 502 when the content service fails, /hub's 503 before any bundle) is that operation's designed
    /// answer, not a server error. Read from openapi.yaml, so a status the document does not give
    /// (and every 500) still fails `not_a_server_error`.
    static func configuration() throws -> String {
        let document = try String(contentsOfFile: TestSupport.repository + "/openapi.yaml", encoding: .utf8)
        var designed: [(operation: String, statuses: [String])] = []
        for line in document.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("operationId:") {
                designed.append((trimmed.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces), []))
            } else if trimmed.count >= 6, trimmed.hasPrefix("'5"), trimmed.dropFirst(4).hasPrefix("':"), !trimmed.hasPrefix("'500'"),
                !designed.isEmpty
            {
                designed[designed.count - 1].statuses.append(String(trimmed.dropFirst().prefix(3)))
            }
        }
        // No crash cache: every run sends the same requests, whatever an earlier run found.
        return "[cache]\nenabled = false\n\n"
            + designed.filter { !$0.statuses.isEmpty }.map { entry in
                """
                [[operations]]
                include-operation-id = "\(entry.operation)"
                checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", \(entry.statuses.map { "\"\($0)\"" }.joined(separator: ", "))]

                """
            }.joined(separator: "\n")
    }

    /// Each failed check in the ndjson report: the check, the request and the answer's status and body.
    static func failures(in folder: String) -> String {
        guard let name = try? FileManager.default.contentsOfDirectory(atPath: folder).first(where: { $0.hasSuffix(".ndjson") }),
            let text = try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)
        else { return "(no report)" }
        var lines: [String] = []
        for line in text.split(separator: "\n") {
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let finished = event["ScenarioFinished"] as? [String: Any], let recorder = finished["recorder"] as? [String: Any],
                let checks = recorder["checks"] as? [String: [[String: Any]]]
            else { continue }
            let interactions = recorder["interactions"] as? [String: [String: Any]] ?? [:]
            for (caseID, results) in checks {
                for result in results where result["status"] as? String == "failure" {
                    let request = interactions[caseID]?["request"] as? [String: Any] ?? [:]
                    let response = interactions[caseID]?["response"] as? [String: Any] ?? [:]
                    var body = ""
                    if let content = response["content"] as? [String: Any], let base64 = content["$base64"] as? String,
                        let data = Data(base64Encoded: base64)
                    {
                        body = String(decoding: data.prefix(300), as: UTF8.self)
                    }
                    var requestBody = ""
                    if let sent = request["body"] as? [String: Any], let base64 = sent["$base64"] as? String, let data = Data(base64Encoded: base64) {
                        requestBody = " body " + String(decoding: data.prefix(300), as: UTF8.self)
                    }
                    lines.append(
                        "\(result["name"] ?? "?"): \(request["method"] ?? "?") \(request["uri"] ?? "?")\(requestBody) -> "
                            + "\(response["status_code"] ?? "no answer") \(body)")
                }
            }
        }
        return lines.isEmpty ? "(no failed check in the report)" : Array(Set(lines)).sorted().prefix(40).joined(separator: "\n")
    }
}
