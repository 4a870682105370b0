import Foundation
import Synchronization

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
    /// When it was posted, in ms since 1970.
    public var timestampMs: Int64

    /// A notification named `name`, stamped now unless `timestampMs` is given.
    public init(name: String, payload: [String: JSONValue] = [:], timestampMs: Int64 = Clock.wallMs()) {
        self.name = name
        self.payload = payload
        self.timestampMs = timestampMs
    }

    /// The names this hubhost posts.
    public enum Name {
        /// HubState.isDownloadingContent changed; payload: the new value.
        public static let downloadingContentStateChanged = "DownloadingContentStateChanged"
        /// HubState.isDisplayingContentHub changed; payload: the new value.
        public static let displayingContentHubStateChanged = "DisplayingContentHubStateChanged"
        /// HubState.isReady changed; payload: the new value.
        public static let readyStateChanged = "ReadyStateChanged"
        /// HubState.isDisabled changed; payload: the new value.
        public static let disabledStateChanged = "DisabledStateChanged"
        /// HubState.notPartOfPilotProgram changed; payload: the new value.
        public static let notPartOfPilotProgramStateChanged = "NotPartOfPilotProgramStateChanged"
        /// Content download progress.
        public static let downloadProgressChanged = "DownloadProgressChanged"
        /// The content a hub session shows changed.
        public static let contentTypeChanged = "ContentTypeChanged"
        /// The content asked the app to act (an app action link).
        public static let appAction = "AppAction"
        /// A local notification of the content bundle came due.
        public static let localNotificationDue = "LocalNotificationDue"
        /// An engine logged an error.
        public static let error = "Error"
    }
}

/// The host's notification bus: engines post, front ends subscribe. Delivery is synchronous on the
/// poster's thread, so a subscriber must not block (the server's stream hands each notification to
/// its own async stream). Each subscriber also gets the most recent notifications on subscribing
/// (`replay`), so that a client that connects just after a change still sees it.
/// Sendable: the subscribers and the recent notifications live in a Mutex; subscribers are called
/// outside it and are @Sendable.
public final class HostNotifications: Sendable {
    /// Hears each notification on the poster's thread; must not block.
    public typealias Subscriber = @Sendable (HostNotification) -> Void

    private struct State {
        var subscribers: [UUID: Subscriber] = [:] {
            didSet { targets = Array(subscribers.values) }
        }
        /// The subscribers as a list, made when they change: a post (one per hub page view) takes it
        /// as it is instead of copying the dictionary's values each time.
        var targets: [Subscriber] = []
        var recent: [HostNotification] = []
    }
    private let state = Mutex(State())
    private let recentLimit: Int

    /// A bus that keeps the last `recentLimit` notifications for `replay`.
    public init(recentLimit: Int = 64) { self.recentLimit = recentLimit }

    /// Keeps `notification` among the recent ones and calls every subscriber with it, on this thread.
    public func post(_ notification: HostNotification) {
        let targets: [Subscriber] = state.withLock { state in
            state.recent.append(notification)
            if state.recent.count > recentLimit { state.recent.removeFirst(state.recent.count - recentLimit) }
            return state.targets
        }
        for target in targets { target(notification) }
    }

    /// Posts a notification named `name` with `payload`, stamped now.
    public func post(_ name: String, _ payload: [String: JSONValue] = [:]) {
        post(HostNotification(name: name, payload: payload))
    }

    /// Adds a subscriber; keep the token and pass it to `unsubscribe`. With `replay`, the recent
    /// notifications are delivered first, in order.
    @discardableResult
    public func subscribe(replay: Bool = false, _ subscriber: @escaping Subscriber) -> UUID {
        let token = UUID()
        let backlog: [HostNotification] = state.withLock { state in
            state.subscribers[token] = subscriber
            return replay ? state.recent : []
        }
        for notification in backlog { subscriber(notification) }
        return token
    }

    /// Removes the subscriber `subscribe` returned `token` for; an unknown token does nothing.
    public func unsubscribe(_ token: UUID) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: token) }
    }

    /// The most recent notifications, oldest first.
    public func recentNotifications() -> [HostNotification] { state.withLock { $0.recent } }
}
