import Foundation

/// Group commit for concurrent callers of `EventEngine.trackGrouped` (the HTTP API's
/// `POST /v1/events`): whatever batches arrive while one commit is being made wait together, and
/// one writer thread then tracks all of them as one batch (prepared in order, augmented
/// concurrently on every core, one transaction, one fsync). Each caller is answered once the
/// commit holding its events returned, so an acknowledged event is on disk as before, while the
/// number of fsyncs no longer grows with the number of requests. Without this, every request paid
/// its own commit behind the engine's lock, and throughput fell as clients were added.
///
/// A group that fails as a whole (an id already stored, a full disk) is tracked again one caller
/// at a time, so each caller gets its own answer: one bad request never fails its neighbours.
/// @unchecked: its state is guarded by an NSCondition (callers wait for their group), which Mutex
/// cannot express. `pending` and `writerRunning` are read and written only while `condition` is locked, and
/// `writerRunning` keeps a single writer thread, the only caller of the `let` closures `track` and `committed`.
package final class GroupCommit: @unchecked Sendable {
    /// The writer thread's name, as `top -H` and /proc show it (`ThreadName`).
    package static let threadName = "hubhost-commit"

    /// One caller's batch and how to answer it.
    struct Submission {
        var events: [Event]
        var answer: (Result<[Event], Error>) -> Void
    }

    /// Tracks one batch, whole or not at all (EventEngine.trackBatch); returns the caller's events as stored.
    private let track: ([Event]) throws -> [Event]
    /// Called after each commit on the writer thread (delivery's wake-up check).
    private let committed: () -> Void
    /// Events gathered into one commit at most: a bound on one transaction's size and on the
    /// latency of the callers in it (one request holds at most EventLimits.maxEventsPerRequest).
    static let maxEventsPerGroup = 20_000
    /// How long the writer thread waits for work before it ends (a new one starts on demand).
    static let idleSeconds = 2.0

    private let condition = NSCondition()
    private var pending: [Submission] = []
    private var writerRunning = false

    init(track: @escaping ([Event]) throws -> [Event], committed: @escaping () -> Void) {
        self.track = track
        self.committed = committed
    }

    /// Queues `submission`; it is answered on the writer thread after its commit.
    func submit(_ submission: Submission) {
        condition.lock()
        pending.append(submission)
        let start = !writerRunning
        writerRunning = true
        condition.signal()
        condition.unlock()
        if start {
            // A thread of its own, not the blocking pool: it lives while requests keep coming and
            // must never wait behind the work it is there to finish.
            let thread = Thread { [self] in
                ThreadName.set(Self.threadName)
                writerLoop()
            }
            thread.name = Self.threadName
            thread.start()
        }
    }

    private func writerLoop() {
        while true {
            condition.lock()
            let idleUntil = Date(timeIntervalSinceNow: Self.idleSeconds)
            while pending.isEmpty {
                if !condition.wait(until: idleUntil), pending.isEmpty {
                    writerRunning = false
                    condition.unlock()
                    return
                }
            }
            // At least one submission; then as many as fit.
            var taken = 1
            var events = pending[0].events.count
            while taken < pending.count, events + pending[taken].events.count <= Self.maxEventsPerGroup {
                events += pending[taken].events.count
                taken += 1
            }
            let group = Array(pending[..<taken])
            pending.removeFirst(taken)
            condition.unlock()
            commit(group)
        }
    }

    /// Tracks `group` as one batch and answers each submission with its own events; an id given by
    /// two submissions of the group keeps the later one for a commit of its own, after this one.
    /// `committed` runs before the answers: a caller keeps the engine alive until it is answered.
    private func commit(_ group: [Submission]) {
        // Tracing on: one span for the commit, under the first traced event's span.
        guard HubTracing.isEnabled else { return commitUntraced(group) }
        let parent = group.lazy.flatMap(\.events).first { $0.traceparent != nil }?.traceparent
        guard let span = HubTracing.startSpan("events.group_commit", parent: parent) else { return commitUntraced(group) }
        span.updateAttributes { attributes in
            attributes["hubhost.events.count"] = group.reduce(0) { $0 + $1.events.count }
            attributes["hubhost.group.submissions"] = group.count
        }
        HubTracing.withCurrent(span) { commitUntraced(group) }
        span.end()
    }

    private func commitUntraced(_ group: [Submission]) {
        var ids = Set<String>()
        var together: [Submission] = []
        var after: [Submission] = []
        if group.count == 1 { together = group }  // one submission: no id to look for in another
        for submission in group where group.count > 1 {
            if submission.events.contains(where: { ids.contains($0.id) }) {
                after.append(submission)
            } else {
                for event in submission.events { ids.insert(event.id) }
                together.append(submission)
            }
        }
        var answers: [(Submission, Result<[Event], Error>)] = []
        answers.reserveCapacity(group.count)
        if together.count == 1 {
            answers.append((together[0], Result { try track(together[0].events) }))
        } else {
            do {
                let stored = try track(together.flatMap(\.events))
                var offset = 0
                for submission in together {
                    answers.append((submission, .success(Array(stored[offset..<offset + submission.events.count]))))
                    offset += submission.events.count
                }
            } catch {
                // Nothing of the group was stored (one transaction): each caller on its own.
                for submission in together { answers.append((submission, Result { try track(submission.events) })) }
            }
        }
        for submission in after { answers.append((submission, Result { try track(submission.events) })) }
        committed()
        for (submission, result) in answers { submission.answer(result) }
    }
}
