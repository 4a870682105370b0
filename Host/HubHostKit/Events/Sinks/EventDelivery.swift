import Foundation
import Logging

/// What one flush did.
public struct DeliveryReport: Codable, Equatable, Sendable {
    /// Events the sink said delivered in this flush: now SUCCESSFULLY_POSTED.
    public var posted = 0
    /// Events whose attempt failed and that will be retried.
    public var retrying = 0
    /// Events that reached max_num_retries in this flush and are now FAILED_POST.
    public var failed = 0
    /// Batches handed to the sink in this flush (at most `EventDelivery.batchSize` events each).
    public var batches = 0
    /// Why the last attempt failed, if one did.
    public var lastError: String?
    /// True when there was nowhere to post (no collector_url, or `events.sink` names no loaded
    /// event_sink: then lastError says why): events stay NOT_POSTED on disk.
    public var noCollector = false

    /// Adds the counts of a part of the flush (and its last error, if it has one).
    mutating func add(_ part: DeliveryReport) {
        posted += part.posted
        retrying += part.retrying
        failed += part.failed
        if let error = part.lastError { lastError = error }
    }
}

/// Batched delivery through one sink (`events.sink`; the built-in HTTP collector by default): the
/// host's half of every sink. Batches are claimed from the durable store in tracked order, handed to
/// the sink, and each event is marked by the sink's answer: SUCCESSFULLY_POSTED only once the sink
/// says delivered (so none is lost), a retry after exponential backoff with jitter, FAILED_POST
/// after `max_num_retries` attempts or at once when the sink rejects it. Every event carries its
/// id as idempotency key, so a destination that honours it drops what a retry repeats.
/// Safe to share: `flushTimes` is read and written under `lock` (held for the whole flush), the queues and the rest are
/// `let`s; `batchSize` is read under `lock` but set without it, so set it before the delivery is shared (only the sink
/// benchmark sets it).
public final class EventDelivery: @unchecked Sendable {
    /// Read at each use: a reload may change the live keys (retries, backoff, post_timeout).
    var settings: EventSettings { liveSettings.current }
    private let liveSettings: LiveSettings<EventSettings>
    let store: EventStore
    /// Where batches go; a reload may replace it between flushes (`replaceSink`).
    package var sink: EventSink { sinkLock.withLock { currentSink } }
    private var currentSink: EventSink  // under sinkLock
    /// Guards `currentSink`; taken inside `lock` (replaceSink), never the reverse. An NSLock beside `lock`, so the pair
    /// keeps one kind of lock and one order.
    private let sinkLock = NSLock()
    let logger: Logger
    /// One flush at a time: held over a whole flush, which calls out to the store and the sink. An NSLock, not a
    /// Mutex: it serializes that work more than it guards state, and a Mutex here is never held over calls out.
    private let lock = NSLock()
    /// A deliver call that overran post_timeout and has not returned (under `lock`): nothing more
    /// is handed to the sink until it does.
    private var overrunDelivery: PendingSinkDelivery?
    /// Where each claimed batch's sink messages are built (PreparedSinkMessages).
    private let prepareQueue = DispatchQueue(label: "hubhost.events.sink-messages")
    /// Events per batch (at most EventSinkPlugin.maxBatch).
    public var batchSize = 100

    /// Where the flushes' time went, added up since the delivery was made: what `hubhost bench
    /// sinks` reports beside each sink's rate, to tell a slow sink from a slow store.
    public struct Times: Sendable, Equatable {
        /// In the sink's deliver calls.
        public var sinkSeconds = 0.0
        /// In the store's transactions (claims and statuses).
        public var storeSeconds = 0.0
        /// The flush's thread waiting for the sink with its own part done: the pipeline was sink-bound then.
        public var waitingForSinkSeconds = 0.0
    }
    /// The times added up so far; waits for a flush in progress to end.
    public var times: Times { lock.withLock { flushTimes } }
    private var flushTimes = Times()

    package convenience init(settings: EventSettings, store: EventStore, sink: EventSink, logger: Logger) {
        self.init(liveSettings: LiveSettings(settings), store: store, sink: sink, logger: logger)
    }

