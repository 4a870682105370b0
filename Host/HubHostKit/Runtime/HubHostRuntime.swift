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
/// The services: event delivery (every events.flush_interval, and at once when cache_size events
/// wait; purge of old posted events; recovery of a dead process's holds; a last flush at
/// shutdown), campaign pings (when a config or ping URL is set), the content bundle's local
/// notifications (announced as they come due), the identity journal (a pending merge finished at
/// start and retried every minute, when identity.host is set) and Content Hub delivery (the immediate download at
/// start-up and recurring re-syncs) and content prefetch (registration, catalog syncs,
/// downloads). On shutdown the extra services (e.g. the HTTP server) stop
/// first, then the engines' services, then the host (syncs cancelled and awaited, plugins and
/// isolation workers stopped).
public final class HubHostRuntime: Sendable {
    public let host: HubHost
    /// The engines' services, in start order (shut down in reverse).
    public let services: [any Service]
    /// Event delivery, woken when cache_size events wait.
    public let eventDelivery: PeriodicService

    public init(host: HubHost) throws {
        self.host = host
        let logger = host.logger
        let onError: @Sendable (String, Error) -> Void = { name, error in logger.error("\(name): \(error)") }
        let events = try host.events()
        let delivery = PeriodicService(name: "event delivery", every: events.settings.flushInterval,
                                        final: { _ = events.flush() }, onError: onError) {
            _ = try events.expireStaleHolds()
            _ = events.flush()
            _ = try events.purge()
        }
        events.onDeliveryDue = { delivery.wake() }
        eventDelivery = delivery
        var services: [any Service] = [delivery]
        let source = host.manifest.campaigns
        if let campaigns = try host.campaigns(), source.configURL != nil || source.pingURL != nil {
            let http = HTTPFetcher()
            // The tick is 5 s; the service's nextPingMillis decides when a ping is due.
            services.append(PeriodicService(name: "campaign pings", every: 5, first: {
                _ = try campaigns.sync(configURL: source.configURL, pingURL: source.pingURL, http: http)
            }, onError: onError) {
                guard campaigns.isPingDue() else { return }
                _ = try campaigns.sync(configURL: source.configURL, pingURL: source.pingURL, http: http)
            })
        }
        if let hub = try host.hub() {
            services.append(PeriodicService(name: "local notifications", every: 1, onError: onError) {
                try hub.localNotifications.announceDue()
            })
            if let delivery = try host.delivery() {
                services.append(PeriodicService(name: "content delivery", every: 1, first: { delivery.serveStartUp() }, onError: onError) {
                    if delivery.isRecurringSyncDue { _ = try delivery.sync() }
                })
            }
        }
        if !host.manifest.identity.host.isEmpty {
            // A merge a crash or a failure left in the journal is finished at start, then retried every minute.
            do {
                let identity = try host.identity()
                services.append(PeriodicService(name: "identity journal", every: 60, first: { _ = try identity.resumePendingMerge() },
                                                onError: onError) { _ = try identity.resumePendingMerge() })
            } catch {
                logger.error("identity: \(error); identity requests will fail the same way")
            }
        }
        if let prefetch = try host.prefetch() {
            // Registration with backoff, catalog syncs, policy and the download queue.
            services.append(PeriodicService(name: "prefetch", every: 1, onError: onError) { try prefetch.round() })
        }
        self.services = services
    }

    /// Runs the engines' services and `additional` ones (an HTTP server) until one of
    /// `signals` arrives or a service fails; then shuts down gracefully and shuts the host down.
    public func run(with additional: [any Service] = [], signals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        let group = ServiceGroup(configuration: .init(services: services + additional, gracefulShutdownSignals: signals,
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
