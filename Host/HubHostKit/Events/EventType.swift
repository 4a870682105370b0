/// The kinds of event hubhost tracks: the Engage Universal Behavior types with their codes, and
/// the in-app messaging types the campaign engine consumes.
public enum EventType: String, Codable, CaseIterable, Sendable {
    case installed
    case sessionStarted = "session_started"
    case sessionEnded = "session_ended"
    case goalAbandoned = "goal_abandoned"
    case goalCompleted = "goal_completed"
    case namedEvent = "named_event"
    case notificationReceived = "notification_received"
    case notificationOpened = "notification_opened"
    // In-app messaging (Rakuten) types.
    case appStart = "app_start"
    case loginSuccessful = "login_successful"
    case purchaseSuccessful = "purchase_successful"
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
