import Foundation
import Logging

/// The Content Hub's metrics (the ZBiM SDK's "Metrics"): hub presented, channel viewed, article
/// viewed and local notification handled become named events in the event pipeline, each carrying
/// the advertiser ID the advertiser-ID delegates decide (no "Advertiser ID" attribute at all when ad
/// tracking is limited or no delegate has one).
///
/// The hub engine does not know the event engine: HubHost.hub() hands it this sink with two
/// closures, one that tracks an event and one that decides the advertiser ID. A sink without them
/// (`HubMetrics()`) drops the events, which keeps the engine usable on its own.
///
/// The entry point (the SDK's setContentHubEntryPoint) is set before presenting, used by the next
/// presentation only (its "Hub Presented" event and the channel and article views of that hub
/// session), then reset.
/// Safe to share: `pendingEntryPoint` and `sessionEntryPoint`, its only mutable fields, are read and written under
/// `lock`; the rest are `let`s of Sendable types (the closures are @Sendable).
public final class HubMetrics: @unchecked Sendable {
    public typealias Track = @Sendable (Event) throws -> Event
    public typealias DecideAdvertiserID = @Sendable () -> AdvertiserIDDecision

    /// Event names.
    public enum Name {
        public static let hubPresented = "Hub Presented"
        public static let channelViewed = "Channel Viewed"
        public static let articleViewed = "Article Viewed"
        public static let localNotificationHandled = "Local Notification Handled"
    }

    /// Attribute names.
    public enum Attribute {
        public static let hub = "Hub"
        public static let channel = "Channel"
        public static let article = "Article"
        public static let title = "Title"
        public static let target = "Target"
        public static let entryPoint = "Entry Point"
        public static let timeSpent = "Time Spent"
        public static let advertiserID = "Advertiser ID"
        public static let notification = "Notification"
        public static let message = "Message"
        public static let actionURI = "Action URI"
        public static let showAlert = "Show Alert"
    }

    /// The event pipeline behind the sink is gone (its host was released).
    public struct SinkGone: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "the host that owned the event pipeline was shut down" }
    }

    private let track: Track?
    private let decideAdvertiserID: DecideAdvertiserID?
    private let logger: Logger?
    private let lock = NSLock()
    private var pendingEntryPoint: String?
    private var sessionEntryPoint: String?

    /// With `track` nil, events are built but not tracked.
    public init(track: Track? = nil, advertiserID: DecideAdvertiserID? = nil, logger: Logger? = nil) {
        self.track = track
        decideAdvertiserID = advertiserID
        self.logger = logger
    }

    /// Sets the entry point for the next presentation (nil clears it).
    public func setEntryPoint(_ entryPoint: String?) {
        lock.withLock { pendingEntryPoint = entryPoint.flatMap { $0.isEmpty ? nil : $0 } }
    }

    /// The entry point of the current hub session (the last presentation), nil when it had none.
    public var currentEntryPoint: String? { lock.withLock { sessionEntryPoint } }

    @discardableResult
    func hubPresented(_ presentation: Presentation) -> Event? {
        hubPresented(presentation, entryPoint: takePendingEntryPoint())
    }

    /// Takes the entry point waiting for the next presentation (it is reset): for a presentation
    /// whose "Hub Presented" is tracked later, in order with its page views (HubViewRecorder).
    func takePendingEntryPoint() -> String? {
        lock.withLock {
            defer { pendingEntryPoint = nil }
            return pendingEntryPoint
        }
    }

    /// "Hub Presented" with the entry point taken when it was presented, which from now on is the
    /// session's (its channel and article views carry it).
    @discardableResult
    func hubPresented(_ presentation: Presentation, entryPoint: String?) -> Event? {
        RuntimeMetrics.hubPageView("hub")
        lock.withLock { sessionEntryPoint = entryPoint }
        var event = Event(type: .namedEvent, name: Name.hubPresented)
        event.set(Attribute.hub, .string(presentation.hubID))
        event.set(Attribute.title, .string(presentation.hubTitle))
        if let target = presentation.target { event.set(Attribute.target, .string(target.description)) }
        if let entryPoint { event.set(Attribute.entryPoint, .string(entryPoint)) }
        return send(event)
    }

    @discardableResult
    func channelViewed(_ channel: ContentBundle.Channel) -> Event? {
        RuntimeMetrics.hubPageView("channel")
        var event = Event(type: .namedEvent, name: Name.channelViewed)
        event.set(Attribute.hub, .string(channel.hubID))
        event.set(Attribute.channel, .string(channel.id))
        event.set(Attribute.title, .string(channel.title))
        if let entryPoint = currentEntryPoint { event.set(Attribute.entryPoint, .string(entryPoint)) }
        return send(event)
    }

    @discardableResult
    func articleViewed(_ article: ContentBundle.Article, hubID: String?, timeSpentMs: Int64?) -> Event? {
        RuntimeMetrics.hubPageView("article")
        var event = Event(type: .namedEvent, name: Name.articleViewed)
        if let hubID { event.set(Attribute.hub, .string(hubID)) }
        event.set(Attribute.channel, .string(article.channelID))
        event.set(Attribute.article, .string(article.id))
        event.set(Attribute.title, .string(article.title))
        if let timeSpentMs { event.set(Attribute.timeSpent, .int(max(0, timeSpentMs))) }
        if let entryPoint = currentEntryPoint { event.set(Attribute.entryPoint, .string(entryPoint)) }
        return send(event)
    }

    @discardableResult
    func localNotificationHandled(_ notification: ContentBundle.ScheduledNotification, showAlert: Bool) -> Event? {
        var event = Event(type: .namedEvent, name: Name.localNotificationHandled)
        event.set(Attribute.notification, .string(notification.id))
        event.set(Attribute.message, .string(notification.message))
        event.set(Attribute.actionURI, .string(notification.actionURI))
        event.set(Attribute.showAlert, .bool(showAlert))
        return send(event)
    }

    /// Adds the advertiser ID and tracks the event; returns it as tracked (nil when there is no
    /// pipeline or tracking failed: metrics never fail the hub itself, a failure is logged).
    private func send(_ event: Event) -> Event? {
        var event = event
        if let id = decideAdvertiserID?().advertiserID { event.set(Attribute.advertiserID, .string(id)) }
        guard let track else { return nil }
        do {
            return try track(event)
        } catch {
            logger?.error("hub metrics: cannot track '\(event.name)': \(error)")
            return nil
        }
    }
}
