import ArgumentParser
import HubHostKit

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Start hubhost on the manifest, load every plugin, and report what is running.",
        discussion: "Exits 1 when the manifest has problems or an enabled plugin instance did not load.")

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    struct Report: Encodable {
        var manifest: String
        var dataDirectory: String
        var logging: LogFilter
        var diagnostics: [ManifestDiagnostic]
        var plugins: [PluginRow]
        var advertiserID: AdvertiserIDDecision
        var location: Location?
    }

    func run() throws {
        let host = try manifestOption.startHost()
        defer { host.shutdown() }
        host.logger.info("hubhost started with \(host.manifest.file)")
        let report = Report(
            manifest: host.manifest.file, dataDirectory: host.manifest.dataDirectory, logging: host.manifest.logging,
            diagnostics: host.manifest.diagnostics, plugins: PluginRow.rows(host.registry),
            advertiserID: host.advertiserID(), location: host.location()?.location)
        if output.json {
            Output.json(report)
        } else {
            print("manifest:       \(report.manifest)")
            print("data directory: \(report.dataDirectory)")
            print("logging:        severity \(report.logging.severity.name), verbosity \(report.logging.verbosity.name)")
            print("advertiser ID:  \(report.advertiserID.advertiserID ?? "none (\(report.advertiserID.reason ?? ""))")")
            if let location = report.location {
                print("location:       \(LocationCommand.describe(location))")
            }
            print("")
            PluginRow.printTable(report.plugins)
            for diagnostic in report.diagnostics { Output.error("\(diagnostic)") }
        }
        let failed = report.plugins.contains { $0.state == "failed" }
        if failed || !report.diagnostics.isEmpty { throw ExitCode.failed }
    }
}
