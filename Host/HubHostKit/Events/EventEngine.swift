import Foundation
import Logging

/// The event engine: every event in hubhost, whoever produces it, goes through `track`:
/// core values -> session events -> campaign attribution -> durable store (HOLD while augmented) ->
/// augmentation timeline -> NOT_POSTED (or EXPIRED) -> batched delivery.
public final class EventEngine: @unchecked Sendable {
    public let settings: EventSettings
    public let store: EventStore
    public let timeline: AugmentationTimeline
    public let delivery: EventDelivery
    let sessions: SessionTracker
    let campaigns: CampaignAttribution
    let logger: Logger
    /// The core values (device, OS, app) that are set, read from the settings once.
    private let coreValues: [(field: String, value: PluginValue)]
    private let trackLock = NSLock()  // session and campaign state change one event at a time
    private let observerLock = NSLock()
    private var observers: [@Sendable (Event) -> Void] = []

    /// Calls `observer` with every event after it is tracked (stored and augmented): how the
    /// campaign engine hears of events.
    public func observe(_ observer: @escaping @Sendable (Event) -> Void) {
        observerLock.withLock { observers.append(observer) }
    }

    private func notify(_ events: [Event]) {
        let current = observerLock.withLock { observers }
        guard !current.isEmpty else { return }
        for event in events { for observer in current { observer(event) } }
    }

    public let deepLinks: DeepLinkRouter

    public init(settings: EventSettings, dataDirectory: String, augmentations: [AugmentationPlugin], pipeline: LogPipeline,
                deepLinks: DeepLinkRouter = DeepLinkRouter(), http: HTTPFetcher = HTTPFetcher()) throws {
        self.settings = settings
        self.deepLinks = deepLinks
        logger = Logger(label: "hubhost.events", pipeline: pipeline)
        coreValues = settings.coreValues.compactMap { core in
            let value = settings.string(core.key)
            return value.isEmpty ? nil : (core.field, PluginValue.string(value))
        }
        let opened = try EventStore.open(path: (dataDirectory as NSString).appendingPathComponent("events.sqlite"))
        store = opened.store
        if let aside = opened.movedAside {
            logger.error("the event database \(opened.store.path) was not a valid SQLite database; it was moved aside to \(aside) and a new one started")
        }
        let recovered = try store.expireStaleHolds()
        if recovered > 0 {
            logger.warning("\(recovered) event\(recovered == 1 ? " was" : "s were") left in HOLD by an earlier run; now EXPIRED and sent as they were")
        }
        let state = try KeyValueState(store: store)
        sessions = try SessionTracker(settings: settings, state: state)
        campaigns = try CampaignAttribution(settings: settings, state: state)
        timeline = AugmentationTimeline(plugins: augmentations, timeoutSeconds: settings.augmentationTimeout, logger: logger)
        delivery = EventDelivery(settings: settings, store: store, http: http, logger: logger)
    }

    /// Tracks one event and returns it as stored after augmentation. It is on disk (HOLD or
    /// NOT_POSTED) before augmentation starts, so an acknowledged event survives a crash.
    /// Posts a batch when `cache_size` events are waiting, when `autoFlush`.
    @discardableResult
    public func track(_ event: Event, autoFlush: Bool = true) throws -> Event {
        try Purchase.validate(event)  // a bad event is refused before anything is stored
        let prepared: [Event] = try trackLock.withLock {
            var event = event
            fillCoreValues(&event)
            var all = sessions.events(before: event).map { session -> Event in
                var session = session
                fillCoreValues(&session)
                return session
            }
            campaigns.annotate(&event)
            event.status = timeline.isEmpty ? .notPosted : .hold
            all.append(event)
            try store.insert(all, states: pendingStates())
            return all
        }
        var tracked = prepared.last!
        if tracked.status == .hold {
            tracked = timeline.run(tracked)
            try store.update(tracked)
        }
        notify(prepared.dropLast() + [tracked])
        if autoFlush, try waitingCount() >= settings.cacheSize {
            _ = delivery.flush()
        }
        return tracked
    }

