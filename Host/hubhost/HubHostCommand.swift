import ArgumentParser
import Foundation
import HubHostKit

@main
struct HubHostCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubhost",
        abstract: "An in-app engagement runtime: a small host that loads .so plugins described by YAML manifests.",
        discussion: """
            Everything is configured in one host manifest, plugins.yaml (default: ./plugins.yaml), and \
            data is kept in its data directory (default: ./.hubhost/). Every command that prints data \
            also takes --json.
            """,
        version: HubHostVersion.current,
        subcommands: [
            StatusCommand.self, ServeCommand.self, ManifestCommand.self, ConfigCommand.self, PluginsCommand.self, PluginCommand.self,
            OperatorsCommand.self, CampaignsCommand.self, MessagesCommand.self, TrackCommand.self, EventsCommand.self, OpenURLCommand.self,
            NotificationCommand.self, AdvertiserIDCommand.self, WorkerCommand.self,
            LocationCommand.self, BenchCommand.self, UsersCommand.self, HubCommand.self, LocalNotificationsCommand.self, BundleCommand.self,
            IdentityCommand.self, XMLAPICommand.self, PrefetchCommand.self, ReloadCommand.self, TopCommand.self
        ],
        defaultSubcommand: StatusCommand.self
    )

    /// ArgumentParser's own `main()` reports an error thrown from a subcommand's `run()` against
    /// the root command (`Usage: hubhost <subcommand>`), because only errors raised while parsing
    /// and in `validate()` carry the subcommand. A ValidationError from `run()` is reported here
    /// with the usage of the subcommand that threw it; every other error goes the usual way.
    static func main() {
        var command: ParsableCommand
        do { command = try parseAsRoot() } catch { exit(withError: error) }
        do {
            try command.run()
        } catch let error as ValidationError {
            let usage = usageString(for: type(of: command))
            // The usage starts with the command's path ("hubhost operators test <operator> ...").
            let path = usage.split(separator: " ").prefix { $0.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" } }
            Output.error(
                """
                Error: \(error.message)
                Usage: \(usage)
                  See '\(path.joined(separator: " ")) --help' for more information.
                """)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        } catch let error as ManifestError {
            // An engine refused to open because its section of plugins.yaml has problems.
            Output.error(error.description)
            Foundation.exit(ExitCode.failed.rawValue)
        } catch {
            exit(withError: error)
        }
    }
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
            throw ExitCode.unusableInput
        }
    }
}

extension ManifestOption {
    /// The running server to talk to: `url` when given, else `server:` of the manifest; with the
    /// bearer token the manifest's server settings name (nil when none is configured).
    func server(_ url: String?) throws -> (url: String, token: String?) {
        try Self.server(url, manifest: manifest)
    }

    /// `server(_:)` for the manifest at `path`.
    static func server(_ url: String?, manifest path: String) throws -> (url: String, token: String?) {
        let manifest: HostManifest
        do { manifest = try HostManifest.load(path: path) } catch {
            Output.error("\(error)")
            throw ExitCode.unusableInput
        }
        let token: String?
        do { token = try manifest.server.authToken() } catch {
            Output.error("\(error)")
            throw ExitCode.unusableInput
        }
        if let url { return (url, token) }
        guard manifest.server.port != 0 else {
            throw ValidationError("server.port in \(path) is 0 (any free port): give the server's address with --url")
        }
        return ("http://\(manifest.server.host):\(manifest.server.port)", token)
    }
}

/// Shared --json flag.
struct JSONFlag: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}
