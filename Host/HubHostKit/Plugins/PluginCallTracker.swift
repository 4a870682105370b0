import Foundation
import Metrics
import Synchronization

/// The calls in flight into one plugin of one instance, each with the deadline its caller gave it.
/// A call past its deadline that has not returned makes the plugin *stuck*: an in-process call
/// cannot be stopped, so callers skip a stuck plugin at once (as if its call had timed out) instead
/// of starting more calls that would hang too, until the overdue call returns; then it is healthy
/// again. `GET /v1/health`, `hubhost status` and /metrics report stuck instances.
/// Sendable: the calls in flight, the last token and the kept metrics live in a Mutex; the rest are `let` strings.
package final class PluginCallTracker: Sendable {
    private struct Call {
        var token: UInt64
        var startedNs: UInt64
        var deadlineNs: UInt64
        /// Counted as a timeout already (once per call, whenever it is first seen overdue).
        var timeoutCounted = false
    }

    /// The instance's call counter and duration timer, kept rather than made per call (making one
    /// looks it up in the backend's registry by label and dimensions: most of the host's cost of a
    /// short call), and made again when a backend is bootstrapped after them.
    private struct CallMetrics {
        let generation: Int
        let calls: Counter
        let duration: Timer

        init(instance: String, kind: String) {
            generation = RuntimeMetrics.generation
            calls = RuntimeMetrics.pluginCallCounter(instance: instance)
            duration = RuntimeMetrics.pluginCallDurationTimer(instance: instance, kind: kind)
        }
    }

    private struct State {
        /// In no order. An array, not a dictionary by token: a plugin has a few calls in flight
        /// at most (one per calling thread), and hashing each token in and out was most of the
        /// tracker's cost of a call.
        var inFlight: [Call] = []
        var nextToken: UInt64 = 0
        var metrics: CallMetrics?

        /// Makes the metrics to record a call of `instance` in (again) when missing or stale; false
        /// for a tracker of no instance. The caller records in `metrics` under the lock: taking the
        /// counter and timer out of it was a retain and a release of each per call.
        mutating func refreshMetrics(instance: String?, kind: String) -> Bool {
            guard let instance else { return false }
            if metrics?.generation != RuntimeMetrics.generation { metrics = CallMetrics(instance: instance, kind: kind) }
            return true
        }
    }
    private let state = Mutex(State())
    /// The instance whose calls these are, for its calls and timeouts in /metrics; nil for a
    /// tracker that spans instances (the campaign evaluation), which is not counted per instance.
    private let instance: String?
    /// The plugin's kind, the `kind` label of its call durations in /metrics.
    private let kind: String

    package init(instance: String? = nil, kind: String = "") {
        self.instance = instance
        self.kind = kind
    }

    /// Records a call starting now that should end within `deadlineSeconds`; returns its token.
    package func begin(deadlineSeconds: Double) -> UInt64 {
        let now = Clock.monotonicNs()
        let deadline = now &+ SafeTime.durationNs(deadlineSeconds)
        return state.withLock { [instance, kind] state -> UInt64 in
            state.nextToken &+= 1
            let token = state.nextToken
            state.inFlight.append(Call(token: token, startedNs: now, deadlineNs: max(deadline, now)))
            if state.refreshMetrics(instance: instance, kind: kind) { state.metrics?.calls.increment() }
            return token
        }
    }

    /// Records that the call of `token` returned; true when it returned past its deadline. One that
    /// returned late, and was not seen overdue before, counts as a timeout now.
    @discardableResult
    package func end(_ token: UInt64) -> Bool {
        let now = Clock.monotonicNs()
        let (late, lateUncounted) = state.withLock { [instance, kind] state -> (Bool, Bool) in
            guard let index = state.inFlight.firstIndex(where: { $0.token == token }) else { return (false, false) }
            state.inFlight.swapAt(index, state.inFlight.count - 1)
            let call = state.inFlight.removeLast()  // keeps the array's capacity for the next call
            if state.refreshMetrics(instance: instance, kind: kind) {
                state.metrics?.duration.recordNanoseconds(Int64(clamping: now &- call.startedNs))
            }
            return (call.deadlineNs < now, call.deadlineNs < now && !call.timeoutCounted)
        }
        if lateUncounted { countTimeouts(1) }
        return late
    }

    /// When the oldest call past its deadline started (monotonic ns), or nil when none is overdue.
    /// An overdue call is counted as a timeout the first time it is seen here (a call that never
    /// returns is counted too, as soon as anyone asks whether the plugin is stuck).
    package var stuckSinceNs: UInt64? {
        let (since, newlyOverdue): (UInt64?, Int) = state.withLock { state in
            // Asked before every call: with none in flight (the usual answer) there is no clock to read.
            guard !state.inFlight.isEmpty else { return (nil, 0) }
            let now = Clock.monotonicNs()
            var since: UInt64?
            var newlyOverdue = 0
            for index in state.inFlight.indices where state.inFlight[index].deadlineNs < now {
                since = min(since ?? state.inFlight[index].startedNs, state.inFlight[index].startedNs)
                if !state.inFlight[index].timeoutCounted {
                    state.inFlight[index].timeoutCounted = true
                    newlyOverdue += 1
                }
            }
            return (since, newlyOverdue)
        }
        if newlyOverdue > 0 { countTimeouts(newlyOverdue) }
        return since
    }

    /// True while a call is past its deadline and has not returned.
    package var isStuck: Bool { stuckSinceNs != nil }

    /// The backend generation (`RuntimeMetrics.generation`) its kept metrics were made in; nil
    /// before its first call, and for a tracker of no instance.
    package var metricsGeneration: Int? { state.withLock { $0.metrics?.generation } }

    /// Calls in flight now (overdue or not).
    package var callsInFlight: Int { state.withLock { $0.inFlight.count } }

    private func countTimeouts(_ count: Int) {
        guard let instance else { return }
        for _ in 0..<count { RuntimeMetrics.pluginCallError(instance: instance, kind: "timeout") }
    }
}

