/// The kinds of event hubhost tracks: the Engage Universal Behavior types with their codes, and
/// the in-app messaging types the campaign engine consumes.
public enum EventType: String, Codable, CaseIterable, Sendable {
    /// The app was installed (code 12).
    case installed
    /// A session began (code 13): tracked by hubhost itself before an event that opens a session (the first, or the first
    /// after `events.session_timeout` of inactivity).
    case sessionStarted = "session_started"
    /// A session went stale (code 14): tracked by hubhost itself before the next event, with the session's duration in seconds
    /// (`events.session_duration_field`).
    case sessionEnded = "session_ended"
    /// The user gave up a goal the app tracks (code 15).
    case goalAbandoned = "goal_abandoned"
    /// The user reached a goal the app tracks (code 16).
    case goalCompleted = "goal_completed"
    /// Any event the app names (code 17), e.g. "PLAYER LOADED"; the default type of `hubhost track`.
    case namedEvent = "named_event"
    /// A notification arrived (code 48): `EventEngine.notification(opened: false, payload:)` tracks it.
    case notificationReceived = "notification_received"
    /// The user opened a notification (code 49): `EventEngine.notification(opened: true, payload:)` tracks it.
    case notificationOpened = "notification_opened"
    // In-app messaging (Rakuten) types.
    /// The app started (sent as 17): satisfies app start triggers (wire type 1); only the first of a launch counts.
    case appStart = "app_start"
    /// A user logged in (sent as 17): satisfies login successful triggers (wire type 2).
    case loginSuccessful = "login_successful"
    /// A purchase was made (sent as 17): satisfies purchase successful triggers (wire type 3); its typed properties are `Purchase`'s.
    case purchaseSuccessful = "purchase_successful"
    /// An in-app messaging custom event (sent as 17): custom triggers match it by its name.
    case custom

    /// The Universal Behavior event type code sent to the collector (`eventTypeCode`).
    /// In-app messaging types are sent as named events (17) carrying their type name.
    public var code: Int {
        switch self {
        case .installed: return 12
        case .sessionStarted: return 13
        case .sessionEnded: return 14
        case .goalAbandoned: return 15
        case .goalCompleted: return 16
        case .namedEvent, .appStart, .loginSuccessful, .purchaseSuccessful, .custom: return 17
        case .notificationReceived: return 48
        case .notificationOpened: return 49
        }
    }

    /// Accepts the name (`named_event`), a dashed form (`named-event`) or a Universal Behavior code (`17`).
    public init?(text: String) {
        // The default type, and nearly every request's: compared first (the raw-value initializer
        // tries each case's text in turn, about a thousand instructions per event).
        if text == EventType.namedEvent.rawValue {
            self = .namedEvent
            return
        }
        if let exact = EventType(rawValue: text) {  // the usual spelling, without the copies below
            self = exact
            return
        }
        let key = text.lowercased().replacingOccurrences(of: "-", with: "_")
        if let match = EventType(rawValue: key) {
            self = match
        } else if let code = Int(text), let match = EventType.allCases.first(where: { $0.code == code }) {
            self = match
        } else {
            return nil
        }
    }
}

/// The five statuses of a stored event, exactly as the Engage local event store names them.
public enum EventStatus: String, Codable, CaseIterable, Sendable {
    /// Ready to be sent; waiting for the network or for the cache size to be reached.
    case notPosted = "NOT_POSTED"
    /// Posted to the collector; purged after `expire_local_events_after`.
    case successfullyPosted = "SUCCESSFULLY_POSTED"
    /// Attempted `max_num_retries` times; never attempted again.
    case failedPost = "FAILED_POST"
    /// Created, still being augmented.
    case hold = "HOLD"
    /// Augmentation did not finish within its timeout; sent as it was, like NOT_POSTED.
    case expired = "EXPIRED"

    /// Statuses the delivery sends.
    public static let deliverable: [EventStatus] = [.notPosted, .expired]
}
