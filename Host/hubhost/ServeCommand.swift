import ArgumentParser
import Foundation
import HubHostKit
import HubHostServer

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run hubhost: load the plugins, run the engines' background work and serve the HTTP API on the address in plugins.yaml (server:).",
        discussion: """
            Prints the address it listens on. Posts waiting events every events.flush_interval (and at once when \
            cache_size events wait), purges old posted ones, pings for campaigns, announces local notifications and \
            syncs Content Hub content. On SIGINT or SIGTERM it stops accepting requests, flushes once more and exits.
            """)

    @OptionGroup var manifestOption: ManifestOption

    @Option(parsing: .unconditional, help: "Listen on this port instead of server.port (0: any free port).")
    var port: Int?

    @Option(help: ArgumentHelp("The content prefetch licence key; wins over prefetch.license and HUBHOST_PREFETCH_CONFIG.", valueName: "key"))
    var license: String?

    func validate() throws {
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0 to 65535 (0: any free port), not \(port)") }
    }

    /// The runtime runs on Swift concurrency's threads while this one waits (runAsync: the command
    /// stays synchronous).
    func run() throws {
        let command = self
        try runAsync {
            let host = try command.manifestOption.startHost()
            ProcessLogging.route(to: host.pipeline)  // libraries' swift-log records too
            // The licence counts on the call that opens the engine: open it before the runtime does.
            if let license = command.license { _ = try host.prefetch(license: license) }
            // tracing.endpoint set: the process's tracer, before the server's routes are made (they
            // get a span each), and its exporter as the first service, so it stops last.
            let tracing = try HubTracing.bootstrap(host.manifest.tracing, logger: host.logger)
            let runtime = try HubHostRuntime(host: host)
            try await runtime.run(
                with: [
                    try HTTPServer.application(runtime: runtime, port: command.port),
                    PrefetchHLSAnnouncement(host: host)
                ], leading: tracing.map { [$0] } ?? [])
        }
    }
}
