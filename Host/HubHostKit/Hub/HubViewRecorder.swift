import Foundation
import Logging

/// What a hub page view teaches and reports, recorded OFF the request path: the metrics ("Hub
/// Presented" of the web hub, "Channel Viewed", "Article Viewed" with its time spent) and the profile learning (an article's tags added
/// to the active user's counts). A page answered from memory must not wait for SQLite, a plugin
/// (the advertiser-ID delegates) or the event pipeline, so the web hub hands each view here and
/// answers at once.
///
/// - In order: one recording thread of its own takes every view queued so far and records them
///   in the order they were handed over (the batch's metrics events in ONE event-store
///   transaction, then its reads in ONE users transaction). Its own thread, not a task on the shared BlockingPool: requests on the pool
///   wait for the recorder (a full queue, a drain), so a recorder that needed a
///   pool thread could wait behind them forever. The thread ends after a second without views and
///   starts again with the next one.
/// - Bounded: at most `capacity` views wait. A request reserves its place before it changes any
///   state (`reserve`); when the queue is full, a request that may block (on the blocking pool)
///   waits for room, and one that may not (the memory-only path on the event loop) is refused and
///   the route sends it to the blocking pool, where it waits. Nothing is dropped: a full queue
///   slows page views down to the recording rate instead of losing views.
/// - Drained: `waitUntilDrained` returns once every view handed over so far is recorded (tests,
///   `POST /v1/hub/views/drain`, and the host's shutdown before the event pipeline's last write).
///   A recording that fails (e.g. the users file is locked past its busy timeout) is logged with
///   the views it concerned, never dropped silently.
/// @unchecked: its state is guarded by an NSCondition (callers wait for room and for the drain), which
/// Mutex cannot express. `queue`, `reserved`, `inFlight`, `running`, `recorderIdle`, `waiters` and `recordedCount` are read
/// and written only while `condition` is locked; `capacity` and the @Sendable `record` are `let`s.
package final class HubViewRecorder: @unchecked Sendable {
    /// One page view's records (each part optional: a hub page view has none of its own).
    package struct View: Sendable {
        /// The article the reader left with this view, and the time spent on it.
        package var left: (article: ContentBundle.Article, hubID: String?, timeSpentMs: Int64)?
        /// A channel page shown.
        package var channel: ContentBundle.Channel?
        /// An article shown (not a reload of the one on screen): its tags teach the profile.
        package var read: ContentBundle.Article?
        /// A presentation (`/hub`), with the entry point set for it: "Hub Presented", tracked in
        /// order with the views (so the views before keep their session's entry point).
        package var presented: (presentation: Presentation, entryPoint: String?)?

        package init() {}

        /// A view that only leaves an article (a new presentation, closing the hub).
        package init(leaving left: (article: ContentBundle.Article, hubID: String?, timeSpentMs: Int64)?) {
            self.left = left
        }

        var isEmpty: Bool { left == nil && channel == nil && read == nil && presented == nil }
    }

    /// Views that may wait at most: a few seconds of page views at tens of thousands per second,
    /// a few hundred bytes each.
    package static let defaultCapacity = 16_384

    /// The recorder thread's name, as `top -H` and /proc show it (`ThreadName`).
    package static let threadName = "hubhost-views"

    package let capacity: Int
    private let record: @Sendable ([View]) -> Void
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [View] = []
    private var reserved = 0
    /// Views taken by the drain and not recorded yet.
    private var inFlight = 0
    /// The recording thread runs (or is starting).
    private var running = false
    /// The recording thread waits for views: only then does a new view wake it (a signal per
    /// view to a busy thread was a futex call and a context switch per page request).
    private var recorderIdle = false
    /// Callers blocked in `reserve` or `waitUntilDrained`: only then do the others broadcast.
    private var waiters = 0
    private var recordedCount = 0

    /// `record` records a batch of views in order (on the recorder's thread, one batch at a time).
    package init(capacity: Int = HubViewRecorder.defaultCapacity, record: @escaping @Sendable ([View]) -> Void) {
        self.capacity = max(1, capacity)
        self.record = record
    }

    /// The recorder of `engine`: metrics through its HubMetrics, learning through its users.
    convenience init(metrics: HubMetrics, users: UserStore, logger: Logger, capacity: Int = HubViewRecorder.defaultCapacity) {
        self.init(capacity: capacity) { views in
            var events: [Event] = []
            events.reserveCapacity(views.count)
            var reads: [[String: Int]] = []
            for view in views {
                if let left = view.left { events.append(metrics.articleViewedEvent(left.article, hubID: left.hubID, timeSpentMs: left.timeSpentMs)) }
                if let presented = view.presented {
                    events.append(metrics.hubPresentedEvent(presented.presentation, entryPoint: presented.entryPoint))
                }
                if let channel = view.channel { events.append(metrics.channelViewedEvent(channel)) }
                if let read = view.read { reads.append(Tailoring.counts(forOverride: read.tags)) }
            }
            // The whole batch's metrics in one transaction, stored before its learning and before
            // the next batch (so a drain also waits for them).
            metrics.send(batch: events)
            // The active user is cached (UserStore.activeUser): without one, nothing is written.
            guard reads.contains(where: { !$0.isEmpty }), users.activeUser() != nil else { return }
            do {
                try users.learn(reads)
            } catch {
                let ids = views.compactMap { $0.read?.id }
                logger.error(
                    "hub: the reading of \(ids.count) article(s) was not added to the user's tag counts (\(ids.prefix(10).joined(separator: ", "))): \(error)"
                )
            }
        }
    }

    /// Reserves a place for one view; each reservation is then `submit`ted or `cancel`led. With
    /// `wait` false (the event loop), returns false at once when the queue is full; with `wait`
    /// true (the blocking pool), waits for room.
    package func reserve(wait: Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while queue.count + reserved >= capacity {
            guard wait else { return false }
            waiters += 1
            condition.wait()
            waiters -= 1
        }
        reserved += 1
        return true
    }

    /// Hands over a reserved view (never waits); the recording thread records it.
    package func submit(_ view: View) {
        condition.lock()
        reserved -= 1
        guard !view.isEmpty else {
            if waiters > 0 { condition.broadcast() }  // a place was given back
            condition.unlock()
            return
        }
        queue.append(view)
        let start = !running
        running = true
        if recorderIdle {
            recorderIdle = false
            condition.broadcast()
        }
        condition.unlock()
        if start {
            let thread = Thread { [self] in
                ThreadName.set(Self.threadName)
                recordUntilIdle()
            }
            thread.name = Self.threadName
            thread.start()
        }
    }

    /// Gives a reservation back unused.
    package func cancel() { submit(View()) }

    /// Reserves (waiting for room) and submits: for callers on the blocking pool.
    package func add(_ view: View) {
        guard !view.isEmpty else { return }
        _ = reserve(wait: true)
        submit(view)
    }

    /// Records everything queued, batch after batch; returns after a second without views.
    private func recordUntilIdle() {
        while true {
            condition.lock()
            let idleUntil = Date(timeIntervalSinceNow: 1)
            var wokenFromIdle = false
            while queue.isEmpty && Date() < idleUntil {
                recorderIdle = true
                _ = condition.wait(until: idleUntil)
                wokenFromIdle = true
            }
            recorderIdle = false
            guard !queue.isEmpty else {
                running = false
                if waiters > 0 { condition.broadcast() }
                condition.unlock()
                return
            }
            if wokenFromIdle && queue.count < 64 && waiters == 0 {
                // Woken by a single view: a millisecond lets the views of concurrent requests join
                // its batch (fewer wake-ups under load; recording waits at most that long more).
                condition.unlock()
                usleep(1_000)
                condition.lock()
            }
            let batch = queue
            queue = []
            inFlight = batch.count
            if waiters > 0 { condition.broadcast() }  // room again for requests waiting in `reserve`
            condition.unlock()
            record(batch)
            condition.lock()
            inFlight = 0
            recordedCount += batch.count
            if waiters > 0 { condition.broadcast() }
            condition.unlock()
        }
    }

    /// Waits until every view submitted before the call is recorded, at most `timeoutSeconds`;
    /// false when the time ran out first. Blocks: call it on the blocking pool (or a test thread).
    @discardableResult
    package func waitUntilDrained(timeoutSeconds: Double = 60) -> Bool {
        let deadline = Date(timeIntervalSinceNow: max(0, min(timeoutSeconds, 86_400)))
        condition.lock()
        defer { condition.unlock() }
        while !queue.isEmpty || inFlight > 0 {
            waiters += 1
            let inTime = condition.wait(until: deadline)
            waiters -= 1
            guard inTime else { return queue.isEmpty && inFlight == 0 }
        }
        return true
    }

    /// Views waiting or being recorded now, and views recorded since the recorder was made.
    package var counts: (pending: Int, recorded: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (queue.count + inFlight, recordedCount)
    }
}