    /// Tracks many events with one commit per batch (augmentation still per event): the fast path.
    /// The batch is cut into chunks: while the database's single writer inserts one chunk, the
    /// augmentation plugins and the JSON encoding work on the next, on the other cores. Every
    /// event shares one augmentation deadline, counted from the batch's start.
    public func trackBatch(_ events: [Event]) throws {
        for event in events { try Purchase.validate(event) }  // all or nothing, before anything is stored
        try trackLock.withLock {
            let chunkSize = 512
            let chunkCount = (events.count + chunkSize - 1) / chunkSize
            /// One chunk's result: written once by the producer, read by the writer after `ready`
            /// (the semaphore orders the two; the slots array itself never changes).
            final class Slot: @unchecked Sendable {
                var done: Result<(events: [Event], attributes: [String]), Error>?
                let ready = DispatchSemaphore(value: 0)
            }
            let slots = (0..<chunkCount).map { _ in Slot() }
            let timeline = self.timeline
            let deadline = DispatchTime.now() + .nanoseconds(Int(min(max(0, timeline.timeoutSeconds) * 1e9, Double(Int.max / 2))))
            // The producer prepares (core values, sessions, campaign attribution: in order, one
            // thread), augments and encodes chunk after chunk while the writer stores the previous
            // one. It may touch the engine's session and campaign state: this call holds trackLock
            // until every slot was consumed. A thread of its own, not the shared dispatch pool:
            // callers blocked on trackLock may hold every pool thread. It never owns the engine
            // (unowned: this call keeps it alive and waits for `producerDone`), so the engine's
            // last release can never happen on this thread, e.g. while the process exits.
            let producerDone = DispatchSemaphore(value: 0)
            Thread.detachNewThread { [unowned self] in
                defer { producerDone.signal() }
                for k in 0..<chunkCount {
                    slots[k].done = Result {
                        var chunk: [Event] = []
                        chunk.reserveCapacity(chunkSize + 1)
                        for var event in events[k * chunkSize..<min(events.count, (k + 1) * chunkSize)] {
                            fillCoreValues(&event)
                            chunk += sessions.events(before: event)
                            campaigns.annotate(&event)
                            chunk.append(event)
                        }
                        if !timeline.isEmpty { chunk = timeline.run(batch: chunk, deadline: deadline) }
                        var encoded = [String](repeating: "", count: chunk.count)
                        let prepared = chunk
                        encoded.withUnsafeMutableBufferPointer { buffer in
                            nonisolated(unsafe) let output = buffer.baseAddress!
                            DispatchQueue.concurrentPerform(iterations: prepared.count) { i in
                                output[i] = AttributeJSON.encode(prepared[i].attributes)
                            }
                        }
                        return (prepared, encoded)
                    }
                    slots[k].ready.signal()
                }
            }
            var next = 0
            var stored: [Event] = []
            stored.reserveCapacity(events.count + 1)
            defer {  // no chunk, and no producer, outlives the call
                while next < chunkCount { slots[next].ready.wait(); next += 1 }
                producerDone.wait()
            }
            try store.insertStreaming(states: { self.pendingStates() }) {
                guard next < chunkCount else { return nil }
                slots[next].ready.wait()
                let chunk = try slots[next].done!.get()
                next += 1
                stored += chunk.events
                return chunk
            }
            notify(stored)
        }
    }

    /// Its own lock, never trackLock: a caller enqueueing must not wait for a batch being written.
    private let backgroundLock = NSLock()
    private lazy var background = BackgroundTracker(
        write: { [unowned self] events in try self.trackBatch(events) },
        failed: { [unowned self] error, events in  // unowned, as `write`: the drain thread must own nothing heavy
            self.logger.error("\(events.count) event\(events.count == 1 ? "" : "s") tracked in the background could not be stored: \(error)")
        })

    /// Tracks `event` without waiting for the disk (see BackgroundTracker): it is written with
    /// others in one batch within milliseconds. Returns the event as handed over (its id is final).
    /// For page-view metrics and the like; `track` is durable before it returns.
    @discardableResult
    public func trackInBackground(_ event: Event) -> Event {
        backgroundLock.withLock { background }.enqueue(event)
        return event
    }

    /// Waits until every event tracked in the background so far is stored. Reads that must see
    /// them (lists, stats, delivery, shutdown) call it first.
    public func waitForBackgroundWrites() {
        backgroundLock.withLock { background }.waitUntilWritten()
    }

    /// Opening a URL (a deep link): matches the deep link routes, reads the campaign parameters, and
    /// tracks a named event "Open URL" with the URL, the route and the parameters. A URL that matches
    /// no route still produces its event (with its query parameters).
    @discardableResult
    public func openURL(_ url: String) throws -> (event: Event, campaignNote: String?) {
        let match = deepLinks.match(url)
        if let refusal = match.refusal { logger.warning("deep link \(url): \(refusal)") }
        let note = try trackLock.withLock { try campaigns.take(parameters: match.parameters, nowMs: Clock.wallMs()) }
        if let note { logger.warning("\(note)") }
        var event = Event(type: .namedEvent, name: "Open URL")
        event.set("URL", .string(url))
        if let route = match.route { event.set("Deep Link Route", .string(route)) }
        for (key, value) in match.parameters.sorted(by: { $0.key < $1.key }) { event.set(key, .string(value)) }
        return (try track(event), note ?? match.refusal)
    }

    /// A notification payload (received or opened): reads the campaign parameters, tracks type 48 or 49.
    @discardableResult
    public func notification(opened: Bool, payload: [String: String]) throws -> Event {
        let note = try trackLock.withLock { try campaigns.take(parameters: payload, nowMs: Clock.wallMs()) }
        if let note { logger.warning("\(note)") }
        var event = Event(type: opened ? .notificationOpened : .notificationReceived, name: opened ? "Notification Opened" : "Notification Received")
        for (key, value) in payload.sorted(by: { $0.key < $1.key }) { event.set(key, .string(value)) }
        return try track(event)
    }

    public func flush() -> DeliveryReport {
        waitForBackgroundWrites()
        return delivery.flush()
    }

    /// Purges SUCCESSFULLY_POSTED events older than `expire_local_events_after`.
    @discardableResult
    public func purge(nowMs: Int64 = Clock.wallMs()) throws -> Int {
        try store.purgePosted(olderThanMs: nowMs - Int64(settings.expireLocalEventsAfter * 1000))
    }

    func waitingCount() throws -> Int {
        try store.count(status: .notPosted) + store.count(status: .expired)
    }

    /// The session and campaign state that preparing events changed, written in their transaction.
    private func pendingStates() -> [(key: String, json: String)] {
        [sessions.pendingWrite, campaigns.takePendingWrite()].compactMap { $0 }
    }

    private func fillCoreValues(_ event: inout Event) {
        for (field, value) in coreValues { event.fill(field, value) }
    }

}
