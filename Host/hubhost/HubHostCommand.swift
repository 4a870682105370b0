import ArgumentParser
import HubHostKit

@main
struct HubHostCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubhost",
        abstract: "An in-app engagement runtime: a small host that loads .so plugins described by YAML manifests.",
        discussion: """
        Everything is configured in one host manifest, plugins.yaml (default: ./plugins.yaml), and
        data is kept in its data directory (default: ./.hubhost/). Every command that prints data
        also takes --json.
        """,
        subcommands: [StatusCommand.self, ServeCommand.self, ManifestCommand.self, ConfigCommand.self, PluginsCommand.self, PluginCommand.self, OperatorsCommand.self, CampaignsCommand.self, MessagesCommand.self, TrackCommand.self, EventsCommand.self, OpenURLCommand.self, NotificationCommand.self, AdvertiserIDCommand.self, WorkerCommand.self,
                      LocationCommand.self, BenchCommand.self, BundleCommand.self, HubCommand.self],
        defaultSubcommand: StatusCommand.self
    )
}

/// The --manifest option shared by every command that runs the host.
struct ManifestOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The host manifest.", valueName: "path"))
    var manifest: String = "plugins.yaml"

    /// Starts the runtime, or exits with the manifest's problems when it cannot be used at all.
    func startHost() throws -> HubHost {
        do {
            return try HubHost(manifestPath: manifest)
        } catch let error as ManifestError {
            Output.error(error.description)
            throw ExitCode(2)
        }
    }
}

/// Shared --json flag.
struct JSONFlag: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}
