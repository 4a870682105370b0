import Foundation

/// One notification for the integrating app: a Content Hub state change, download progress, the
/// content shown, an app action, a due local notification, an engine error. `GET /v1/notifications`
/// streams them as server-sent events and `hubhost hub watch` prints them; the names are the ZBiM
/// SDK's notification names without the "ZBiM" prefix.
public struct HostNotification: Codable, Equatable, Sendable {
    /// e.g. "ReadyStateChanged", "DownloadProgressChanged", "ContentTypeChanged", "AppAction".
    public var name: String
    /// The notification's values with their JSON types: a state's new value (a boolean), a
    /// percent (a number), a URL (a string)...
    public var payload: [String: JSONValue]
    public var timestampMs: Int64

    public init(name: String, payload: [String: JSONValue] = [:], timestampMs: Int64 = Clock.wallMs()) {
        self.name = name
        self.payload = payload
        self.timestampMs = timestampMs
    }

    /// The names this hubhost posts.
    public enum Name {
        public static let downloadingContentStateChanged = "DownloadingContentStateChanged"
        public static let displayingContentHubStateChanged = "DisplayingContentHubStateChanged"
        public static let readyStateChanged = "ReadyStateChanged"
        public static let disabledStateChanged = "DisabledStateChanged"
        public static let notPartOfPilotProgramStateChanged = "NotPartOfPilotProgramStateChanged"
        public static let downloadProgressChanged = "DownloadProgressChanged"
        public static let contentTypeChanged = "ContentTypeChanged"
        public static let appAction = "AppAction"
        public static let localNotificationDue = "LocalNotificationDue"
        public static let error = "Error"
    }
}

/// The host's notification bus: engines post, front ends subscribe. Delivery is synchronous on the
/// poster's thread, so a subscriber must not block (the server's stream hands each notification to
/// its own async stream). Each subscriber also gets the most recent notifications on subscribing
/// (`replay`), so that a client that connects just after a change still sees it.
public final class HostNotifications: @unchecked Sendable {
    public typealias Subscriber = @Sendable (HostNotification) -> Void

    private let lock = NSLock()
    private var subscribers: [UUID: Subscriber] = [:]
    private var recent: [HostNotification] = []
    private let recentLimit: Int

    public init(recentLimit: Int = 64) { self.recentLimit = recentLimit }

    public func post(_ notification: HostNotification) {
        let targets: [Subscriber] = lock.withLock {
            recent.append(notification)
            if recent.count > recentLimit { recent.removeFirst(recent.count - recentLimit) }
            return Array(subscribers.values)
        }
        for target in targets { target(notification) }
    }

    public func post(_ name: String, _ payload: [String: JSONValue] = [:]) {
        post(HostNotification(name: name, payload: payload))
    }

    /// Adds a subscriber; keep the token and pass it to `unsubscribe`. With `replay`, the recent
    /// notifications are delivered first, in order.
    @discardableResult
    public func subscribe(replay: Bool = false, _ subscriber: @escaping Subscriber) -> UUID {
        let token = UUID()
        let backlog: [HostNotification] = lock.withLock {
            subscribers[token] = subscriber
            return replay ? recent : []
        }
        for notification in backlog { subscriber(notification) }
        return token
    }

    public func unsubscribe(_ token: UUID) {
        _ = lock.withLock { subscribers.removeValue(forKey: token) }
    }

    /// The most recent notifications, oldest first.
    public func recentNotifications() -> [HostNotification] { lock.withLock { recent } }
}
