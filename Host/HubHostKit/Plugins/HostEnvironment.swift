import Foundation
import HubHostABI
import Synchronization

/// What the host offers plugin instances beyond the basic services table: the HTTP service under
/// the instance's policy, and the location service. Given to each instance at create.
public struct HostEnvironment: Sendable {
    /// Which hosts an instance may reach through "hubhost.http.v1", and how long a request may take.
    public struct HTTPPolicy: Sendable, Equatable {
        /// Host names (lowercase), compared exactly; empty refuses every request.
        public var allowedHosts: [String]
        /// Deadline of one request, in seconds (`http_timeout`, default 10).
        public var timeoutSeconds: Double

        /// A policy allowing `allowedHosts` (lowercased here; default none) with `timeoutSeconds` per request.
        public init(allowedHosts: [String] = [], timeoutSeconds: Double = 10) {
            self.allowedHosts = allowedHosts.map { $0.lowercased() }
            self.timeoutSeconds = timeoutSeconds
        }
    }

    /// What the instance may reach through "hubhost.http.v1" (`http_allow`, `http_timeout`).
    public var http: HTTPPolicy
    /// The location service behind "hubhost.location.v1"; nil: not offered.
    public var location: LocationService?
    /// The OAuth token of event delivery behind "hubhost.event_auth.v1"; nil: not offered.
    package var eventAuth: EventAuthTokens?

    package init(http: HTTPPolicy = HTTPPolicy(), location: LocationService? = nil, eventAuth: EventAuthTokens? = nil) {
        self.http = http
        self.location = location
        self.eventAuth = eventAuth
    }
}

/// The host's location service: asks the location delegates in plugins.yaml order, with a cache
/// (the Engage location cache lifespan) and a deadline (the acquisition timeout).
/// Sendable: the delegates and the cached location live in a Mutex; `fixed` is a `let`.
public final class LocationService: Sendable {
    private struct State {
        var delegates: [LocationPlugin] = []
        var cached: (location: Location, atMs: Int64)?
        /// The cached location as C text, made at its first C answer (`currentText`), with the
        /// time it was cached.
        var text: (text: LocationCText, atMs: Int64)?
    }
    private let state = Mutex(State())
    private let fixed: Location?
    /// `fixed` as C text.
    private let fixedText: LocationCText?

    /// A service with no delegates: it answers `.unavailable` until `use(_:)` gives it the location plugins.
    public init() {
        fixed = nil
        fixedText = nil
    }

    /// A service that always answers `location`, with no delegates: for `hubhost plugins test` and
    /// PluginTestKit, which test one plugin with no others loaded.
    public init(fixed location: Location) {
        fixed = location
        fixedText = LocationCText(location)
    }

    /// Set once the location plugins are loaded.
    public func use(_ plugins: [LocationPlugin]) {
        state.withLock {
            $0.delegates = plugins
            $0.cached = nil
            $0.text = nil
        }
    }

    /// True when the service can answer: it has location plugins, or a fixed location. The host offers
    /// "hubhost.location.v1" to plugins only then.
    public var hasDelegates: Bool { fixed != nil || state.withLock { !$0.delegates.isEmpty } }

    /// A cached location no older than `maxAgeMs`, or a new answer within `timeoutMs`.
    public func current(maxAgeMs: Int64, timeoutMs: Int64) -> LocationAnswer {
        if let fixed { return .location(fixed) }
        let (plugins, hit): ([LocationPlugin], Location?) = state.withLock {
            if let cached = $0.cached, Clock.wallMs() - cached.atMs <= maxAgeMs { return ([], cached.location) }
            return ($0.delegates, nil)
        }
        if let hit { return .location(hit) }
        guard !plugins.isEmpty else { return .unavailable }
        // Each delegate is asked with what is left of the deadline, on a plugin-call thread: one
        // that overruns is stuck and skipped at once by later requests until it returns.
        let deadline = Clock.monotonicNs() + SafeTime.durationNs(Double(max(0, timeoutMs)) / 1000)
        var answer = LocationAnswer.unavailable
        for plugin in plugins {
            let now = Clock.monotonicNs()
            guard now < deadline else {
                return .failed(status: HH_ERR_TIMEOUT, message: "no location delegate answered within \(timeoutMs) ms")
            }
            answer = plugin.current(deadlineSeconds: Double(deadline - now) / 1e9)
            if case .location = answer { break }
        }
        if case .failed(let status, _) = answer, status == HH_ERR_TIMEOUT {
            return .failed(status: HH_ERR_TIMEOUT, message: "no location delegate answered within \(timeoutMs) ms")
        }
        if case .location(let location) = answer {
            state.withLock {
                $0.cached = (location, Clock.wallMs())
                $0.text = nil
            }
        }
        return answer
    }

    /// `current`, for "hubhost.location.v1": the location as C text, one block per location
    /// shared by every call it answers (see `LocationCText`), with HH_OK; or nil with the status
    /// a failure answers (HH_ERR_TIMEOUT when no delegate answered in time, else HH_ERR_UNAVAILABLE).
    func currentText(maxAgeMs: Int64, timeoutMs: Int64) -> (text: LocationCText?, status: hh_status_t) {
        if let fixedText { return (fixedText, HH_OK) }
        let hit: LocationCText? = state.withLock { state in
            // The text made already, checked first: reading the cached entry (or `fixed`) copied
            // the location, a retain and a release of each of its strings.
            if let made = state.text { return Clock.wallMs() - made.atMs <= maxAgeMs ? made.text : nil }
            guard let cached = state.cached, Clock.wallMs() - cached.atMs <= maxAgeMs else { return nil }
            let made = LocationCText(cached.location)
            state.text = (made, cached.atMs)
            return made
        }
        if let hit { return (hit, HH_OK) }
        switch current(maxAgeMs: maxAgeMs, timeoutMs: timeoutMs) {
        case .location(let location): return (LocationCText(location), HH_OK)
        case .failed(let status, _) where status == HH_ERR_TIMEOUT: return (nil, HH_ERR_TIMEOUT)
        case .failed, .unavailable: return (nil, HH_ERR_UNAVAILABLE)
        }
    }
}
