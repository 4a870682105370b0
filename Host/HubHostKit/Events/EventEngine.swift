import Foundation
import GRDB
import Logging
import Synchronization

/// The event engine: every event in hubhost, whoever produces it, goes through `track`:
/// core values -> session events -> campaign attribution -> durable store (HOLD while augmented) ->
/// augmentation timeline -> NOT_POSTED (or EXPIRED) -> batched delivery.
/// @unchecked: `sessions`, `campaigns` and `identityValues` change only under `trackLock`, held
/// across a whole track (trackBatch's producer thread works for the caller holding it, handing
/// chunks over by semaphore), which a Mutex's closure cannot express; the timeline, the observers
/// and hooks, and the lazily made group commit and background tracker each live in a Mutex; the
/// rest are `let`s.
public final class EventEngine: @unchecked Sendable {
    /// The `events:` settings: those the engine was opened with, and the live keys as the last
    /// reload set them (`HubHost.liveReloadKeys`).
    package var settings: EventSettings { liveSettings.current }
    /// Shared with `delivery`: a reload replaces both at once.
    let liveSettings: LiveSettings<EventSettings>
    /// The durable event store (`events.sqlite` in the data directory).
    public let store: EventStore
    /// Runs the augmentation plugins on each tracked event, within `augmentation_timeout`. A reload
    /// replaces it; each event is augmented wholly by the timeline it started with.
    public var timeline: AugmentationTimeline { currentTimeline.withLock { $0 } }
    private let currentTimeline: Mutex<AugmentationTimeline>
    /// Posts waiting events in batches to the sink (the HTTP collector unless one is given).
    public let delivery: EventDelivery
    private(set) var sessions: SessionTracker
    private(set) var campaigns: CampaignAttribution
    private let state: KeyValueState
    let logger: Logger
    /// The core values (device, OS, app) that are set, read from the settings once.
    private let coreValues: [(field: String, value: PluginValue)]
    /// Session and campaign state change one event at a time. An NSLock, not a Mutex: it is held across a whole
    /// track while other methods read and write `sessions`, `campaigns` and `identityValues` (see above).
    private let trackLock = NSLock()
    /// Who hears of tracked events, and the hooks the host and the runtime set.
    private struct Observers {
        var each: [@Sendable (Event) -> Void] = []
        var batches: [@Sendable ([Event]) -> Void] = []
        var deliveryDue: (@Sendable () -> Void)?
        weak var flushService: PeriodicService?
        var identityProvider: (@Sendable () -> [(field: String, value: PluginValue)])?
    }
    private let observers = Mutex(Observers())

    /// Calls `observer` with every event after it is tracked (stored and augmented).
    public func observe(_ observer: @escaping @Sendable (Event) -> Void) {
        observers.withLock { $0.each.append(observer) }
    }

    /// Calls `observer` once per commit with the events it stored (in tracked order, never empty):
    /// how the campaign engine hears of events. An observer with a cost per call (the campaign
    /// engine re-reads its shared state's version, one SQLite read) pays it once per batch, not
    /// once per event: per event, that read was 86% of `bench events`' instructions.
    public func observeBatches(_ observer: @escaping @Sendable ([Event]) -> Void) {
        observers.withLock { $0.batches.append(observer) }
    }

    private func notify(_ events: [Event]) {
        RuntimeMetrics.eventsTracked(events.count)
        guard !events.isEmpty else { return }
        let (each, batches) = observers.withLock { ($0.each, $0.batches) }
        for event in events { for observer in each { observer(event) } }
        for observer in batches { observer(events) }
    }

    /// The `deep_links:` routes `openURL` matches URLs against.
    public let deepLinks: DeepLinkRouter

