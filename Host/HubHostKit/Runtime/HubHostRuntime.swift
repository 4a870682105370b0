import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// The whole hubhost runtime: a HubHost and every engine's background work as swift-service-lifecycle
/// services in one ServiceGroup, with graceful shutdown. `hubhost serve` is this plus an HTTP
/// server; a Swift app embeds it the same way:
///
///     let runtime = try HubHostRuntime(host: HubHost(manifestPath: "plugins.yaml"))
///     try await runtime.run()          // until SIGINT/SIGTERM; or run(with: [myServer])
///
/// The services: plugins.yaml reloaded on SIGHUP (ReloadOnHangUp), event delivery (every events.flush_interval, and at once when cache_size events
/// wait; purge of old posted events; recovery of a dead process's holds; a last flush at
/// shutdown), campaign pings (when a config or ping URL is set), the content bundle's local
/// notifications (announced as they come due), the identity journal (a pending merge finished at
/// start and retried every minute, when identity.host is set) and Content Hub delivery (the immediate download at
/// start-up and recurring re-syncs) and content prefetch (registration, catalog syncs,
/// downloads). On shutdown the extra services (e.g. the HTTP server) stop
/// first, then the engines' services, then the host (syncs cancelled and awaited, plugins and
/// isolation workers stopped).
public final class HubHostRuntime: Sendable {
    /// The host whose engines the services run; `run` shuts it down before it returns.
    public let host: HubHost
    /// The engines' services, in start order (shut down in reverse).
    public let services: [any Service]
    /// Event delivery, woken when cache_size events wait.
    public let eventDelivery: PeriodicService

    /// Opens the engines `host`'s manifest enables and collects their services; nothing runs until
    /// `run`. Throws when an engine cannot be opened (an identity error is logged instead).
    public init(host: HubHost) throws {
        self.host = host
        let logger = host.logger
        let onError: @Sendable (String, Error) -> Void = { name, error in logger.error("\(name): \(error)") }
        // Each engine provides its own services, with its own cadence; the runtime only collects them.
        let delivery = try host.events().deliveryService(onError: onError)
        eventDelivery = delivery
        var services: [any Service] = [delivery, ReloadOnHangUp(host: host)]
        if let campaigns = try host.campaigns() {
            services.append(campaigns.pingService(settings: host.manifest.campaigns, onError: onError))
        }
        if let hub = try host.hub() {
            services += hub.services(delivery: try host.delivery(), onError: onError)
        }
        if !host.manifest.identity.host.isEmpty {
            do {
                services.append(try host.identity().journalService(onError: onError))
            } catch {
                logger.error("identity: \(error); identity requests will fail the same way")
            }
        }
        if let prefetch = try host.prefetch() {
            services.append(prefetch.roundService(onError: onError))
        }
        self.services = services
    }

    /// Runs the engines' services and `additional` ones (an HTTP server) until one of
    /// `signals` arrives or a service fails; then shuts down gracefully and shuts the host down.
    /// `leading` services start first and stop last (the trace exporter: it exports the others' last spans).
    public func run(
        with additional: [any Service] = [], leading: [any Service] = [], signals: [UnixSignal] = [.sigterm, .sigint]
    ) async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: leading + services + additional, gracefulShutdownSignals: signals,
                logger: host.logger))
        do {
            try await group.run()
        } catch {
            await shutDownHost()
            throw error
        }
        await shutDownHost()
    }

    private func shutDownHost() async {
        let host = self.host
        try? host.events().onDeliveryDue = nil  // the engine and this service held each other
        _ = try? await Task { try await BlockingPool.run { host.shutdown() } }.value  // also when cancelled
    }
}
