import Foundation
import Logging
import Synchronization

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
/// Sendable: the two entry points live in a Mutex; the rest are `let`s of Sendable types (the closures are @Sendable).
public final class HubMetrics: Sendable {
    /// Tracks one metrics event and returns it as tracked (e.g. `EventEngine.trackInBackground`); a throw is logged, never
    /// passed to the hub's caller.
    public typealias Track = @Sendable (Event) throws -> Event
    /// Decides the advertiser ID events carry (the advertiser-ID delegates); no ID: the attribute is left out.
    public typealias DecideAdvertiserID = @Sendable () -> AdvertiserIDDecision

    /// Event names.
    public enum Name {
        /// A hub was presented: `Hub`, `Title`, `Target` (the URI opened, if any), `Entry Point` (if set).
        public static let hubPresented = "Hub Presented"
        /// A channel page was viewed: `Hub`, `Channel`, `Title`, `Entry Point` (the session's, if any).
        public static let channelViewed = "Channel Viewed"
        /// An article page was viewed: `Hub`, `Channel`, `Article`, `Title`, `Time Spent`, `Entry Point` (the session's, if any).
        public static let articleViewed = "Article Viewed"
        /// A local notification the bundle scheduled was handled: `Notification`, `Message`, `Action URI`, `Show Alert`.
        public static let localNotificationHandled = "Local Notification Handled"
    }

    /// Attribute names.
    public enum Attribute {
        /// The hub's id (`ContentBundle.Hub.id`), e.g. `news`.
        public static let hub = "Hub"
        /// The channel's id, e.g. `news/sports`.
        public static let channel = "Channel"
        /// The article's id, e.g. `news/sports/final-score`.
        public static let article = "Article"
        /// The title of the hub, channel or article presented or viewed.
        public static let title = "Title"
        /// The URI a presentation was asked to open (`zbimdb://...`); absent when none was.
        public static let target = "Target"
        /// The entry point the app set before presenting (`setEntryPoint`), on the presentation and its session's views.
        public static let entryPoint = "Entry Point"
        /// How long the article was read, in ms (an integer, 0 or more); absent when not measured.
        public static let timeSpent = "Time Spent"
        /// The advertiser ID the delegates decided; absent when ad tracking is limited or no delegate has one.
        public static let advertiserID = "Advertiser ID"
        /// The handled notification's id (`ContentBundle.ScheduledNotification.id`).
        public static let notification = "Notification"
        /// The handled notification's message.
        public static let message = "Message"
        /// The handled notification's action URI, the one presented.
        public static let actionURI = "Action URI"
        /// Whether the user was first shown the message as an alert (a bool; false: the user had already chosen to act).
        public static let showAlert = "Show Alert"
    }

    /// The event pipeline behind the sink is gone (its host was released).
    public struct SinkGone: Error, CustomStringConvertible {
        /// For a `Track` closure whose host is gone to throw; the metrics sink logs it.
        public init() {}
        public var description: String { "the host that owned the event pipeline was shut down" }
    }

    /// Tracks events many at once: whole or not at all, stored when it returns (the host's commits
    /// without waiting for the disk: `EventEngine.trackBatch(_:waitForDisk:)`).
    public typealias TrackBatch = @Sendable ([Event]) throws -> [Event]

    private let track: Track?
    private let trackBatch: TrackBatch?
    private let decideAdvertiserID: DecideAdvertiserID?
    private let logger: Logger?
    /// The entry point waiting for the next presentation, and the current hub session's.
    private let entryPoints = Mutex<(pending: String?, session: String?)>((nil, nil))

    /// With `track` nil, events are built but not tracked. `trackBatch` tracks the page-view
    /// recorder's batches (`send(batch:)`); without it they go through `track` one by one.
    public init(track: Track? = nil, trackBatch: TrackBatch? = nil, advertiserID: DecideAdvertiserID? = nil, logger: Logger? = nil) {
        self.track = track
        self.trackBatch = trackBatch
        decideAdvertiserID = advertiserID
        self.logger = logger
    }

    /// Sets the entry point for the next presentation (nil clears it).
    public func setEntryPoint(_ entryPoint: String?) {
        entryPoints.withLock { $0.pending = entryPoint.flatMap { $0.isEmpty ? nil : $0 } }
    }

    /// The entry point of the current hub session (the last presentation), nil when it had none.
    public var currentEntryPoint: String? { entryPoints.withLock { $0.session } }

    @discardableResult
    func hubPresented(_ presentation: Presentation) -> Event? {
        hubPresented(presentation, entryPoint: takePendingEntryPoint())
    }

    /// Takes the entry point waiting for the next presentation (it is reset): for a presentation
    /// whose "Hub Presented" is tracked later, in order with its page views (HubViewRecorder).
    func takePendingEntryPoint() -> String? {
        entryPoints.withLock { entryPoints in
            defer { entryPoints.pending = nil }
            return entryPoints.pending
        }
    }

