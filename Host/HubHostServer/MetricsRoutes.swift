import Foundation
import HubHostKit
import Hummingbird
import Metrics
import Prometheus

/// `GET /metrics`: the runtime's metrics in Prometheus text format (RuntimeMetrics: events by
/// status, tracked and delivered events, augmentation latency and plugin call errors per instance,
/// worker restarts, plugins stuck in a call, hub page views, campaign evaluations and messages shown) and the HTTP
/// requests by route (RequestMetricsMiddleware: the metrics of Hummingbird's MetricsMiddleware).
enum MetricsRoutes {
    /// The process's one registry: swift-metrics can be bootstrapped once per process.
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    static func add(to router: Router<BasicRequestContext>, host: HubHost, engine: EventEngine) {
        _ = registry
        router.get("/metrics") { _, _ in
            let counts = try await HTTPAPI.blocking { try engine.store.stats() }
            RuntimeMetrics.recordStoredEvents(counts)
            RuntimeMetrics.recordStuckPlugins(host.stuckPlugins)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }
}
