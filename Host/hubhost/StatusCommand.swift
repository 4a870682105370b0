import ArgumentParser
import HubHostKit

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what the running hubhost serve of the manifest runs: its health, instances, reloads and delegates.",
        discussion: """
            Asks the hubhost serve of the manifest (its server: address, or --url) for its status, \
            health and instances (GET /v1/status, /v1/health, /v1/plugins), so what is shown is what \
            serve runs: its pid, its workers, the generation of its last reload, the logging in force. \
            When no serve answers there (or with --local), starts hubhost on the manifest in this \
            command instead, loads every plugin and says so. Exits 1 when the manifest has problems \
            or an enabled plugin instance failed.
            """)

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    @Option(help: "The server, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).")
    var url: String?

    @Flag(help: "Load the manifest in this command instead of asking the running serve.")
    var local = false

    struct Report: Encodable {
        /// serve: the running serve answered; local: this command loaded the manifest itself.
        var source: String
        /// The serve that answered (source serve).
        var server: String?
        var manifest: String
        var dataDirectory: String
        var logging: LogFilter
        var diagnostics: [ManifestDiagnostic]
        var plugins: [PluginRow]
        var advertiserID: AdvertiserIDDecision
        var location: Location?
        /// The process whose host this is: serve's, or this command's own when local.
        var pid: Int32
        /// Reloads applied since start (0 when local).
        var generation: Int
        var health: HostHealth

        init(source: String, server: String?, status: HostStatus, health: HostHealth, plugins: [PluginRow]) {
            self.source = source
            self.server = server
            manifest = status.manifest
            dataDirectory = status.dataDirectory
            logging = status.logging
            diagnostics = status.diagnostics
            advertiserID = status.advertiserID
            location = status.location
            pid = status.pid
            generation = status.generation
            self.health = health
            self.plugins = plugins
        }
    }

    func run() throws {
        let report: Report
        if !local, let served = askServe() {
            report = served
            if !output.json { print("\(ServeLookup.servedBy(served.server ?? "")) (pid \(report.pid)):") }
        } else {
            if !output.json { print(ServeLookup.loadedLocally(asked: local)) }
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            host.logger.info("hubhost started with \(host.manifest.file)")
            report = Report(source: "local", server: nil, status: HostStatus(host), health: HostHealth(host), plugins: PluginRow.rows(host.registry))
        }
        if output.json {
            Output.json(report)
        } else {
            printText(report)
        }
        let failed = report.plugins.contains { $0.state == "failed" }
        if failed || !report.diagnostics.isEmpty { throw ExitCode.failed }
    }

    /// The report from the running serve of the manifest; nil when none answers all three requests.
    private func askServe() -> Report? {
        guard let serve = manifestOption.runningServe(url),
            case .success(let status) = serve.get(HostStatus.self, "/v1/status"),
            case .success(let health) = serve.get(HostHealth.self, "/v1/health")
        else { return nil }
        return Report(source: "serve", server: serve.url, status: status, health: health, plugins: serve.plugins.instances.map(PluginRow.init))
    }

    private func printText(_ report: Report) {
        print("manifest:       \(report.manifest)")
        print("data directory: \(report.dataDirectory)")
        print("logging:        severity \(report.logging.severity.name), verbosity \(report.logging.verbosity.name)")
        print("generation:     \(report.generation)")
        print("health:         \(report.health.status)")
        for stuck in report.health.instances ?? [] {
            print("  stuck:        \(stuck.instance)/\(stuck.plugin) (\(stuck.kind)) for \(stuck.runningMs) ms")
        }
        for failed in report.health.failed ?? [] { print("  failed:       \(failed.instance): \(failed.reason)") }
        print("advertiser ID:  \(report.advertiserID.advertiserID ?? "none (\(report.advertiserID.reason ?? ""))")")
        if let location = report.location {
            print("location:       \(LocationCommand.describe(location))")
        }
        print("")
        PluginRow.printTable(report.plugins)
        for diagnostic in report.diagnostics { Output.error("\(diagnostic)") }
    }
}
