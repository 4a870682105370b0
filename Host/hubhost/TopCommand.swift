import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost top`: each plugin instance of the running serve, refreshed: its state and how many
/// calls, errors, timeouts, worker restarts and ejections it had per second since the last sample,
/// from the serve's own /metrics and GET /v1/plugins (nothing is counted twice, nothing is kept).
struct TopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Watch each plugin instance of the running serve: state, calls, errors and timeouts per second.",
        discussion: """
            Samples the serve of the manifest (its server: address, or --url) every --interval \
            seconds: GET /metrics for each instance's counters (hubhost_plugin_calls_total, \
            hubhost_plugin_call_errors_total by kind, hubhost_worker_restarts_total, \
            hubhost_plugin_ejections_total) and its call durations' 99th percentile \
            (hubhost_plugin_call_duration_seconds) and GET /v1/plugins for its state, and prints the rates \
            since the previous sample, busiest first; then the sink events are delivered through, with \
            its backlog (hubhost_sink_backlog_events) and its deliveries per second by outcome. Runs until interrupted, or --count refreshes. \
            Exits 1 when no serve of the manifest answers.
            """)

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    @Option(help: "The server, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).")
    var url: String?

    @Option(help: "Seconds between samples (0.2 to 3600).")
    var interval: Double = 2

    @Option(help: "Refreshes to print before exiting (0: until interrupted).")
    var count: Int = 0

    func validate() throws {
        guard interval.isFinite, interval >= 0.2, interval <= 3600 else { throw ValidationError("--interval must be 0.2 to 3600 seconds") }
        guard count >= 0, count <= 1_000_000 else { throw ValidationError("--count must be 0 to 1000000") }
    }

    /// One instance's line.
    struct Row: Encodable, Equatable {
        var id: String
        var state: String
        var isolation: String
        var callsPerSecond: Double
        var errorsPerSecond: Double
        var timeoutsPerSecond: Double
        var crashesPerSecond: Double
        /// The 99th percentile of its calls' durations since the last sample, in milliseconds (the
        /// upper bound of the histogram bucket it falls in); nil when it made no calls.
        var p99Milliseconds: Double?
        var restarts: Double
        var ejections: Double
        var reason: String?
    }

    /// The sink events are delivered through: what waits for it, and what its deliveries did per
    /// second since the last sample.
    struct SinkRow: Encodable, Equatable {
        var sink: String
        /// Stored events not yet delivered (NOT_POSTED).
        var backlog: Double
        var postedPerSecond: Double
        var retryingPerSecond: Double
        var failedPerSecond: Double
    }

    struct Refresh: Encodable {
        var server: String
        var seconds: Double
        var generation: Int
        var instances: [Row]
        /// Nil when the serve's /metrics names no sink (before the first event engine started).
        var sink: SinkRow?
    }

    func run() throws {
        guard let serve = manifestOption.runningServe(url) else {
            Output.error("top: no hubhost serve of this manifest answers (start one with hubhost serve, or give --url)")
            throw ExitCode.failed
        }
        var previous = try sample(serve)
        var printed = 0
        while count == 0 || printed < count {
            Thread.sleep(forTimeInterval: interval)
            let next = try sample(serve)
            let refresh = Self.refresh(from: previous, to: next, server: serve.url)
            if output.json {
                Output.json(refresh)
            } else {
                print(
                    "\(ServeLookup.servedBy(serve.url)), generation \(refresh.generation), per second over \(String(format: "%.1f", refresh.seconds)) s:"
                )
                Output.table(
                    ["ID", "STATE", "ISOLATION", "CALLS/S", "P99", "ERRORS/S", "TIMEOUTS/S", "CRASHES/S", "RESTARTS", "EJECTIONS"],
                    refresh.instances.map { row in
                        [
                            row.id, row.reason.map { "\(row.state): \($0.prefix(60))" } ?? row.state, row.isolation,
                            Self.rate(row.callsPerSecond), row.p99Milliseconds.map(Self.milliseconds) ?? "-",
                            Self.rate(row.errorsPerSecond), Self.rate(row.timeoutsPerSecond),
                            Self.rate(row.crashesPerSecond), "\(Int(row.restarts))", "\(Int(row.ejections))"
                        ]
                    })
                if let sink = refresh.sink {
                    print(
                        "sink \(sink.sink): backlog \(Int(sink.backlog)) events; posted \(Self.rate(sink.postedPerSecond))/s, retrying \(Self.rate(sink.retryingPerSecond))/s, failed \(Self.rate(sink.failedPerSecond))/s"
                    )
                }
                print("")
            }
            previous = next
            printed += 1
        }
    }

    /// What one sample read: when, the instances, and each counter series by name and labels.
    struct Sample {
        var atNs: UInt64
        var plugins: PluginInstanceList
        var counters: [String: Double]
    }

    private func sample(_ serve: RunningServe) throws -> Sample {
        let plugins: PluginInstanceList
        switch serve.get(PluginInstanceList.self, "/v1/plugins") {
        case .success(let list): plugins = list
        case .failure(let failure):
            Output.error("top: \(failure)")
            throw ExitCode.failed
        }
        var headers: [String: String] = [:]
        if let token = serve.token { headers["Authorization"] = "Bearer \(token)" }
        guard case .success(let response) = HTTPFetcher().fetch("GET", serve.url + "/metrics", headers: headers, timeoutSeconds: 10),
            response.status == 200
        else {
            Output.error("top: the serve at \(serve.url) did not answer GET /metrics")
            throw ExitCode.failed
        }
        return Sample(atNs: Clock.monotonicNs(), plugins: plugins, counters: PrometheusText.samples(String(decoding: response.body, as: UTF8.self)))
    }

    /// The rates between two samples, busiest instance first.
    static func refresh(from before: Sample, to after: Sample, server: String) -> Refresh {
        let seconds = max(Double(after.atNs &- before.atNs) / 1e9, 0.001)
        func rate(_ key: String) -> Double { max((after.counters[key] ?? 0) - (before.counters[key] ?? 0), 0) / seconds }
        let rows = after.plugins.instances.map { instance in
            let id = instance.id
            return Row(
                id: id, state: instance.state, isolation: instance.worker.map { "process: \($0)" } ?? instance.isolation,
                callsPerSecond: rate(PrometheusText.key("hubhost_plugin_calls_total", ["instance": id])),
                errorsPerSecond: rate(PrometheusText.key("hubhost_plugin_call_errors_total", ["instance": id, "kind": "error"])),
                timeoutsPerSecond: rate(PrometheusText.key("hubhost_plugin_call_errors_total", ["instance": id, "kind": "timeout"])),
                crashesPerSecond: rate(PrometheusText.key("hubhost_plugin_call_errors_total", ["instance": id, "kind": "crash"])),
                p99Milliseconds: PrometheusText.quantile(
                    0.99, of: "hubhost_plugin_call_duration_seconds", instance: id, before: before.counters, after: after.counters
                ).map { $0 * 1000 },
                restarts: after.counters[PrometheusText.key("hubhost_worker_restarts_total", ["instance": id])] ?? 0,
                ejections: after.counters[PrometheusText.key("hubhost_plugin_ejections_total", ["instance": id])] ?? 0, reason: instance.reason)
        }
        let backlogPrefix = "hubhost_sink_backlog_events{sink="
        let sink = after.counters.first { $0.key.hasPrefix(backlogPrefix) }.map { key, backlog in
            SinkRow(
                sink: String(key.dropFirst(backlogPrefix.count).dropLast()), backlog: backlog,
                postedPerSecond: rate(PrometheusText.key("hubhost_events_delivered_total", ["outcome": "posted"])),
                retryingPerSecond: rate(PrometheusText.key("hubhost_events_delivered_total", ["outcome": "retrying"])),
                failedPerSecond: rate(PrometheusText.key("hubhost_events_delivered_total", ["outcome": "failed"])))
        }
        return Refresh(
            server: server, seconds: seconds, generation: after.plugins.generation,
            instances: rows.sorted { ($0.callsPerSecond, $1.id) > ($1.callsPerSecond, $0.id) }, sink: sink)
    }

    static func milliseconds(_ value: Double) -> String {
        guard value.isFinite else { return "slow" }
        return value < 1 ? String(format: "%.2fms", value) : String(format: "%.0fms", value)
    }

    static func rate(_ value: Double) -> String { value == 0 ? "0" : String(format: value < 10 ? "%.2f" : "%.0f", value) }
}
