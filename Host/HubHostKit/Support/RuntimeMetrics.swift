import Foundation
import Metrics
import Synchronization

/// The runtime's metrics, through swift-metrics: whatever backend the front end bootstraps
/// receives them (`hubhost serve` exports Prometheus text at GET /metrics); with none
/// bootstrapped they cost a no-op call. Names follow Prometheus conventions.
package enum RuntimeMetrics {
    /// The HELP text of every metric below, by name: `GET /metrics` writes it before the metric's
    /// TYPE line (swift-metrics carries no help text), and a test holds the list to what is exported.
    package static let help: [String: String] = [
        "hubhost_events_tracked_total": "Events stored by the event engine, from any front end.",
        "hubhost_event_batches_total":
            "Batches of tracked events the event engine stored (POST /v1/events stores concurrent requests' events as one): events tracked over batches is the mean batch size.",
        "hubhost_events_delivered_total": "Events a delivery attempt handled, by outcome (posted, retrying, failed).",
        "hubhost_plugin_call_duration_seconds":
            "Time one plugin call the host made with a deadline took (augmentations, sinks, and the kinds requests wait on), by instance and kind.",
        "hubhost_reloads_total": "Reloads of plugins.yaml, by outcome (applied, unchanged, refused).",
        "hubhost_plugin_calls_total": "Plugin calls the host made with a deadline, by instance.",
        "hubhost_plugin_call_errors_total": "Plugin calls that failed, by instance and kind of failure (error, timeout, crash).",
        "hubhost_plugin_package_info":
            "1 for each plugin instance installed from a package, labelled with its plugin, version, signer (or unsigned) and verification (verified, failed).",
        "hubhost_plugin_up": "1 while a plugin instance takes calls (loaded; its worker running or to be restarted), else 0, by instance.",
        "hubhost_plugin_state": "1 for the state a plugin instance is in (loaded, restarting, failed, disabled), 0 for the others.",
        "hubhost_plugin_ejections_total": "Times a plugin instance was ejected (not called for a while) after failing calls in a row, by instance.",
        "hubhost_worker_restarts_total": "Restarts of an isolated plugin instance's worker process, by instance.",
        "hubhost_hub_page_views_total": "Content Hub page views, by page (hub, channel, article).",
        "hubhost_campaign_evaluations_total": "Events the campaign engine evaluated against its campaigns.",
        "hubhost_messages_shown_total": "In-app messages shown (impressions).",
        "hubhost_plugin_stuck": "1 while a plugin instance of a kind is stuck in a call past its deadline, else 0.",
        "hubhost_plugins_stuck": "Plugin instances stuck in a call past its deadline.",
        "hubhost_events": "Events in the store, by status.",
        "hubhost_sink_backlog_events": "Stored events waiting for delivery (NOT_POSTED) through the sink in use, by sink."
    ].merging(PluginResourceMetrics.help) { first, _ in first }

    /// Events stored by the engine (any front end), in one commit.
    static func eventsTracked(_ count: Int) {
        let counters = batchCounters
        counters.tracked.increment(by: count)
        counters.batches.increment()
    }

    /// The counters each stored batch increments, kept rather than made per batch (making one
    /// looks its label up in the backend's registry and checks the name: at a group commit's few
    /// events per batch, a tenth of the writer's own instructions), made again when a backend is
    /// bootstrapped after them (`generation`).
    private struct BatchCounters {
        let generation: Int
        let tracked: Counter
        let batches: Counter
        let campaignEvaluations: Counter

        init(generation: Int) {
            self.generation = generation
            tracked = Counter(label: "hubhost_events_tracked_total")
            batches = Counter(label: "hubhost_event_batches_total")
            campaignEvaluations = Counter(label: "hubhost_campaign_evaluations_total")
        }
    }
    private static let keptBatchCounters = Mutex<BatchCounters?>(nil)

    private static var batchCounters: BatchCounters {
        let current = generation
        return keptBatchCounters.withLock { kept in
            if let counters = kept, counters.generation == current { return counters }
            let made = BatchCounters(generation: current)
            kept = made
            return made
        }
    }

    /// What a delivery attempt did to events: posted, retrying or failed.
    static func eventsDelivered(_ outcome: String, _ count: Int) {
        guard count > 0 else { return }
        Counter(label: "hubhost_events_delivered_total", dimensions: [("outcome", outcome)]).increment(by: count)
    }

    /// The upper bounds of `hubhost_plugin_call_duration_seconds`'s buckets, in seconds: from the
    /// microseconds of an in-process call to a sink's seconds-long post (a backend's defaults start
    /// at 5 ms, where every in-process call would fall into the first bucket).
    package static let callDurationBuckets: [Double] = [
        0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30
    ]

    /// The timer of one instance's plugin call durations (`hubhost_plugin_call_duration_seconds`):
    /// PluginCallTracker keeps it (`CallMetrics`) rather than making one per call.
    static func pluginCallDurationTimer(instance: String, kind: String) -> Timer {
        Timer(label: "hubhost_plugin_call_duration_seconds", dimensions: [("instance", instance), ("kind", kind)])
    }

    /// Bumped each time a front end bootstraps a metrics backend (`backendChanged()`): a metric kept
    /// from before it was made by the backend before (with none bootstrapped, the no-op one) and
    /// is made again.
    private static let backendGeneration = Atomic<Int>(0)

    /// The current backend's generation: metrics a caller keeps are good while it is unchanged.
    package static var generation: Int { backendGeneration.load(ordering: .acquiring) }

    /// Says that a metrics backend was just bootstrapped (`MetricsSystem.bootstrap`): metrics kept
    /// since before it are made again through it. The front end that bootstraps calls this.
    package static func backendChanged() {
        backendGeneration.add(1, ordering: .releasing)
    }

    /// One augmentation call of a plugin instance that failed.
    static func augmentationFailed(instance: String) {
        pluginCallError(instance: instance, kind: "error")
    }

    /// One reload of plugins.yaml by its outcome (applied, unchanged, refused).
    static func reload(_ outcome: String) {
        Counter(label: "hubhost_reloads_total", dimensions: [("outcome", outcome)]).increment()
    }

    /// The counter of one instance's calls that the host made with a deadline
    /// (`hubhost_plugin_calls_total`): PluginCallTracker keeps it (`CallMetrics`).
    static func pluginCallCounter(instance: String) -> Counter {
        Counter(label: "hubhost_plugin_calls_total", dimensions: [("instance", instance)])
    }

    /// The kinds of failure `hubhost_plugin_call_errors_total` counts.
    static let callErrorKinds = ["error", "timeout", "crash"]

    /// A plugin call that failed (`error`), timed out (`timeout`) or crashed its worker (`crash`).
    static func pluginCallError(instance: String, kind: String) {
        Counter(label: "hubhost_plugin_call_errors_total", dimensions: [("instance", instance), ("kind", kind)]).increment()
    }

    /// A plugin instance was ejected after failing calls in a row (PluginEjection).
    static func pluginEjected(instance: String) {
        Counter(label: "hubhost_plugin_ejections_total", dimensions: [("instance", instance)]).increment()
    }

    /// An isolation worker was restarted.
    static func workerRestarted(instance: String) {
        Counter(label: "hubhost_worker_restarts_total", dimensions: [("instance", instance)]).increment()
    }

    /// Content Hub page views (hub, channel or article): the page-view recorder counts a batch at once.
    static func hubPageViews(_ page: String, _ count: Int = 1) {
        guard count > 0 else { return }
        Counter(label: "hubhost_hub_page_views_total", dimensions: [("page", page)]).increment(by: count)
    }

    /// Events the campaign engine evaluated against its campaigns.
    static func campaignEvaluations(_ count: Int) {
        batchCounters.campaignEvaluations.increment(by: count)
    }

    /// An in-app message shown (an impression).
    package static func messageShown() {
        Counter(label: "hubhost_messages_shown_total").increment()
    }

    /// The plugins stuck in a call past its deadline, as a gauge per instance and kind (1 while
    /// stuck, back to 0 once its call returned; set when metrics are read) beside their count.
    package static func recordStuckPlugins(_ stuck: [StuckPlugin]) {
        let now = Set(stuck.map { StuckKey(instance: $0.instance, kind: $0.kind) })
        let before = stuckReported.withLock { reported in
            defer { reported.formUnion(now) }
            return reported
        }
        for key in before.union(now) {
            Gauge(label: "hubhost_plugin_stuck", dimensions: [("instance", key.instance), ("kind", key.kind)])
                .record(now.contains(key) ? 1 : 0)
        }
        Gauge(label: "hubhost_plugins_stuck").record(now.count)
    }

    private struct StuckKey: Hashable, Sendable {
        var instance: String
        var kind: String
    }
    /// Every (instance, kind) ever reported stuck, so one that recovered is set back to 0.
    private static let stuckReported = Mutex<Set<StuckKey>>([])

    /// Every configured instance's state, as a gauge set when metrics are read: `hubhost_plugin_up`
    /// and one `hubhost_plugin_state` series per state. Its call counters are made too (at 0), so
    /// an instance shows before its first call. An instance a reload removed loses its gauges.
    package static func recordPluginStates(_ registry: PluginRegistry) {
        var states: [String: String] = [:]
        for entry in registry.entries {
            var state = entry.state.name
            if state == "loaded", case .some(.restarting) = entry.worker?.currentState { state = "restarting" }
            states[entry.id] = state
        }
        let gone = instancesReported.withLock { reported in
            defer { reported = Set(states.keys) }
            return reported.subtracting(states.keys)
        }
        for instance in gone {
            Gauge(label: "hubhost_plugin_up", dimensions: [("instance", instance)]).destroy()
            for state in pluginStates { Gauge(label: "hubhost_plugin_state", dimensions: [("instance", instance), ("state", state)]).destroy() }
        }
        recordPackages(registry.entries)
        PluginResourceMetrics.record(registry.entries)
        for (instance, current) in states {
            Gauge(label: "hubhost_plugin_up", dimensions: [("instance", instance)]).record(current == "loaded" || current == "restarting" ? 1 : 0)
            for state in pluginStates {
                Gauge(label: "hubhost_plugin_state", dimensions: [("instance", instance), ("state", state)]).record(state == current ? 1 : 0)
            }
            Counter(label: "hubhost_plugin_calls_total", dimensions: [("instance", instance)]).increment(by: 0)
            for kind in callErrorKinds {
                Counter(label: "hubhost_plugin_call_errors_total", dimensions: [("instance", instance), ("kind", kind)]).increment(by: 0)
            }
        }
    }

    /// `hubhost_plugin_package_info` for the instances installed from a package; the series of an
    /// instance whose labels changed (an upgrade) or that is gone is removed.
    static func recordPackages(_ entries: [PluginRegistry.Entry]) {
        var current: [String: [(String, String)]] = [:]
        for entry in entries {
            guard let package = PluginInstanceList.Package(entry) else { continue }
            current[entry.id] = [
                ("instance", entry.id), ("plugin", entry.configuration.installed?.lock.id ?? ""), ("version", package.version),
                ("signer", package.signer), ("verification", package.verification)
            ]
        }
        let stale = packagesReported.withLock { reported in
            defer { reported = current }
            return reported.filter { instance, labels in current[instance].map { $0.elementsEqual(labels, by: ==) } != true }
        }
        for (_, labels) in stale { Gauge(label: "hubhost_plugin_package_info", dimensions: labels).destroy() }
        for (_, labels) in current { Gauge(label: "hubhost_plugin_package_info", dimensions: labels).record(1) }
    }
    /// The labels of each instance's package series last reported.
    private static let packagesReported = Mutex<[String: [(String, String)]]>([:])

    /// The states `hubhost_plugin_state` has a series for: `PluginRegistry.State`'s, and
    /// restarting (loaded, its isolated worker to be started again at the next call).
    static let pluginStates = ["loaded", "restarting", "failed", "disabled"]
    /// The instances whose state was last reported, so one a reload removed loses its gauges.
    private static let instancesReported = Mutex<Set<String>>([])

    /// The stored events by status, as a gauge per status (set when metrics are read).
    package static func recordStoredEvents(_ counts: [EventStatus: Int]) {
        for (status, count) in counts {
            Gauge(label: "hubhost_events", dimensions: [("status", status.rawValue)]).record(count)
        }
    }

    /// `hubhost_sink_backlog_events{sink}`: the events waiting for `sink` (NOT_POSTED), set when
    /// metrics are read; the series of a sink a reload replaced is removed.
    package static func recordSinkBacklog(sink: String, events: Int) {
        let stale = sinkReported.withLock { reported in
            defer { reported = sink }
            return reported == sink ? nil : reported
        }
        if let stale { Gauge(label: "hubhost_sink_backlog_events", dimensions: [("sink", stale)]).destroy() }
        Gauge(label: "hubhost_sink_backlog_events", dimensions: [("sink", sink)]).record(events)
    }
    /// The sink whose backlog was last reported.
    private static let sinkReported = Mutex<String?>(nil)
}
