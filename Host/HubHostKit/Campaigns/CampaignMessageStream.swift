import Foundation
import Synchronization

/// Messages pushed, not polled: `messageStream(allowedContexts:)` yields the message that may show
/// the moment it becomes ready, and a `withdrawn` event naming why when one sent stops being the
/// message (shown, closed, put back for later, opted out, ended, synced away, paused or capped,
/// another user, messaging disabled). `GET /v1/messages/stream` and `hubhost messages watch` are
/// this stream.
extension CampaignEngine {
    /// Why a message a stream sent stopped being the message that may show.
    public enum WithdrawReason: String, Codable, CaseIterable, Sendable {
        /// It was reported shown (`displayed`): one impression counted.
        case shown
        /// It was closed without an impression (`close`).
        case closed
        /// It was put back in the queue (`later`); it is checked again when it next comes up.
        case later
        /// The user opted out of it.
        case optedOut = "opted_out"
        /// Its end time passed.
        case ended
        /// A campaign sync loaded a list without it.
        case syncedAway = "synced_away"
        /// Another user was set: messages are the new user's.
        case userChanged = "user_changed"
        /// The configuration endpoint disabled in-app messaging.
        case disabled
        /// `pause` holds every message.
        case paused
        /// `frequency_caps.per_session` holds it.
        case perSession = "frequency_caps.per_session"
        /// `frequency_caps.per_period` holds it.
        case perPeriod = "frequency_caps.per_period"
        /// `frequency_caps.min_gap` holds it.
        case minGap = "frequency_caps.min_gap"
        /// `frequency_caps.campaign_interval` holds it.
        case campaignInterval = "frequency_caps.campaign_interval"
        /// Not ready for another reason (e.g. a message of higher priority became current elsewhere).
        case notReady = "not_ready"

        /// The reason a hold gives (the hold reasons are withdraw reasons of the same name).
        public init(_ held: HoldReason) { self = WithdrawReason(rawValue: held.rawValue) ?? .notReady }
    }

    /// One event of a message stream: `message` (the message that may show now, or why a ready one
    /// is held; both absent: none is ready) or `withdrawn` (the id of a message sent before, and why
    /// it may no longer show).
    public struct StreamEvent: Codable, Equatable, Sendable {
        /// What the event says.
        public enum Name: String, Codable, Sendable {
            /// The message that may show now, or why a ready one is held (`message`, `held`; both absent: none is ready).
            case message
            /// A message sent before may no longer show (`id`, `reason`).
            case withdrawn
        }

        /// `message` or `withdrawn`.
        public var name: Name
        /// The message that may show now (`message` events).
        public var message: Campaign?
        /// Why a ready message is held (`message` events without a message).
        public var held: HoldReason?
        /// The campaign withdrawn (`withdrawn` events).
        public var id: String?
        /// Why it was withdrawn (`withdrawn` events).
        public var reason: WithdrawReason?

        /// A `message` event for `answer`.
        public static func message(_ answer: NextMessage) -> StreamEvent {
            StreamEvent(name: .message, message: answer.message, held: answer.held)
        }

        /// A `withdrawn` event.
        public static func withdrawn(_ id: String, _ reason: WithdrawReason) -> StreamEvent {
            StreamEvent(name: .withdrawn, id: id, reason: reason)
        }
    }

    /// What a stream remembers of a message it sent, to say later why it was withdrawn.
    struct SentMessage: Sendable {
        var id: String
        var userKey: String
        var impressionsLeft: Int
    }

    /// The messages for the current user as they change, given the contexts the caller allows:
    /// a `message` event at once and whenever the answer of `nextMessage` changes, preceded by a
    /// `withdrawn` event when a message sent before is no longer the one. A message sent is the
    /// current message, as `nextMessage` hands it out. Changes made through this engine reach the
    /// stream at once; changes by another process on the data directory (e.g. `hubhost campaigns
    /// sync`) within `MessageStreams.versionPollSeconds` (0.25 s); time passing (end times, caps
    /// running out, a pause's end) within `MessageStreams.tickSeconds` (1 s). The stream ends when the consumer
    /// stops iterating it (the continuation's termination removes it).
    public func messageStream(allowedContexts: [String] = []) -> AsyncStream<StreamEvent> {
        streams.subscribe(contexts: allowedContexts, engine: self)
    }

    /// Wakes the message streams: the state changed in this process.
    package func wakeMessageStreams() { streams.changed() }

    /// How often the streams read the stored version, and work every answer out again without a
    /// change (tests; by default 0.25 s and 1 s).
    package func setMessageStreamTimes(versionPollSeconds: Double, tickSeconds: Double) {
        streams.setTimes(versionPollSeconds: versionPollSeconds, tickSeconds: tickSeconds)
    }

    /// Ends every message stream (the host shuts down).
    package func finishMessageStreams() { streams.finishAll() }

    /// What a stream remembers when it sends message `id` (its impressions left, the user).
    func sentMessage(_ id: String) -> SentMessage {
        lock.withLock {
            let left = positions[id].map { cache.impressionsLeft[id] ?? loaded[$0].maxImpressions } ?? 0
            return SentMessage(id: id, userKey: currentUser.cacheKey, impressionsLeft: left)
        }
    }

