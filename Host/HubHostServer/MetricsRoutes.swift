import Foundation
import HubHostKit
import Hummingbird
import Metrics
import Prometheus

/// `GET /metrics`: the runtime's metrics in Prometheus text format (RuntimeMetrics: events by
/// status, tracked and delivered events, plugin call latency by instance and kind, plugin calls, call errors and
/// timeouts and state per instance, worker restarts, plugins stuck in a call, hub page views, campaign evaluations and messages shown) and the HTTP
/// requests by route (RequestMetricsMiddleware: the metrics of Hummingbird's MetricsMiddleware).
enum MetricsRoutes {
    /// The process's one registry: swift-metrics can be bootstrapped once per process.
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["hubhost_plugin_call_duration_seconds"] = RuntimeMetrics.callDurationBuckets.map {
            .nanoseconds(Int64(($0 * 1e9).rounded()))
        }
        MetricsSystem.bootstrap(factory)
        RuntimeMetrics.backendChanged()
        return registry
    }()

    static func add(to router: Router<BasicRequestContext>, host: HubHost, engine: EventEngine) {
        _ = registry
        router.get("/metrics") { _, _ in
            let counts = try await HTTPAPI.blocking { try engine.store.stats() }
            RuntimeMetrics.recordStoredEvents(counts)
            RuntimeMetrics.recordSinkBacklog(sink: engine.settings.sinkName, events: counts[.notPosted] ?? 0)
            RuntimeMetrics.recordStuckPlugins(host.stuckPlugins)
            RuntimeMetrics.recordPluginStates(host.registry)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: withHelp(registry.emitToBuffer()))))
        }
    }

    /// Every metric's HELP text, by name.
    static var help: [String: String] {
        RuntimeMetrics.help.merging(RequestMetricsMiddleware<BasicRequestContext>.help) { first, _ in first }
    }

    /// The registry's text with a `# HELP` line before each `# TYPE` line (swift-metrics, which the
    /// runtime records through, carries no help text); a metric with no text in `help` gets none.
    static func withHelp(_ text: [UInt8]) -> [UInt8] {
        let help = Self.help
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 4096)
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.starts(with: Array("# TYPE ".utf8)) {
                let name = String(decoding: line.dropFirst(7).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let text = help[name] { out.append(contentsOf: Array("# HELP \(name) \(text)\n".utf8)) }
            }
            out.append(contentsOf: line)
            out.append(UInt8(ascii: "\n"))
        }
        if text.last != UInt8(ascii: "\n"), !out.isEmpty { out.removeLast() }
        return out
    }
}