    /// Delivery whose settings the event engine shares and a reload replaces.
    init(liveSettings: LiveSettings<EventSettings>, store: EventStore, sink: EventSink, logger: Logger) {
        self.liveSettings = liveSettings
        self.store = store
        currentSink = sink
        self.logger = logger
    }

    /// Delivery to the HTTP collector (`collector_url`), as before sinks existed.
    package convenience init(settings: EventSettings, store: EventStore, http: HTTPFetcher, logger: Logger) {
        self.init(settings: settings, store: store, sink: HTTPCollectorSink(settings: settings, http: http), logger: logger)
    }

    /// Delivers everything that is due, batch after batch, until nothing is due or a batch has
    /// events to retry.
    public func flush(nowMs: Int64 = Clock.wallMs()) -> DeliveryReport {
        let report = flushLocked(nowMs: nowMs)
        RuntimeMetrics.eventsDelivered("posted", report.posted)
        RuntimeMetrics.eventsDelivered("retrying", report.retrying)
        RuntimeMetrics.eventsDelivered("failed", report.failed)
        return report
    }

    /// Delivers through `sink` from the next flush on; waits for a flush in progress to end, so the
    /// old sink has no call in flight once this returns.
    package func replaceSink(_ sink: EventSink) {
        lock.withLock { sinkLock.withLock { currentSink = sink } }
    }

