import Foundation
import GRDB

/// Engage sessions: a session starts with the first event after start-up or after inactivity
/// longer than `session_timeout`; when it ends, a "session ended" event carries its duration,
/// which excludes the inactive time (it runs from the first to the last event of the session).
///
/// The session's state is kept in the event store, so a session spans several `hubhost track`
/// invocations as it spans an app's calls; "start-up" is a store with no session, or a stale one.
final class SessionTracker {
    struct State: Codable {
        var startedMs: Int64
        var lastActivityMs: Int64
    }

    let timeoutMs: Int64
    let durationField: String
    /// The session, read from the store once; written back with the events that change it, in
    /// their transaction (`pendingWrite`), so tracking costs no extra commit.
    private var current: State?
    /// The state to write with the next events, nil when unchanged. Kept as a value and turned
    /// into JSON only when it is written (once per batch, not once per event).
    private var pending: State?
    var pendingWrite: (key: String, json: String)? {
        // The same JSON the Codable State reads back, without an encoder.
        pending.map { (Self.key, "{\"startedMs\":\($0.startedMs),\"lastActivityMs\":\($0.lastActivityMs)}") }
    }

    static let key = "session"

    init(settings: EventSettings, state: KeyValueState) throws {
        timeoutMs = SafeTime.durationMs(settings.sessionTimeout)
        durationField = settings.sessionDurationField
        current = try state.get(Self.key)
    }

    /// The session events to record before `event`: "session ended" for a session that went stale,
    /// then "session started" when a new one begins. Session events themselves start nothing.
    /// Caller serializes; then stores `pendingWrite` with the events.
    func events(before event: Event) -> [Event] {
        if event.type == .sessionStarted || event.type == .sessionEnded { return [] }
        let now = event.timestampMs
        var produced: [Event] = []
        if var session = current {
            // Saturating: a state written by an older version may hold any Int64 (a timestamp of
            // -2^63 once made this subtraction trap on every later event, after every restart).
            if now.saturatingSubtracting(session.lastActivityMs) <= timeoutMs {
                session.lastActivityMs = max(session.lastActivityMs, now)
                remember(session)
                return []
            }
            let endedAt = min(max(session.lastActivityMs, SafeTime.validMs.lowerBound), SafeTime.validMs.upperBound)
            var ended = Event(type: .sessionEnded, name: "Session Ended", timestampMs: endedAt)
            ended.set(durationField, .int(max(0, session.lastActivityMs.saturatingSubtracting(session.startedMs)) / 1000))
            produced.append(ended)
        }
        remember(State(startedMs: now, lastActivityMs: now))
        produced.append(Event(type: .sessionStarted, name: "Session Started", timestampMs: now))
        return produced
    }

    private func remember(_ session: State) {
        current = session
        pending = session
    }
}