    /// Opens (creating) `events.sqlite` in `dataDirectory`: a corrupt file is moved aside and logged,
    /// and events a dead process left in HOLD become EXPIRED. Throws when the store cannot be opened.
    /// `HubHost.events()` opens the host's engine; call this only to run an engine of your own.
    package init(
        settings: EventSettings, dataDirectory: String, augmentations: [AugmentationPlugin], pipeline: LogPipeline,
        deepLinks: DeepLinkRouter = DeepLinkRouter(), http: HTTPFetcher = HTTPFetcher(), sink: EventSink? = nil
    ) throws {
        liveSettings = LiveSettings(settings)
        self.deepLinks = deepLinks
        logger = Logger(label: "hubhost.events", pipeline: pipeline)
        coreValues = settings.coreValues.compactMap { core in
            let value = settings.string(core.key)
            return value.isEmpty ? nil : (core.field, PluginValue.string(value))
        }
        let opened = try EventStore.open(path: (dataDirectory as NSString).appendingPathComponent("events.sqlite"), durability: settings.durability)
        store = opened.store
        if let aside = opened.movedAside {
            logger.error(
                "the event database \(opened.store.path) was not a valid SQLite database; it was moved aside to \(aside) and a new one started")
        }
        let recovered = try store.expireStaleHolds(olderThanMs: Clock.wallMs().saturatingSubtracting(Self.holdGraceMs(settings)))
        if recovered > 0 {
            logger.warning(
                "\(recovered) event\(recovered == 1 ? " was" : "s were") left in HOLD by an earlier run; now EXPIRED and sent as they were")
        }
        state = try KeyValueState(store: store)
        sessions = try SessionTracker(settings: settings, state: state)
        campaigns = try CampaignAttribution(settings: settings, state: state)
        currentTimeline = Mutex(AugmentationTimeline(plugins: augmentations, timeoutSeconds: settings.augmentationTimeout, logger: logger))
        delivery = EventDelivery(
            liveSettings: liveSettings, store: store, sink: sink ?? HTTPCollectorSink(settings: settings, http: http),
            logger: logger)
    }

    /// Applies a reload's `events:` section, whose changes are live keys only (`HubHost.reload`
    /// checks): delivery reads the new values from its next flush, events tracked from now on get
    /// the new augmentation_timeout, and the delivery service's next round comes after the new
    /// flush_interval.
    package func applyLiveSettings(_ new: EventSettings) {
        liveSettings.replace(new)
        replaceAugmentations(timeline.plugins)
        observers.withLock { $0.flushService }?.setInterval(new.flushInterval)
    }

    /// Remembers the service made by `deliveryService` (weakly: the runtime owns it), so a reload
    /// can change its interval.
    func attachFlushService(_ service: PeriodicService) {
        observers.withLock { $0.flushService = service }
    }

    /// Augments events tracked from now on with `augmentations` (a reload changed them); an event
    /// already in its timeline finishes with the old plugins.
    package func replaceAugmentations(_ augmentations: [AugmentationPlugin]) {
        let replacement = AugmentationTimeline(plugins: augmentations, timeoutSeconds: settings.augmentationTimeout, logger: logger)
        currentTimeline.withLock { $0 = replacement }
    }