/// A plugin that is stuck, as health reports it.
public struct StuckPlugin: Codable, Equatable, Sendable {
    /// The id of its instance in plugins.yaml; "campaigns" for a stuck campaign evaluation.
    public var instance: String
    /// The plugin's id in its library (an `exports:` id); "trigger operators" for a stuck campaign evaluation.
    public var plugin: String
    /// The plugin's kind as plugin.yaml spells it (`PluginKind.rawValue`, e.g. "location").
    public var kind: String
    /// How long its overdue call has been running, in milliseconds.
    public var runningMs: Int64
}

/// An instance that failed while serving (its worker given up after repeated crashes), as
/// `GET /v1/health` names it.
public struct FailedInstance: Codable, Equatable, Sendable {
    /// The instance's id in plugins.yaml.
    public var instance: String
    /// Why, in full: its worker given up, after how many crashes, and the last one's cause (`PluginLoadError.workerGivenUp`).
    public var reason: String
}

extension PluginRegistry {
    /// Every instance that loaded and has failed since (a worker given up), in plugins.yaml order.
    public var failedWhileServing: [FailedInstance] {
        entries.compactMap { entry in
            guard entry.loadState == .loaded, case .failed(let error) = entry.state else { return nil }
            return FailedInstance(instance: entry.id, reason: error.description)
        }
    }

    /// Every loaded plugin with a call past its deadline, in plugins.yaml order.
    public var stuckPlugins: [StuckPlugin] {
        let now = Clock.monotonicNs()
        return PluginKind.allCases.flatMap { plugins(of: $0) }.compactMap { handle in
            guard let since = handle.calls.stuckSinceNs else { return nil }
            return StuckPlugin(
                instance: handle.instanceID, plugin: handle.pluginID, kind: handle.kind.rawValue,
                runningMs: Int64(clamping: (now &- since) / 1_000_000))
        }
    }
}