    /// One flush, under `lock`: claim, deliver through the sink, record each outcome.
    ///
    /// The pipeline: while the sink delivers batch k (on a plugin-call thread), this thread commits, in one
    /// durable transaction, the statuses of batch k-1 and the claim of batch k+1, whose sink
    /// messages are built on `prepareQueue` from the claim on (while the transaction's COMMIT
    /// syncs, and the sink is still at batch k). So the store's work and the messages' overlap the
    /// sink's instead of adding to it, the messages overlap the sync, and each batch costs one
    /// fsync instead of two. The sink still sees the batches one after the other in
    /// tracked order, and batch k+1 goes out only once batch k's answer has no retry: a claimed
    /// batch that is not sent is released (its lease ended) in the transaction that records the last one.
    ///
    /// Long: the pipelined rounds share the claims, the leases and the report; each step is
    /// commented where it starts.
    private func flushLocked(nowMs: Int64) -> DeliveryReport {
        lock.withLock {
            let sink = self.sink  // one sink for the whole flush
            var report = DeliveryReport()
            if let reason = sink.unavailableReason {
                report.noCollector = true
                if !(sink is HTTPCollectorSink) { report.lastError = reason }  // no collector_url is a choice, not an error
                return report
            }
            if let overrun = overrunDelivery {
                guard overrun.isFinished else {
                    // A wait, not an attempt: nothing is claimed while the sink is stuck.
                    report.lastError =
                        "event sink '\(sink.name)' is still in a deliver call that overran events.post_timeout: nothing is sent until it returns"
                    return report
                }
                overrunDelivery = nil
            }
            let timeoutMs = UInt32(clamping: SafeTime.durationMs(settings.postTimeout))
            let limit = min(max(1, batchSize), EventSinkPlugin.maxBatch)
            // A claimed batch may wait for the previous batch's delivery before its own: its lease
            // covers both with the margin one delivery had before the pipeline (and starts no earlier
            // than `nowMs`, which decides what is due).
            func claim() -> (limit: Int, nowMs: Int64, leaseUntilMs: Int64) {
                (limit, nowMs, max(nowMs, Clock.wallMs()).saturatingAdding(SafeTime.durationMs(3 * settings.postTimeout + 10)))
            }
            var current: EventStore.ClaimedBatch
            func prepare(_ batch: EventStore.ClaimedBatch) -> PreparedSinkMessages {
                PreparedSinkMessages(batch, nameField: settings.eventNameField, on: prepareQueue)
            }
            let firstClaimStart = Clock.monotonicNs()
            var currentMessages: PreparedSinkMessages?
            do {
                current = try store.commit(.init(claim: claim())) { currentMessages = prepare($0) }
                flushTimes.storeSeconds += Double(Clock.monotonicNs() - firstClaimStart) / 1e9
            } catch {
                report.lastError = "cannot read the event store: \(error)"
                logger.error("\(report.lastError!)")
                return report
            }
            var step = EventStore.DeliveryStep()  // the previous batch's statuses, not yet written
            var stepReport = DeliveryReport()
            for _ in 0..<10_000 {  // bounded: each round delivers or stops
                guard !current.events.isEmpty else { break }
                report.batches += 1
                let delivery = PendingSinkDelivery(sink: sink, messages: currentMessages ?? prepare(current), timeoutMs: timeoutMs)
                step.claim = claim()  // even after a short batch: events tracked meanwhile are due too
                var next = EventStore.ClaimedBatch()
                // Built while the sink delivers `current`, from the claim on: the store's COMMIT
                // syncs meanwhile (commit's `claimed`).
                var nextMessages: PreparedSinkMessages?
                let storeStart = Clock.monotonicNs()
                do {
                    next = try store.commit(step) { nextMessages = prepare($0) }
                    flushTimes.storeSeconds += Double(Clock.monotonicNs() - storeStart) / 1e9
                    report.add(stepReport)
                } catch {
                    // Nothing of the step was written. Once the sink has answered, one more try records the
                    // statuses without a claim; events whose status is not recorded keep their lease and are
                    // sent again once it ends (the idempotency key lets the destination drop them).
                    let recording = !step.posted.isEmpty || !step.failed.isEmpty
                    let message = recording ? "delivered but could not record it: \(error)" : "cannot read the event store: \(error)"
                    logger.error("\(message)")
                    step.claim = nil
                    if case .answered(let outcomes) = delivery.wait(timeoutMs: timeoutMs)?.result, outcomes.count == current.events.count {
                        _ = stage(current, outcomes, nowMs: nowMs, into: &step, &stepReport)
                    }
                    if (try? store.commit(step)) != nil { report.add(stepReport) }
                    report.lastError = message
                    return report
                }
                step = EventStore.DeliveryStep()
                stepReport = DeliveryReport()
                let outcomes: [SinkOutcome]
                let waitStart = Clock.monotonicNs()
                let waited = delivery.wait(timeoutMs: timeoutMs)
                if waited == nil {
                    overrunDelivery = delivery
                    logger.error(
                        "event sink '\(sink.name)' did not return within events.post_timeout + \(Int(PendingSinkDelivery.marginSeconds)) s; its batch is retried, and nothing more is sent to it until it returns"
                    )
                }
                let answer =
                    waited
                    ?? (
                        result: .answered(
                            Array(
                                repeating: .retry(reason: "event sink '\(sink.name)' did not return within events.post_timeout (stuck)"),
                                count: current.events.count)), elapsedNs: Clock.monotonicNs() - waitStart
                    )
                flushTimes.waitingForSinkSeconds += Double(Clock.monotonicNs() - waitStart) / 1e9
                flushTimes.sinkSeconds += Double(answer.elapsedNs) / 1e9
                switch answer.result {
                case .notAttempted(let reason):
                    // Not an attempt (no token yet, no sink): the events wait, none is dropped.
                    report.lastError = reason
                    logger.warning("events not posted yet: \(reason)")
                    _ = try? store.commit(.init(endedLeases: [current.lease, next.lease].compactMap { $0 }))
                    return report
                case .answered(let answered) where answered.count == current.events.count:
                    outcomes = answered
                case .answered(let answered):
                    outcomes = Array(
                        repeating: .retry(reason: "the sink answered \(answered.count) outcomes for \(current.events.count) events"),
                        count: current.events.count)
                }
                // Some to retry: the destination is struggling, the rest waits for the next flush.
                if stage(current, outcomes, nowMs: nowMs, into: &step, &stepReport) {
                    if let lease = next.lease { step.endedLeases.append(lease) }
                    next = EventStore.ClaimedBatch()
                    nextMessages = nil
                }
                current = next
                currentMessages = nextMessages
            }
            // The last batch's statuses (and the release of a batch claimed but not sent).
            let lastStart = Clock.monotonicNs()
            do {
                _ = try store.commit(step)
                flushTimes.storeSeconds += Double(Clock.monotonicNs() - lastStart) / 1e9
                report.add(stepReport)
            } catch {
                report.lastError = "delivered but could not record it: \(error)"
                logger.error("\(report.lastError!)")
            }
            return report
        }
    }