    /// Tracks one event and returns it as stored after augmentation. It is on disk (HOLD or
    /// NOT_POSTED) before augmentation starts, so an acknowledged event survives a crash.
    /// Posts a batch when `cache_size` events are waiting, when `autoFlush`.
    @discardableResult
    public func track(_ event: Event, autoFlush: Bool = true) throws -> Event {
        try Self.check(event)  // a bad event is refused before anything is stored
        let timeline = self.timeline  // one set of plugins for the whole event
        let prepared: [Event] = try trackLock.withLock {
            try reloadState()  // another process on the data directory may have moved the session on
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
            do {
                try store.insert(all, states: pendingStates())
            } catch {
                try? reloadState(force: true)  // the state change was in the rolled-back transaction
                if let database = error as? DatabaseError, database.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
                    throw DuplicateEventID(id: event.id, reason: "an event with this id is already stored")
                }
                throw error
            }
            return all
        }
        var tracked = prepared.last!
        if tracked.status == .hold {
            tracked = timeline.run(tracked)
            try store.update(tracked)
        }
        notify(prepared.dropLast() + [tracked])
        if autoFlush { _ = try flushIfDue() } else { try signalIfDeliveryDue() }
        return tracked
    }

    /// Tracks many events with one commit per batch (augmentation still per event): the fast path.
    /// The batch is cut into chunks: while the database's single writer inserts one chunk, the
    /// augmentation plugins and the JSON encoding work on the next, on the other cores. Every
    /// event shares one augmentation deadline, counted from the batch's start.
    ///
    /// Stored whole or not at all: one transaction, so a failure (a repeated id, a full disk,
    /// another process holding the database past its busy timeout) leaves none of them stored.
    /// Returns the caller's events as stored (augmented), in order. Long: sessions, augmentation,
    /// encoding and the one transaction are steps of one batch that share its events and states.
    @discardableResult
    public func trackBatch(_ events: [Event]) throws -> [Event] {
        try trackBatch(events, waitForDisk: true)
    }

    /// `trackBatch`, committed without waiting for the disk when `waitForDisk` is false (the
    /// commit survives kill -9 of hubhost, not a power loss: `events.durability: process` for this
    /// batch alone): for events nobody waits on, tracked in the background (`trackInBackground`,
    /// the hub's page views).
    @discardableResult
    package func trackBatch(_ events: [Event], waitForDisk: Bool) throws -> [Event] {
        for event in events { try Self.check(event) }  // all or nothing, before anything is stored
        // An id given twice is found by the store's unique index (the whole batch rolls back),
        // then named below: a set of every id up front was a tenth of the writer's own work.
        return try trackLock.withLock {
            try reloadState()  // as in track: the session and campaign state as stored now
            let chunkSize = 512
            let chunkCount = (events.count + chunkSize - 1) / chunkSize
            /// One chunk's result: written once by the producer, read by the writer after `ready`
            /// (the semaphore orders the two; the slots array itself never changes).
            /// @unchecked: a DispatchSemaphore hand-off on the hot path: `done` is written by the producer
            /// before it signals `ready` and read only after `ready.wait()`; `ready` is a `let`.
            final class Slot: @unchecked Sendable {
                /// `own`: where the caller's events are in `events` (the sessions' come between).
                var done: Result<(events: [Event], attributes: [ArraySlice<UInt8>], own: [Int]), Error>?
                let ready = DispatchSemaphore(value: 0)
            }
            let slots = (0..<chunkCount).map { _ in Slot() }
            let timeline = self.timeline
            let deadline = DispatchTime.now() + .nanoseconds(Int(SafeTime.durationNs(timeline.timeoutSeconds)))
            // The producer prepares (core values, sessions, campaign attribution: in order, one
            // thread), augments and encodes chunk after chunk while the writer stores the previous
            // one. It may touch the engine's session and campaign state: this call holds trackLock
            // until every slot was consumed. A thread of its own, not the shared dispatch pool:
            // callers blocked on trackLock may hold every pool thread. It never owns the engine
            // (unowned: this call keeps it alive and waits for `producerDone`), so the engine's
            // last release can never happen on this thread, e.g. while the process exits.
            let producerDone = DispatchSemaphore(value: 0)
            let produce: @Sendable () -> Void = { [unowned self] in
                defer { producerDone.signal() }
                for k in 0..<chunkCount {
                    slots[k].done = Result {
                        var chunk: [Event] = []
                        chunk.reserveCapacity(chunkSize + 1)
                        var own: [Int] = []
                        own.reserveCapacity(chunkSize)
                        for var event in events[k * chunkSize..<min(events.count, (k + 1) * chunkSize)] {
                            fillCoreValues(&event)
                            chunk += sessions.events(before: event)
                            campaigns.annotate(&event)
                            own.append(chunk.count)
                            chunk.append(event)
                        }
                        if !timeline.isEmpty { timeline.run(inPlace: &chunk, deadline: deadline) }
                        let prepared = chunk
                        // A small chunk (a group commit of single-event requests) is encoded here:
                        // waking the other cores costs more than the few microseconds it spreads.
                        // Through the run kept from the batches before: the requests' events carry
                        // the same attributes, which it copies rather than writes again.
                        if prepared.count < 64 {
                            let (text, places) = AttributeJSON.encodeUTF8(prepared[...], run: &smallChunkRun)
                            if smallChunkRun!.heldBytes > Self.smallChunkRunLimit { smallChunkRun = EncodingRun() }  // after a large event
                            return (prepared, places.map { text[$0] }, own)
                        }
                        // In runs of 64 events, each with its own EncodingRun (the events of a
                        // run mostly carry the same attributes at the same places): runs, not
                        // single events, so the text written for the event before is reused;
                        // several per core, so a core the writer holds for a while does not leave
                        // the others waiting for its run. A run's texts share one array.
                        let run = 64
                        var encoded = [ArraySlice<UInt8>](repeating: [], count: prepared.count)
                        encoded.withUnsafeMutableBufferPointer { buffer in
                            nonisolated(unsafe) let output = buffer.baseAddress!
                            DispatchQueue.concurrentPerform(iterations: (prepared.count + run - 1) / run) { part in
                                let events = part * run..<min(prepared.count, (part + 1) * run)
                                var encoding: EncodingRun? = EncodingRun()
                                let (text, places) = AttributeJSON.encodeUTF8(prepared[events], run: &encoding)
                                for (k, place) in places.enumerated() { output[events.lowerBound + k] = text[place] }
                            }
                        }
                        return (prepared, encoded, own)
                    }
                    slots[k].ready.signal()
                }
            }
            // One chunk (every HTTP request, most group commits) has nothing to overlap with: it
            // is prepared on this thread, without a thread start and two hand-overs.
            if chunkCount == 1 { produce() } else { Thread.detachNewThread(produce) }
            var next = 0
            var stored: [Event] = []
            stored.reserveCapacity(events.count + 1)
            var own: [Int] = []  // where the caller's events are in `stored`
            own.reserveCapacity(events.count)
            do {
                defer {  // no chunk, and no producer, outlives this block (the catches below re-read state)
                    while next < chunkCount {
                        slots[next].ready.wait()
                        next += 1
                    }
                    producerDone.wait()
                }
                try store.insertStreaming(states: { self.pendingStates() }, waitForDisk: waitForDisk) {
                    guard next < chunkCount else { return nil }
                    slots[next].ready.wait()
                    let chunk = try slots[next].done!.get()
                    next += 1
                    for position in chunk.own { own.append(stored.count + position) }
                    stored += chunk.events
                    return (chunk.events, chunk.attributes)
                }
            } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
                // Rolled back: the session/campaign state the producer changed was not written
                // either, so re-read it rather than keep what no transaction holds.
                try reloadState(force: true)
                if let repeated = Self.firstRepeatedID(in: events) { throw DuplicateEventID(id: repeated, reason: "it appears twice in the input") }
                throw DuplicateEventID(id: nil, reason: "an event with the same id is already stored")
            } catch {
                try? reloadState(force: true)
                throw error
            }
            notify(stored)
            return own.count == stored.count ? stored : own.map { stored[$0] }
        }
    }

    /// The first id that appears twice in `events`, if one does.
    private static func firstRepeatedID(in events: [Event]) -> String? {
        guard events.count > 1 else { return nil }  // most requests hold one event: no set to build
        var seen = Set<String>(minimumCapacity: events.count)
        return events.first { !seen.insert($0.id).inserted }?.id
    }

    /// Tracks a batch as `trackBatch` does (whole or not at all, augmented, durable before it
    /// returns), together with the batches other callers hand over at the same time: one writer
    /// commits everything that gathered while the previous commit was made (see GroupCommit), so
    /// concurrent callers share one transaction and one fsync instead of queueing for one each.
    /// What the HTTP API's `POST /v1/events` calls. Suspends (no thread waits) until the commit
    /// that holds these events returned; returns them as stored, in order.
    public func trackGrouped(_ events: [Event]) async throws -> [Event] {
        for event in events { try Self.check(event) }  // refused alone, before it can join a group
        if let repeated = Self.firstRepeatedID(in: events) { throw DuplicateEventID(id: repeated, reason: "it appears twice in the input") }
        let committer = groupCommit.withLock { committer in
            if let committer { return committer }
            let made = GroupCommit(
                track: { [unowned self] events in try self.trackBatch(events) },  // unowned: callers keep the engine while they wait
                committed: { [unowned self] in try? self.signalIfDeliveryDue() })  // once per commit, not per request
            committer = made
            return made
        }
        // Unsafe (not checked): GroupCommit answers each submission exactly once, and a checked
        // continuation allocated a box per request on top of the task's own.
        return try await withUnsafeThrowingContinuation { continuation in
            committer.submit(.init(events: events, answer: { continuation.resume(with: $0) }))
        }
    }

    /// Made on first use (`trackGrouped`).
    private let groupCommit = Mutex<GroupCommit?>(nil)

    /// An event id that is already stored, or given twice in one input: nothing was stored.
    public struct DuplicateEventID: Error, CustomStringConvertible {
        /// The refused id; nil when the input itself held no usable id.
        public var id: String?
        /// Why the id was refused (already stored, or given twice).
        public var reason: String
        /// The refusal as one line for logs and HTTP answers.
        public var description: String { "event id \(id.map { "'\($0)' " } ?? "")refused: \(reason); nothing was stored" }
    }

    /// Made on first use. Its own lock, never trackLock: a caller enqueueing must not wait for a batch being written.
    private let backgroundTracker = Mutex<BackgroundTracker?>(nil)

    private var background: BackgroundTracker {
        backgroundTracker.withLock { tracker in
            if let tracker { return tracker }
            let made = BackgroundTracker(
                write: { [unowned self] events in try self.trackBatch(events, waitForDisk: false) },  // nobody waits on these
                failed: { [unowned self] error, events in  // unowned, as `write`: the drain thread must own nothing heavy
                    self.logger.error(
                        "\(events.count) event\(events.count == 1 ? "" : "s") tracked in the background could not be stored: \(error)")
                })
            tracker = made
            return made
        }
    }

    /// Tracks `event` without waiting for the disk (see BackgroundTracker): it is written with
    /// others in one batch within milliseconds. Returns the event as handed over (its id is final).
    /// For page-view metrics and the like; `track` is durable before it returns.
    @discardableResult
    public func trackInBackground(_ event: Event) -> Event {
        background.enqueue(event)
        return event
    }

    /// Waits until every event tracked in the background so far is stored. Reads that must see
    /// them (lists, stats, delivery, shutdown) call it first.
    public func waitForBackgroundWrites() {
        background.waitUntilWritten()
    }

    /// Opening a URL (a deep link): matches the deep link routes, reads the campaign parameters, and
    /// tracks a named event "Open URL" with the URL, the route and the parameters. A URL that matches
    /// no route still produces its event (with its query parameters).
    @discardableResult
    public func openURL(_ url: String) throws -> (event: Event, campaignNote: String?) {
        let match = deepLinks.match(url)
        if let refusal = match.refusal { logger.warning("deep link \(url): \(refusal)") }
        let note = try trackLock.withLock {
            try reloadState()
            return try campaigns.take(parameters: match.parameters, nowMs: Clock.wallMs())
        }
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
        let note = try trackLock.withLock {
            try reloadState()
            return try campaigns.take(parameters: payload, nowMs: Clock.wallMs())
        }
        if let note { logger.warning("\(note)") }
        var event = Event(type: opened ? .notificationOpened : .notificationReceived, name: opened ? "Notification Opened" : "Notification Received")
        for (key, value) in payload.sorted(by: { $0.key < $1.key }) { event.set(key, .string(value)) }
        return try track(event)
    }

    /// Called when `cache_size` events wait and the tracking caller does not post them itself:
    /// the runtime's delivery service (EventDeliveryService) sets it to wake up, so delivery never
    /// runs on a request's path. Called on the tracking thread; must return at once.
    public var onDeliveryDue: (@Sendable () -> Void)? {
        get { observers.withLock { $0.deliveryDue } }
        set { observers.withLock { $0.deliveryDue = newValue } }
    }

    /// Wakes the delivery service when cache_size events wait (what an HTTP route calls after
    /// tracking, instead of posting on the request's path).
    public func signalDeliveryIfDue() throws { try signalIfDeliveryDue() }

    func signalIfDeliveryDue() throws {
        // Nowhere to deliver (no collector_url, a sink that cannot deliver): a wake would only run
        // a round that sends nothing, and that round's write transactions (stale holds, purge)
        // competed with the group commits for the single writer after every commit (7% of the
        // server's CPU under wrk). The delivery service's periodic round still runs them.
        guard let wake = onDeliveryDue, delivery.sink.unavailableReason == nil, try cacheSizeWaiting() else { return }
        wake()
    }

    /// Posts when `cache_size` events are waiting (what a CLI command does after tracking); nil when not due.
    @discardableResult
    public func flushIfDue() throws -> DeliveryReport? {
        guard try cacheSizeWaiting() else { return nil }
        return flush()
    }

    /// Waits for background writes, then posts every waiting event now, in batches; blocks (call it
    /// off the concurrency pool, e.g. on the BlockingPool). Returns what was sent and what failed.
    public func flush() -> DeliveryReport {
        waitForBackgroundWrites()
        return delivery.flush()
    }

    /// Purges SUCCESSFULLY_POSTED events older than `expire_local_events_after`.
    @discardableResult
    public func purge(nowMs: Int64 = Clock.wallMs()) throws -> Int {
        try store.purgePosted(olderThanMs: nowMs.saturatingSubtracting(SafeTime.durationMs(settings.expireLocalEventsAfter)))
    }

    /// Whether at least cache_size events wait: counts no further than that, so the check after
    /// each commit costs the same however many events the store holds.
    func cacheSizeWaiting() throws -> Bool {
        try store.waitingAtLeast(settings.cacheSize)
    }

    /// The session and campaign state that preparing events changed, written in their transaction.
    private func pendingStates() -> [(key: String, json: String)] {
        [sessions.pendingWrite, campaigns.takePendingWrite()].compactMap { $0 }
    }

    /// How long an event may stay in HOLD before another run treats its augmenting process as dead:
    /// the augmentation deadline plus a margin for the store writes around it.
    static func holdGraceMs(_ settings: EventSettings) -> Int64 {
        SafeTime.durationMs(settings.augmentationTimeout + 10)
    }

    /// Events left in HOLD past the grace by a process that died become EXPIRED (sent as they
    /// were): at start-up, and periodically by the delivery service for another process's crash.
    @discardableResult
    public func expireStaleHolds(nowMs: Int64 = Clock.wallMs()) throws -> Int {
        try store.expireStaleHolds(olderThanMs: nowMs.saturatingSubtracting(Self.holdGraceMs(settings)))
    }

    /// Re-reads the session and campaign state from the store: before each track when another
    /// connection committed since (several processes share one data directory, and each writes the
    /// state with its events), and always after a rolled-back batch (`force`: memory may hold what
    /// the rollback undid). When nothing else wrote, memory is what this engine last committed and
    /// the two reads (and their JSON decoding) are skipped: one PRAGMA instead, where the reads
    /// were a fixed cost of every group commit on the single writer. Caller holds trackLock.
    private func reloadState(force: Bool = false) throws {
        identityValues = identitySource?() ?? []
        let changed = try store.committedByAnotherConnection()
        guard force || changed else { return }
        sessions = try SessionTracker(settings: settings, state: state)
        campaigns = try CampaignAttribution(settings: settings, state: state)
    }

    /// What every event must pass before anything of it is stored: the limits (times in range,
    /// sizes) and a purchase's typed properties.
    public static func check(_ event: Event) throws {
        try EventLimits.check(event)
        try Purchase.validate(event)
    }

    private func fillCoreValues(_ event: inout Event) {
        // The event's own attributes, with room for the augmentation plugins' (each appends a few,
        // in place when there is room): copied once here rather than grown again by each.
        if !timeline.isEmpty { event.attributes.reserveCapacity(event.attributes.count + identityValues.count + coreValues.count + 16) }
        for (field, value) in identityValues { event.fill(field, value) }  // before the configured mobile_user_id: the set-up one wins
        for (field, value) in coreValues { event.fill(field, value) }
    }

    /// The identity's values ("Recipient Id", "Mobile User Id") once known, read before each track
    /// (the identity may change in another process on the data directory). Set by the host when the
    /// mobile identity manager is in use.
    public var identitySource: (@Sendable () -> [(field: String, value: PluginValue)])? {
        get { observers.withLock { $0.identityProvider } }
        set { observers.withLock { $0.identityProvider = newValue } }
    }
    /// The encoding run of small chunks (`trackBatch`), kept from one batch to the next (caller
    /// holds trackLock; one producer at a time): consecutive requests' events carry the same
    /// attributes, so a batch of a few events copies their text from the batch before.
    private var smallChunkRun: EncodingRun? = EncodingRun()
    /// The memory a kept run may hold between batches (its two texts); a larger one, left by a
    /// large event, is let go.
    static let smallChunkRunLimit = 256 * 1024

    /// The identity values of the event being tracked (caller holds trackLock).
    private var identityValues: [(field: String, value: PluginValue)] = []

}
