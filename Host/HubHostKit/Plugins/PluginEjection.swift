import Foundation
import Logging

/// When a plugin that keeps failing is taken out of the calls (`eject_after`, `eject_for`,
/// `eject_max` on its plugins.yaml entry): after `afterFailures` failed calls in a row it is
/// *ejected* for `forSeconds`, doubled with each ejection that follows without a quiet spell, at
/// most `maxSeconds`. As Envoy's outlier detection does for an upstream: a plugin that timed out
/// the last five times will most likely time out again, and every call it is given costs the
/// caller its whole deadline.
public struct EjectionPolicy: Equatable, Sendable {
    /// Failed calls in a row that eject the plugin; 0 never ejects it.
    public var afterFailures = EjectionPolicy.defaultAfterFailures
    /// The first ejection's length.
    public var forSeconds = EjectionPolicy.defaultForSeconds
    /// The longest an ejection gets by doubling.
    public var maxSeconds = EjectionPolicy.defaultMaxSeconds

    public static let defaultAfterFailures = 5
    public static let defaultForSeconds: Double = 30
    public static let defaultMaxSeconds: Double = 300
    /// The largest `eject_after` accepted.
    public static let maximumAfterFailures = 1_000_000

    public init() {}

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
/// Safe to share: every mutable field is read and written under `lock`.
public final class PluginEjection: @unchecked Sendable {
    /// An ejection, as the plugin list and health show it.
    public struct Ejected: Equatable, Sendable {
        /// When the probe is let through (wall clock).
        public var until: Date
        /// The last failure before the ejection.
        public var reason: String
        /// Ejections since the plugin last stayed healthy (1: the first).
        public var count: Int
    }

    private let lock = NSLock()
    /// Never ejects until the registry configures it from plugins.yaml: a handle made outside
    /// one (the plugin's side of a worker, `plugins test`, a benchmark) answers every call as
    /// the plugin does, and the host's own handle on an isolated plugin does the ejecting.
    private var policy = EjectionPolicy.unconfigured
    private var logger: Logger?
    private let instanceID: String
    private let pluginID: String
    private var failuresInARow = 0
    /// Ejections in the current run, for the doubling; reset after `maxSeconds` without one.
    private var ejections = 0
    /// Monotonic end of the ejection in force, nil when not ejected.
    private var untilNs: UInt64?
    private var untilWall = Date.distantPast
    private var reason = ""
    private var probing = false
    /// When the last ejection ended (monotonic), to tell a quiet spell from a relapse.
    private var lastEndNs: UInt64 = 0

    init(instanceID: String, pluginID: String) {
        self.instanceID = instanceID
        self.pluginID = pluginID
    }

    /// Sets the policy (the instance's plugins.yaml entry) and where an ejection is logged.
    public func configure(_ policy: EjectionPolicy, logger: Logger?) {
        lock.withLock {
            self.policy = policy
            self.logger = logger
        }
    }

    /// Whether the caller may call the plugin now: true when it is not ejected, or when its
    /// ejection is over and no other probe is in flight (this call is then the probe).
    public func admit() -> Bool {
        let now = Clock.monotonicNs()
        return lock.withLock {
            guard let until = untilNs else { return true }
            guard now >= until, !probing else { return false }
            probing = true
            return true
        }
    }

    /// The admitted call answered as it should: the run of failures ends, and a probe un-ejects.
    public func succeeded() {
        let now = Clock.monotonicNs()
        let recovered: Bool = lock.withLock {
            failuresInARow = 0
            // A call let through before the ejection that answers late decides nothing: the probe does.
            guard untilNs != nil, probing else { return false }
            untilNs = nil
            probing = false
            lastEndNs = now
            return true
        }
        if recovered {
            log(.notice, "plugin instance '\(instanceID)' (\(pluginID)) answered its probe call: called again")
        }
    }

    /// The admitted call failed (an error status, a trap, a crash, a timeout) for `why`: one more
    /// in the run, which ejects the plugin when it reaches `eject_after`; a failed probe ejects
    /// it again at once, for twice as long.
    public func failed(_ why: String) {
        let now = Clock.monotonicNs()
        let ejected: (seconds: Double, count: Int, failures: Int)? = lock.withLock {
            failuresInARow += 1
            guard policy.afterFailures > 0 else { return nil }
            // A call let through before the ejection that fails late changes nothing.
            if untilNs != nil, !probing { return nil }
            let wasProbe = probing
            guard wasProbe || failuresInARow >= policy.afterFailures else { return nil }
            probing = false
            // A plugin that stayed healthy for the longest ejection starts again at the first length.
            if !wasProbe, lastEndNs != 0, now &- lastEndNs > SafeTime.durationNs(policy.maxSeconds) { ejections = 0 }
            ejections += 1
            let seconds = min(policy.forSeconds * pow(2, Double(min(ejections - 1, 60))), policy.maxSeconds)
            untilNs = now &+ SafeTime.durationNs(seconds)
            untilWall = Date().addingTimeInterval(seconds)
            reason = why
            return (seconds, ejections, failuresInARow)
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
    public func notCalled() {
        lock.withLock {
            if untilNs != nil, probing { probing = false }
        }
    }

    /// The ejection in force, nil when the plugin is called.
    public var ejected: Ejected? {
        lock.withLock { untilNs == nil ? nil : Ejected(until: untilWall, reason: reason, count: ejections) }
    }

    /// Failed calls in a row so far.
    public var consecutiveFailures: Int { lock.withLock { failuresInARow } }

    private func log(_ level: Logger.Level, _ message: String) {
        guard let logger = lock.withLock({ logger }) else { return }
        logger.log(level: level, "\(message)")
    }
}
