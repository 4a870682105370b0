import ArgumentParser
import Foundation
import HubHostKit
import Hummingbird
import Logging

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run hubhost: load the plugins and serve the HTTP API on the address in plugins.yaml (server:).",
        discussion: """
        Prints the address it listens on. Posts waiting events every events.flush_interval, purges old
        posted ones, and flushes once more on SIGINT or SIGTERM before it exits.
        """)

    @OptionGroup var manifestOption: ManifestOption

    @Option(help: "Listen on this port instead of server.port (0: any free port).")
    var port: Int?

    /// The command stays synchronous (so the root command is not async: the validator's child
    /// processes run under valgrind, which does not survive an async main); the server runs on
    /// Swift concurrency's threads while this one waits.
    func run() throws {
        final class Outcome: @unchecked Sendable { var error: Error? }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let command = self
        Task.detached {
            do { try await command.serve() } catch { outcome.error = error }
            done.signal()
        }
        done.wait()
        if let error = outcome.error { throw error }
    }

    func serve() async throws {
        let host = try manifestOption.startHost()
        let engine = try host.events()
        let campaigns = try host.campaigns()
        let server = host.manifest.server
        let app = Application(
            router: HTTPAPI.router(host: host, engine: engine, campaigns: campaigns),
            configuration: .init(address: .hostname(server.host, port: port ?? server.port), serverName: "hubhost"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? 0
                print("hubhost serving on http://\(server.host):\(bound)")
                fflush(stdout)
                host.logger.info("serving on http://\(server.host):\(bound)")
            },
            logger: Logger(label: "hubhost.server", pipeline: host.pipeline))
        // Post what waits at least every flush_interval, and purge expired posted events.
        let interval = max(0.05, engine.settings.flushInterval)
        let flusher = Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
                if Task.isCancelled { break }
                _ = engine.flush()
                _ = try? engine.purge()
            }
        }
        // Ping for campaigns when a network source is configured, then again after nextPingMillis.
        let source = host.manifest.campaigns
        let pinger = Task.detached {
            guard let campaigns, source.configURL != nil || source.pingURL != nil else { return }
            let http = HTTPFetcher()
            while !Task.isCancelled {
                if campaigns.isPingDue() {
                    do { _ = try campaigns.sync(configURL: source.configURL, pingURL: source.pingURL, http: http) } catch {
                        host.logger.error("campaigns: \(error)")
                    }
                }
                try? await Task.sleep(nanoseconds: 5_000_000_000)
            }
        }
        defer { pinger.cancel() }
        // Announce the content bundle's local notifications as they become due (LocalNotificationDue).
        let hub = try host.hub()
        let announcer = Task.detached {
            while let hub, !Task.isCancelled {
                do { try hub.localNotifications.announceDue() } catch { host.logger.error("local notifications: \(error)") }
                try? await Task.sleep(nanoseconds: 1_000_000_000)
            }
        }
        defer { announcer.cancel() }
        // Content Hub delivery: the immediate initial download and recurring re-syncs.
        let deliverer = Task.detached { await HubDeliveryRoutes.run(host: host) }
        defer { deliverer.cancel() }
        do {
            try await app.runService()
        } catch {
            flusher.cancel()
            host.shutdown()
            throw error
        }
        flusher.cancel()
        _ = engine.flush()  // at shutdown
        host.shutdown()
    }
}
