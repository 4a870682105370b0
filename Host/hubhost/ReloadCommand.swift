import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost reload`: asks the running `hubhost serve` to read plugins.yaml again (POST
/// /v1/admin/reload), as `kill -HUP` does.
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Ask the running hubhost serve to read plugins.yaml again and apply the difference.",
        discussion: """
            Instances added, removed, with a changed entry or whose library file changed are loaded \
            or retired; unchanged instances keep running. logging:, event delivery, campaign \
            endpoints, hub.download_timeout and the prefetch policy change live (docs/reload.md lists \
            the keys); any other section change, data_dir, or a change to a content_provider, device_conditions, \
            download_request or user_id_generator instance needs a restart, and the reload is \
            refused. The new plugins.yaml is checked whole first: with any problem nothing changes. \
            Exits 0 when applied (or nothing was different), 1 when refused or the server cannot be \
            reached. `kill -HUP <pid of serve>` does the same.
            """)

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    @Option(help: "The server, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).")
    var url: String?

    func run() throws {
        let server = try manifestOption.server(url)
        let endpoint = server.url.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/v1/admin/reload"
        var headers = ["Content-Length": "0"]
        if let token = server.token { headers["Authorization"] = "Bearer \(token)" }
        let response: HTTPFetcher.Response
        switch HTTPFetcher().fetch("POST", endpoint, headers: headers, timeoutSeconds: 120) {
        case .success(let answer): response = answer
        case .failure(let failure):
            Output.error("reload: \(endpoint): \(failure) (is hubhost serve running there?)")
            throw ExitCode.failed
        }
        let body = String(decoding: response.body, as: UTF8.self)
        guard response.status == 200 else {
            let message = (try? JSONDecoder().decode(ErrorAnswer.self, from: response.body))?.error.message ?? body
            if output.json { print(body) } else { Output.error("reload refused (HTTP \(response.status)), nothing changed:\n\(message)") }
            throw ExitCode.failed
        }
        if output.json {
            print(body)
            return
        }
        let report = try JSONDecoder().decode(ReloadReport.self, from: response.body)
        print("\(report.outcome.rawValue) (generation \(report.generation))")
        for (label, ids) in [("added", report.added), ("removed", report.removed), ("changed", report.changed), ("settings", report.settings)]
        where !ids.isEmpty {
            print("  \(label): \(ids.joined(separator: ", "))")
        }
    }

    private struct ErrorAnswer: Decodable {
        struct Body: Decodable { var message: String }
        var error: Body
    }
}