    /// Why `sent` is no longer the message that may show; `held` is what the latest answer said.
    func withdrawal(of sent: SentMessage, held: HoldReason?) -> WithdrawReason {
        lock.withLock {
            let id = sent.id
            guard enabled else { return .disabled }
            guard currentUser.cacheKey == sent.userKey else { return .userChanged }
            guard let position = positions[id] else { return .syncedAway }
            let campaign = loaded[position]
            if cache.optedOut.contains(id) { return .optedOut }
            if campaign.isExpired(nowMs: nowMs()) { return .ended }
            if (cache.impressionsLeft[id] ?? campaign.maxImpressions) < sent.impressionsLeft { return .shown }
            if cache.current == id, let held { return WithdrawReason(held) }
            if (cache.later ?? []).contains(id) { return .later }
            if cache.current != id && !queuedIDs.contains(id) { return .closed }
            return held.map(WithdrawReason.init) ?? .notReady
        }
    }
}

/// The message streams of one engine and the one thread that serves them all, started with the
/// first stream and ended with the last: each stream's answer is worked out on that thread
/// (`nextMessage` reads and may write SQLite, which must not block a concurrency thread). It wakes
/// when this process changed the campaign state (`changed`), every `versionPollSeconds` to read
/// the stored state's version (one indexed read) for another process's change, and every
/// `tickSeconds` regardless, for what time alone changes.
final class MessageStreams: Sendable {
    /// How often the thread reads the stored version for another process's changes, by default.
    static let versionPollSeconds = 0.25
    /// How often every stream's answer is worked out again without a change, by default.
    static let tickSeconds = 1.0

    private struct Subscriber {
        var contexts: [String]
        var continuation: AsyncStream<CampaignEngine.StreamEvent>.Continuation
        var last: CampaignEngine.StreamEvent?
        var sent: CampaignEngine.SentMessage?
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        /// Whether the serving thread runs.
        var running = false
        /// Set by `changed`: the thread works the answers out again at its next wake.
        var dirty = false
        var versionPollSeconds = MessageStreams.versionPollSeconds
        var tickSeconds = MessageStreams.tickSeconds
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    func subscribe(contexts: [String], engine: CampaignEngine) -> AsyncStream<CampaignEngine.StreamEvent> {
        let (stream, continuation) = AsyncStream<CampaignEngine.StreamEvent>.makeStream(bufferingPolicy: .bufferingNewest(1_000))
        let (id, start) = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(contexts: contexts, continuation: continuation)
            state.dirty = true
            let start = !state.running
            state.running = true
            return (id, start)
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        if start {
            Thread.detachNewThread { [self] in serve(engine) }
        } else {
            wake.signal()
        }
        return stream
    }

    /// Uses other intervals (tests: a tick that never comes, to show a change arrives without it).
    func setTimes(versionPollSeconds: Double, tickSeconds: Double) {
        state.withLock { state in
            state.versionPollSeconds = versionPollSeconds
            state.tickSeconds = tickSeconds
        }
    }

    /// The campaign state changed in this process: every stream's answer is worked out again now.
    func changed() {
        let signal = state.withLock { state in
            guard !state.subscribers.isEmpty, !state.dirty else { return false }
            state.dirty = true
            return true
        }
        if signal { wake.signal() }
    }

    /// Ends every stream; their terminations remove them and the thread stops.
    func finishAll() {
        let subscribers = state.withLock { $0.subscribers.values.map(\.continuation) }
        for continuation in subscribers { continuation.finish() }
        wake.signal()
    }

    /// The serving thread: until the last stream ends.
    private func serve(_ engine: CampaignEngine) {
        var seenVersion: Int64?
        var lastRound = DispatchTime(uptimeNanoseconds: 0)
        while true {
            let due = state.withLock { state -> (changedHere: Bool, poll: Double, tick: Double)? in
                if state.subscribers.isEmpty {
                    state.running = false
                    return nil
                }
                defer { state.dirty = false }
                return (state.dirty, state.versionPollSeconds, state.tickSeconds)
            }
            guard let (changedHere, poll, tick) = due else { return }
            // Read before the round: a write the round itself makes shows as one more round, never as
            // another process's change missed.
            let version = try? engine.shared.version()
            let now = DispatchTime.now()
            let ticked = now.uptimeNanoseconds - lastRound.uptimeNanoseconds >= UInt64(tick * 1e9)
            if changedHere || ticked || version != seenVersion {
                seenVersion = version
                lastRound = now
                round(engine)
            }
            _ = wake.wait(timeout: .now() + poll)
        }
    }

    /// Works every stream's answer out and yields what changed.
    private func round(_ engine: CampaignEngine) {
        let subscribers = state.withLock { $0.subscribers }
        for (id, var subscriber) in subscribers.sorted(by: { $0.key < $1.key }) {
            let answer = engine.nextMessage(allowedContexts: subscriber.contexts)
            if let sent = subscriber.sent, sent.id != answer.message?.id {
                subscriber.continuation.yield(.withdrawn(sent.id, engine.withdrawal(of: sent, held: answer.held)))
                subscriber.sent = nil
            }
            let event = CampaignEngine.StreamEvent.message(answer)
            if event != subscriber.last {
                subscriber.continuation.yield(event)
                subscriber.last = event
                if let message = answer.message { subscriber.sent = engine.sentMessage(message.id) }
            }
            state.withLock { state in
                guard let current = state.subscribers[id] else { return }
                state.subscribers[id] = Subscriber(
                    contexts: current.contexts, continuation: current.continuation, last: subscriber.last, sent: subscriber.sent)
            }
        }
    }
}
