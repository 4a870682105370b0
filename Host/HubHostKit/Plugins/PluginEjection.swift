import Foundation
import Logging
import Synchronization

/// When a plugin that keeps failing is taken out of the calls (`eject_after`, `eject_for`,
/// `eject_max` on its plugins.yaml entry): after `afterFailures` failed calls in a row it is
/// *ejected* for `forSeconds`, doubled with each ejection that follows without a quiet spell, at
/// most `maxSeconds`. As Envoy's outlier detection does for an upstream: a plugin that timed out
/// the last five times will most likely time out again, and every call it is given costs the
/// caller its whole deadline.
package struct EjectionPolicy: Equatable, Sendable {
    /// Failed calls in a row that eject the plugin; 0 never ejects it.
    package var afterFailures = EjectionPolicy.defaultAfterFailures
    /// The first ejection's length.
    package var forSeconds = EjectionPolicy.defaultForSeconds
    /// The longest an ejection gets by doubling.
    package var maxSeconds = EjectionPolicy.defaultMaxSeconds

    package static let defaultAfterFailures = 5
    package static let defaultForSeconds: Double = 30
    package static let defaultMaxSeconds: Double = 300
    /// The largest `eject_after` accepted.
    package static let maximumAfterFailures = 1_000_000

    package init() {}

    /// The policy of a handle no plugins.yaml entry configured: it never ejects.
    static var unconfigured: EjectionPolicy {
        var policy = EjectionPolicy()
        policy.afterFailures = 0
        return policy
    }
}

/// One plugin's run of failures and its ejection, shared by every caller of the plugin (each
/// `PluginHandle` has one). A caller asks `admit()` before a call and reports the call's outcome
/// (`succeeded()`, `failed(_:)`); an ejected plugin is not called, and once its time is over one
/// call, the probe, is let through: success un-ejects it, failure ejects it again for longer.
/// Each ejection is logged once, at warning level, and counted in
/// `hubhost_plugin_ejections_total{instance}`; a skipped call is neither.
/// Sendable: every mutable field lives in `state`, a Mutex; the ids are `let` strings.
package final class PluginEjection: Sendable {
    /// An ejection, as the plugin list and health show it.
    package struct Ejected: Equatable, Sendable {
        /// When the probe is let through (wall clock).
        package var until: Date
        /// The last failure before the ejection.
        package var reason: String
        /// Ejections since the plugin last stayed healthy (1: the first).
        package var count: Int
    }

    private struct State {
        /// Never ejects until the registry configures it from plugins.yaml: a handle made outside
        /// one (the plugin's side of a worker, `plugins test`, a benchmark) answers every call as
        /// the plugin does, and the host's own handle on an isolated plugin does the ejecting.
        var policy = EjectionPolicy.unconfigured
        var logger: Logger?
        var failuresInARow = 0
        /// Ejections in the current run, for the doubling; reset after `maxSeconds` without one.
        var ejections = 0
        /// Monotonic end of the ejection in force, nil when not ejected.
        var untilNs: UInt64?
        var untilWall = Date.distantPast
        var reason = ""
        var probing = false
        /// When the last ejection ended (monotonic), to tell a quiet spell from a relapse.
        var lastEndNs: UInt64 = 0
    }
    private let state = Mutex(State())
    private let instanceID: String
    private let pluginID: String

    init(instanceID: String, pluginID: String) {
        self.instanceID = instanceID
        self.pluginID = pluginID
    }

    /// Sets the policy (the instance's plugins.yaml entry) and where an ejection is logged.
    package func configure(_ policy: EjectionPolicy, logger: Logger?) {
        state.withLock {
            $0.policy = policy
            $0.logger = logger
        }
    }

    /// Whether the caller may call the plugin now: true when it is not ejected, or when its
    /// ejection is over and no other probe is in flight (this call is then the probe).
    package func admit() -> Bool {
        state.withLock {
            guard let until = $0.untilNs else { return true }  // not ejected: no clock to read (asked before every call)
            guard Clock.monotonicNs() >= until, !$0.probing else { return false }
            $0.probing = true
            return true
        }
    }

    /// The admitted call answered as it should: the run of failures ends, and a probe un-ejects.
    package func succeeded() {
        let recovered: Bool = state.withLock {
            $0.failuresInARow = 0
            // A call let through before the ejection that answers late decides nothing: the probe does.
            guard $0.untilNs != nil, $0.probing else { return false }
            $0.untilNs = nil
            $0.probing = false
            $0.lastEndNs = Clock.monotonicNs()  // read only here: most calls recover nothing
            return true
        }
        if recovered {
            log(.notice, "plugin instance '\(instanceID)' (\(pluginID)) answered its probe call: called again")
        }
    }

    /// The admitted call failed (an error status, a trap, a crash, a timeout) for `why`: one more
    /// in the run, which ejects the plugin when it reaches `eject_after`; a failed probe ejects
    /// it again at once, for twice as long.
    package func failed(_ why: String) {
        let now = Clock.monotonicNs()
        let ejected: (seconds: Double, count: Int, failures: Int)? = state.withLock { state in
            state.failuresInARow += 1
            guard state.policy.afterFailures > 0 else { return nil }
            // A call let through before the ejection that fails late changes nothing.
            if state.untilNs != nil, !state.probing { return nil }
            let wasProbe = state.probing
            guard wasProbe || state.failuresInARow >= state.policy.afterFailures else { return nil }
            state.probing = false
            // A plugin that stayed healthy for the longest ejection starts again at the first length.
            if !wasProbe, state.lastEndNs != 0, now &- state.lastEndNs > SafeTime.durationNs(state.policy.maxSeconds) { state.ejections = 0 }
            state.ejections += 1
            let seconds = min(state.policy.forSeconds * pow(2, Double(min(state.ejections - 1, 60))), state.policy.maxSeconds)
            state.untilNs = now &+ SafeTime.durationNs(seconds)
            state.untilWall = Date().addingTimeInterval(seconds)
            state.reason = why
            return (seconds, state.ejections, state.failuresInARow)
        }
        guard let ejected else { return }
        RuntimeMetrics.pluginEjected(instance: instanceID)
        log(
            .warning,
            "plugin instance '\(instanceID)' (\(pluginID)) ejected for \(EngageDuration.format(ejected.seconds)) after \(ejected.failures) failed calls in a row (ejection \(ejected.count)): \(why); it is not called until then, then one probe call decides"
        )
    }

    /// The admitted call never reached the plugin (its worker is in its restart backoff): nothing
    /// changes, except that a probe refused so leaves the probing to the next call.
    package func notCalled() {
        state.withLock {
            if $0.untilNs != nil, $0.probing { $0.probing = false }
        }
    }

    /// The ejection in force, nil when the plugin is called.
    package var ejected: Ejected? {
        state.withLock { $0.untilNs == nil ? nil : Ejected(until: $0.untilWall, reason: $0.reason, count: $0.ejections) }
    }

    /// Failed calls in a row so far.
    package var consecutiveFailures: Int { state.withLock { $0.failuresInARow } }

    private func log(_ level: Logger.Level, _ message: String) {
        guard let logger = state.withLock({ $0.logger }) else { return }
        logger.log(level: level, "\(message)")
    }
}