    /// "Hub Presented" with the entry point taken when it was presented, which from now on is the
    /// session's (its channel and article views carry it).
    @discardableResult
    func hubPresented(_ presentation: Presentation, entryPoint: String?) -> Event? {
        RuntimeMetrics.hubPageViews("hub")
        return send(hubPresentedEvent(presentation, entryPoint: entryPoint))
    }

    @discardableResult
    func channelViewed(_ channel: ContentBundle.Channel) -> Event? {
        RuntimeMetrics.hubPageViews("channel")
        return send(channelViewedEvent(channel))
    }

    @discardableResult
    func articleViewed(_ article: ContentBundle.Article, hubID: String?, timeSpentMs: Int64?) -> Event? {
        RuntimeMetrics.hubPageViews("article")
        return send(articleViewedEvent(article, hubID: hubID, timeSpentMs: timeSpentMs))
    }

    /// "Hub Presented", not tracked yet (see `send(batch:)`); its entry point is the session's from
    /// now on, so build a batch's events in the order of its views.
    func hubPresentedEvent(_ presentation: Presentation, entryPoint: String?) -> Event {
        entryPoints.withLock { $0.session = entryPoint }
        var event = Event(type: .namedEvent, name: Name.hubPresented)
        event.set(Attribute.hub, .string(presentation.hubID))
        event.set(Attribute.title, .string(presentation.hubTitle))
        if let target = presentation.target { event.set(Attribute.target, .string(target.description)) }
        if let entryPoint { event.set(Attribute.entryPoint, .string(entryPoint)) }
        return event
    }

    /// "Channel Viewed", not tracked yet, with the session's entry point.
    func channelViewedEvent(_ channel: ContentBundle.Channel) -> Event {
        var event = Event(type: .namedEvent, name: Name.channelViewed)
        event.set(Attribute.hub, .string(channel.hubID))
        event.set(Attribute.channel, .string(channel.id))
        event.set(Attribute.title, .string(channel.title))
        if let entryPoint = currentEntryPoint { event.set(Attribute.entryPoint, .string(entryPoint)) }
        return event
    }

    /// "Article Viewed", not tracked yet, with the session's entry point.
    func articleViewedEvent(_ article: ContentBundle.Article, hubID: String?, timeSpentMs: Int64?) -> Event {
        var event = Event(type: .namedEvent, name: Name.articleViewed)
        if let hubID { event.set(Attribute.hub, .string(hubID)) }
        event.set(Attribute.channel, .string(article.channelID))
        event.set(Attribute.article, .string(article.id))
        event.set(Attribute.title, .string(article.title))
        if let timeSpentMs { event.set(Attribute.timeSpent, .int(max(0, timeSpentMs))) }
        if let entryPoint = currentEntryPoint { event.set(Attribute.entryPoint, .string(entryPoint)) }
        return event
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

    /// Tracks the events of recorded page views (built by the `...Event` calls, in order) together:
    /// one advertiser-ID decision for the batch (its views are recorded at the same moment) and
    /// one `trackBatch` call, so one transaction for many views instead of a hand-over per event.
    /// The page-view counter counts them. A batch is stored whole or not at all: when it is
    /// refused, the events that can never be stored (over a limit) are logged and left out, and
    /// the others stored in one more try; a batch that still fails is logged with its size.
    /// Returns the events stored.
    @discardableResult
    func send(batch events: [Event]) -> [Event] {
        guard !events.isEmpty else { return [] }
        var counts = (hub: 0, channel: 0, article: 0)
        for event in events {
            switch event.name {
            case Name.hubPresented: counts.hub += 1
            case Name.channelViewed: counts.channel += 1
            case Name.articleViewed: counts.article += 1
            default: break
            }
        }
        RuntimeMetrics.hubPageViews("hub", counts.hub)
        RuntimeMetrics.hubPageViews("channel", counts.channel)
        RuntimeMetrics.hubPageViews("article", counts.article)
        guard let trackBatch else { return events.compactMap { send($0) } }
        let advertiserID = decideAdvertiserID?().advertiserID
        var batch = events
        if let advertiserID {
            for i in batch.indices { batch[i].set(Attribute.advertiserID, .string(advertiserID)) }
        }
        do {
            return try trackBatch(batch)
        } catch {
            // Stored whole or not at all: leave out the events that can never be stored (each
            // logged), and store the others in one more try.
            let storable = batch.filter { event in
                do {
                    try EventEngine.check(event)
                    return true
                } catch {
                    logger?.error("hub metrics: cannot track '\(event.name)': \(error)")
                    return false
                }
            }
            if storable.count < batch.count, !storable.isEmpty, let stored = try? trackBatch(storable) { return stored }
            logger?.error("hub metrics: \(batch.count) page-view event\(batch.count == 1 ? "" : "s") could not be stored: \(error)")
            return []
        }
    }
}
