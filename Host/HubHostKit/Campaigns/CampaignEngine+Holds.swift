import Foundation
import Synchronization

/// What holds a ready message back: a pause (`pause`, `resume`), the frequency caps
/// (`campaigns.frequency_caps`), a message put back for later (`later`); and the engine's clock,
/// which tests replace.
extension CampaignEngine {
    /// Every message held, e.g. while a checkout runs: stored in the data directory (`campaigns.pause`),
    /// so every process on it holds its messages too.
    public struct Pause: Codable, Equatable, Sendable {
        /// Whether messages are paused (until `untilMs` when set).
        public var paused: Bool
        /// When the pause ends by itself (ms since 1970); nil: at `resume`.
        public var untilMs: Int64?

        /// Not paused.
        public init(paused: Bool = false, untilMs: Int64? = nil) {
            self.paused = paused
            self.untilMs = untilMs
        }

        /// Whether the pause holds messages at `now`.
        public func isActive(at now: Int64) -> Bool { paused && (untilMs.map { now < $0 } ?? true) }
    }

    /// Why `nextMessage` has no message although one is ready: the pause or the cap that holds it.
    public enum HoldReason: String, Codable, CaseIterable, Sendable {
        /// `pause` holds every message.
        case paused
        /// `frequency_caps.per_session`: the session's messages are used up.
        case perSession = "frequency_caps.per_session"
        /// `frequency_caps.per_period`: the rolling period's messages are used up.
        case perPeriod = "frequency_caps.per_period"
        /// `frequency_caps.min_gap`: the last message showed too recently.
        case minGap = "frequency_caps.min_gap"
        /// `frequency_caps.campaign_interval`: each ready campaign showed too recently.
        case campaignInterval = "frequency_caps.campaign_interval"
    }

    /// What `nextMessage` answers: the message, or why a ready one is held (both nil: none is ready).
    public struct NextMessage: Sendable {
        /// The message to show now.
        public var message: Campaign?
        /// Set when a message is ready but held.
        public var held: HoldReason?

        /// An answer; both nil (the default): no message is ready.
        public init(message: Campaign? = nil, held: HoldReason? = nil) {
            self.message = message
            self.held = held
        }
    }

    /// The engine's additions that are not shared state mirrors of the old kind: the pause as last
    /// read, the caps, the clock, where exposure events go and the users' buckets.
    struct Holds {
        /// The stored pause, as last read (CampaignSharedState's `load` sets it).
        var pause = Pause()
        var caps = FrequencyCaps()
        var now: @Sendable () -> Int64 = { Clock.wallMs() }
        /// Tracks the engine's own events (`Campaign Shown`, `Campaign Holdout`); nil: none are tracked.
        var track: (@Sendable ([Event]) -> Void)?
        /// "salt|campaign|user" -> the user's bucket in [0, 100) (CampaignExperiment).
        var buckets: [String: Double] = [:]
    }

    /// The engine's time, in ms since 1970 (`Clock.wallMs` unless a test set another).
    func nowMs() -> Int64 { holds.withLock { $0.now }() }

    /// Uses `now` as the engine's clock (tests: caps, pauses and end times without sleeping).
    package func setClock(_ now: @escaping @Sendable () -> Int64) { holds.withLock { $0.now = now } }

    /// The frequency caps (`campaigns.frequency_caps`; a reload may change them).
    public var frequencyCaps: FrequencyCaps {
        get { holds.withLock { $0.caps } }
        set {
            holds.withLock { $0.caps = newValue }
            streams.changed()
        }
    }

    /// Where the engine's own events go (`HubHost` sends them through the event engine).
    public func trackEvents(with track: (@Sendable ([Event]) -> Void)?) { holds.withLock { $0.track = track } }

    /// Sends `events` to the tracker; the caller must not hold `lock` (tracking delivers the events
    /// back to this engine's `logEvents`).
    func send(_ events: [Event]) {
        guard !events.isEmpty, let track = holds.withLock({ $0.track }) else { return }
        track(events)
    }

    // MARK: Pause

    /// The pause as stored now (another process may have paused or resumed).
    public var pauseState: Pause {
        lock.withLock {
            refreshQuietly()
            let now = nowMs()
            let pause = holds.withLock { $0.pause }
            return pause.isActive(at: now) ? pause : Pause()
        }
    }

    /// Holds every message (`nextMessage` answers none, reason `paused`) until `untilMs` (ms since
    /// 1970) or `resume`, in every process on the data directory. Throws Refused for an end time
    /// not after now.
    public func pause(untilMs: Int64? = nil) throws {
        let now = nowMs()
        if let untilMs, untilMs <= now || untilMs > SafeTime.validMs.upperBound {
            throw Refused(description: "until must be a time after now (ms since 1970) and at most \(SafeTime.validMs.upperBound); got \(untilMs)")
        }
        try lock.withLock {
            try update { db, wrote in
                let pause = Pause(paused: true, untilMs: untilMs)
                try shared.setPause(db, pause)
                holds.withLock { $0.pause = pause }
                wrote = true
            }
        }
    }

    /// Ends a pause: messages show again.
    public func resume() throws {
        try lock.withLock {
            try update { db, wrote in
                try shared.setPause(db, Pause())
                holds.withLock { $0.pause = Pause() }
                wrote = true
            }
        }
    }

    // MARK: Later

    /// Puts the message back at the end of the queue instead of showing it now: it is no longer the
    /// current message, and when it next comes up it is checked again (end time, opt-out,
    /// impressions, caps, rollout and its triggers: one that needs app start waits for the next).
    /// Throws NotFound for an unknown campaign, NotAllowed when it is neither current nor queued.
    public func later(_ id: String) throws {
        try lock.withLock {
            try update { _, _ in
                guard positions[id] != nil else { throw NotFound(description: "no campaign \(id)") }
                guard cache.current == id || cache.queue.contains(id) else {
                    throw NotAllowed(description: "campaign \(id) is neither the current message nor queued")
                }
                if cache.current == id { cache.current = nil }
                cache.queue.removeAll { $0 == id }
                cache.queue.append(id)
                queuedIDs.insert(id)
                var later = cache.later ?? []
                if !later.contains(id) { later.append(id) }
                cache.later = later
            }
        }
    }

    /// A value out of range was given.
    public struct Refused: Error, CustomStringConvertible {
        /// The reason, naming the value.
        public var description: String
    }
}