    /// Puts each event of `batch`'s status by its outcome into `step`, with the end of its lease
    /// (and the counts into `stepReport`); true when some are to be retried.
    private func stage(
        _ batch: EventStore.ClaimedBatch, _ outcomes: [SinkOutcome], nowMs: Int64, into step: inout EventStore.DeliveryStep,
        _ stepReport: inout DeliveryReport
    ) -> Bool {
        var delivered: [Int64] = []
        var rejected: [String: [Int64]] = [:]
        var retry: [String: [(seq: Int64, attempts: Int)]] = [:]
        for ((event, seq), outcome) in zip(zip(batch.events, batch.seqs), outcomes) {
            switch outcome {
            case .delivered: delivered.append(seq)
            case .rejected(let reason): rejected[reason, default: []].append(seq)
            case .retry(let reason): retry[reason, default: []].append((seq, event.attempts))
            }
        }
        if let lease = batch.lease { step.endedLeases.append(lease) }
        step.posted += delivered
        stepReport.posted += delivered.count
        for (reason, ids) in rejected.sorted(by: { $0.key < $1.key }) {
            // A rejection is final: FAILED_POST now, whatever attempts are left.
            step.failed.append((ids, reason, nowMs, 0))
            stepReport.failed += ids.count
            stepReport.lastError = reason
            logger.warning("\(sink.name) rejected \(ids.count) event\(ids.count == 1 ? "" : "s") (\(reason)); now FAILED_POST")
        }
        for (reason, retried) in retry.sorted(by: { $0.key < $1.key }) {
            let attempts = retried.map(\.attempts).max() ?? 0
            let delay = settings.retryBaseDelay * pow(2, Double(attempts)) * Double.random(in: 0.8...1.2)
            let retryAt = nowMs.saturatingAdding(SafeTime.durationMs(delay))  // 2^attempts may be inf
            step.failed.append((retried.map(\.seq), reason, retryAt, settings.maxNumRetries))
            let failedNow = retried.filter { $0.attempts + 1 >= settings.maxNumRetries }.count
            stepReport.failed += failedNow
            stepReport.retrying += retried.count - failedNow
            stepReport.lastError = reason
            logger.warning(
                "posting \(retried.count) event\(retried.count == 1 ? "" : "s") failed (\(reason)); \(failedNow) now FAILED_POST, the rest retried in \(String(format: "%.1f", delay)) s"
            )
        }
        return !retry.isEmpty
    }

    /// An event as a sink gets it: its collector JSON object, idempotency key, type and user ids.
    package static func sinkEvent(_ event: Event, nameField: String) -> SinkEvent {
        func text(_ name: String) -> String {
            guard let value = event[attribute: name] else { return "" }
            return Self.text(value)
        }
        return SinkEvent(
            idempotencyKey: event.id, typeCode: Int32(clamping: event.type.code), timeMs: event.timestampMs,
            json: eventJSON(event, nameField: nameField), mobileUserID: text("Mobile User Id"), anonymousID: text("Device Id"))
    }

    /// `{"events":[{"eventTypeCode":"17","eventTimestamp":"2014-06-10T00:00:00.000Z","idempotencyKey":"...",
    ///   "attributes":[{"name":"Event Name","value":"PLAYER LOADED"},...]}]}`
    static func body(_ batch: [Event], nameField: String) -> Data {
        HTTPCollectorSink.body(batch.map { eventJSON($0, nameField: nameField) })
    }

    /// One element of the "events" array.
    static func eventJSON(_ event: Event, nameField: String) -> Data { CollectorJSON.event(event, nameField: nameField) }

    static func text(_ value: PluginValue) -> String { CollectorJSON.text(value) }

    static func isoTime(_ ms: Int64) -> String { CollectorJSON.isoTime(ms) }
}
