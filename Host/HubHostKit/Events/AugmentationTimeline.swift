import Foundation
import Logging
import Synchronization
import Tracing

/// The Engage augmentation service: runs the augmentation plugins on an event in plugins.yaml order
/// under one timeout per event, however many plugins there are.
///
/// A plugin whose `process_synchronously` is true runs alone, after everything before it finished,
/// and everything after it waits for it (later plugins may depend on its output). Plugins between
/// such barriers all get the same input, and run concurrently when their calls are slow enough to
/// earn a thread hand-over (SpreadEstimate); their edits are applied in manifest order.
/// A plugin that fails (an error status, a trap, a crash, its own budget or call_timeout spent) is
/// logged with its id and the event id, and its edits are dropped: the event keeps the other
/// plugins' edits. A plugin that is ejected (PluginEjection) or stuck in an earlier call past its
/// deadline is not called: the event goes on without it. When the timeout passes, the event is
/// EXPIRED with the edits of the plugins that answered in time (of every finished stage, and of
/// the current stage's finished calls); an answer that comes later changes nothing.
/// Sendable: `lastStuckWarningNs`, its only mutable field, is a Mutex; the rest are `let`s of Sendable types.
public final class AugmentationTimeline: Sendable {
    /// The augmentation plugins, in plugins.yaml (manifest) order.
    public let plugins: [AugmentationPlugin]
    /// The deadline of one event's whole augmentation, all plugins together, in seconds (`events.augmentation_timeout`).
    public let timeoutSeconds: Double
    private let logger: Logger
    /// Stages of plugin indexes, computed once (process_synchronously is constant per instance).
    private let stages: [[Int]]
    /// When the last "stuck" warning was logged (monotonic ns; 0: never): at most one per 10 s.
    private let lastStuckWarningNs = Mutex<UInt64>(0)

    /// Runs `plugins` in the given order under one timeout of `timeoutSeconds` per event (all plugins together),
    /// logging failed, stuck and skipped plugins and expired events to `logger`.
    public init(plugins: [AugmentationPlugin], timeoutSeconds: Double, logger: Logger) {
        self.plugins = plugins
        self.timeoutSeconds = timeoutSeconds
        self.logger = logger
        var stages: [[Int]] = []
        var group: [Int] = []
        for (index, plugin) in plugins.enumerated() {
            if plugin.processSynchronously {
                if !group.isEmpty { stages.append(group) }
                stages.append([index])
                group = []
            } else {
                group.append(index)
            }
        }
        if !group.isEmpty { stages.append(group) }
        self.stages = stages
    }

    /// Whether there is no plugin: events are then not augmented (tracked `NOT_POSTED`, not `HOLD`).
    public var isEmpty: Bool { plugins.isEmpty }

    /// The outcomes of one stage's calls, filled in as they answer, until the deadline closes it.
    /// Sendable: `list` and `closed` live in a Mutex; `input` and `indexes` are `let`s.
    private final class StageOutcomes: Sendable {
        private struct State {
            var list: [AugmentationAnswer?]
            var closed = false
        }
        let input: Event
        let indexes: [Int]
        private let state: Mutex<State>
        init(_ indexes: [Int], input: Event) {
            self.indexes = indexes
            self.input = input
            state = Mutex(State(list: Array(repeating: nil, count: indexes.count)))
        }
        /// Records an answer, unless the deadline closed the stage (a late answer changes nothing).
        func record(_ i: Int, _ answer: AugmentationAnswer?) {
            state.withLock { if !$0.closed { $0.list[i] = answer } }
        }
        /// Closes the stage: the answers so far, and no more.
        func close() -> [AugmentationAnswer?] {
            state.withLock {
                $0.closed = true
                return $0.list
            }
        }
    }

    /// The augmented event (status NOT_POSTED), or on timeout the event with the edits of the
    /// plugins that answered in time (status EXPIRED).
    public func run(_ event: Event) -> Event {
        guard !plugins.isEmpty else { return event }
        let context = Self.spanContext(of: event)
        let shared = UntilDeadline(event)
        let stages = self.stages
        let (working, completed) = waitForWork(shared, deadline: nil) {
            for stage in stages {
                // The stage's input and its outcomes, published together unless the wait ended.
                guard
                    let collected: StageOutcomes = shared.state.withLock({ shared in
                        guard !shared.timedOut else { return nil }
                        let collected = StageOutcomes(stage, input: shared.value)
                        shared.stage = collected
                        return collected
                    })
                else { break }
                let input = collected.input
                Self.concurrently(stage.count, estimate: self.callSpread) { i in
                    collected.record(i, self.augment(stage[i], input.augmentable, context: context))
                }
                let outcomes = collected.close()
                let keepGoing: Bool = shared.state.withLock { shared in
                    if shared.timedOut { return false }  // too late: change nothing
                    shared.stage = nil
                    self.apply(outcomes, of: stage, over: input, to: &shared.value, eventID: event.id)
                    return true
                }
                if !keepGoing { break }
            }
        }
        guard completed else {
            // The finished stages are in `working`; the stage under way adds the calls that answered.
            var partial = working
            var unanswered: [Int] = []
            if let stage = shared.state.withLock({ $0.stage }) {
                let outcomes = stage.close()
                apply(outcomes, of: stage.indexes, over: stage.input, to: &partial, eventID: event.id)
                // Named: the calls still running (a plugin skipped as ejected or stuck was not called).
                unanswered = stage.indexes.indices.filter { outcomes[$0] == nil }.map { stage.indexes[$0] }
                    .filter { plugins[$0].handle.calls.callsInFlight > 0 }
            }
            logger.warning(
                "augmentation of event \(event.id) did not finish within \(EngageDuration.format(timeoutSeconds))\(describe(unanswered)); the event is EXPIRED and sent with the edits of the plugins that answered in time"
            )
            partial.status = .expired
            return partial
        }
        var done = working
        done.status = .notPosted
        return done
    }

    /// A batch's events as their augmentation goes, and whether it finished: written by the
    /// workers after each call, taken at the deadline (`UntilDeadline.timedOut` then set: a late
    /// answer changes nothing). One value under one lock for the whole batch, not a box per
    /// event: allocating and freeing a box per event, and copying each event in and out of it,
    /// was a tenth of the timeline's own work.
    private struct BatchProgress: Sendable {
        var events: [Event]
        var done = false
    }

    /// Augments many events that arrived together (one batch): the same rules as `run`, with one
    /// deadline for all of them (they started together), and one thread hop for the whole batch
    /// instead of one per event. Events not finished at the deadline (by default the timeout from
    /// now) are EXPIRED with the edits of the plugins that answered in time.
    public func run(batch events: [Event], deadline: DispatchTime? = nil) -> [Event] {
        var events = events
        run(inPlace: &events, deadline: deadline)
        return events
    }

    /// `run(batch:deadline:)` on the caller's array: each event is moved into its progress and
    /// its result moved back, with no copy either way (a copy of an event retains each of its
    /// strings and its attributes, and releasing it again frees them).
    func run(inPlace events: inout [Event], deadline: DispatchTime? = nil) {
        guard !plugins.isEmpty, !events.isEmpty else { return }
        let contexts = HubTracing.isEnabled ? events.map(Self.spanContext(of:)) : []
        let count = events.count
        let shared = UntilDeadline(BatchProgress(events: exchange(&events, with: [])))
        _ = waitForWork(shared, deadline: deadline) {
            for stage in self.stages {
                // Each event's input to the stage: the plugins of a stage see the same event. A
                // plugin alone in its stage is given its event's own (the event does not change
                // while it runs), and no copy is kept beside it: when the call returns, the event
                // is the only holder of its attributes and takes the plugin's appended ones in place.
                let alone = stage.count == 1
                let inputs = alone ? [] : shared.state.withLock { $0.value.events }
                // One plugin over every event, then the next: a slow plugin holds up only the
                // plugins after it, never a faster one's edits to the batch's other events. (Event
                // by event, the first event's slow call spent the shared deadline and the events
                // after it were EXPIRED without any plugin's edits.) In a batch the events give
                // the concurrency.
                for index in stage {
                    if shared.state.withLock({ $0.timedOut }) { return }
                    Self.concurrently(count, estimate: self.eventSpread) { i in
                        let given: AugmentableEvent? =
                            alone
                            ? shared.state.withLock { $0.timedOut ? nil : $0.value.events[i].augmentable }
                            : shared.state.withLock({ $0.timedOut }) ? nil : inputs[i].augmentable
                        guard let given, let answer = self.augment(index, given, context: contexts.isEmpty ? nil : contexts[i]) else { return }
                        if case .outcome(let outcome) = answer, outcome.status != 0 {
                            self.logFailure(of: self.plugins[index], on: outcome.event.id, outcome)
                            return
                        }
                        shared.state.withLock {
                            guard !$0.timedOut else { return }
                            if alone {
                                Self.apply(answer, toItsInput: &$0.value.events[i])
                            } else {
                                Self.apply(answer, over: inputs[i], to: &$0.value.events[i])
                            }
                        }
                    }
                }
            }
            shared.state.withLock {
                guard !$0.timedOut else { return }
                for i in $0.value.events.indices { $0.value.events[i].status = .notPosted }
                $0.value.done = true
            }
        }
        // The wait has ended (`timedOut` set): the events are taken out, and a late answer finds none.
        let progress = shared.state.withLock { exchange(&$0.value, with: BatchProgress(events: [])) }
        events = progress.events
        if !progress.done {
            for i in events.indices { events[i].status = .expired }
            logger.warning(
                "augmentation of a batch of \(events.count) events did not finish within \(EngageDuration.format(timeoutSeconds)); the \(events.count) events are EXPIRED and sent with the edits of the plugins that answered in time"
            )
        }
    }

    /// What the waiting thread and the working thread share: a value under one lock, and whether
    /// the wait has ended (from then on a late answer changes nothing).
    /// Sendable: `value`, `timedOut` and `stage` live in `state`, a Mutex.
    private final class UntilDeadline<Value: Sendable>: Sendable {
        struct State {
            var value: Value
            var timedOut = false
            /// The stage under way, when one is (a single event's run).
            var stage: StageOutcomes?
        }
        let state: Mutex<State>
        init(_ value: Value) { state = Mutex(State(value: value)) }
    }

    /// Runs `work` on a thread of its own, so that this one can stop waiting at `deadline` (by
    /// default the timeout from now). When the wait ends, finished or not, `timedOut` is set and
    /// the value read in the same step: later writes by the work change nothing. Returns that value
    /// and whether the work finished in time.
    private func waitForWork<Value: Sendable>(
        _ shared: UntilDeadline<Value>, deadline: DispatchTime?,
        _ work: @escaping @Sendable () -> Void
    ) -> (value: Value, completed: Bool) {
        let finished = DispatchSemaphore(value: 0)
        Self.onOwnThread {
            work()
            finished.signal()
        }
        let waitNs = SafeTime.durationNs(timeoutSeconds)
        let completed = finished.wait(timeout: deadline ?? .now() + .nanoseconds(Int(min(waitNs, UInt64(Int.max))))) == .success
        let value = shared.state.withLock { shared -> Value in
            shared.timedOut = true
            return shared.value
        }
        return (value, completed)
    }

    /// Where plugin calls run: PluginCallThreads, never the pool the HTTP server runs on.
    private static func onOwnThread(_ work: @escaping @Sendable () -> Void) {
        PluginCallThreads.run(work)
    }

    /// The cores this process may use, read once: Foundation reads them from /proc and the cgroup
    /// files at each call, which was a file read per ingested request.
    private static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Time per event of a batch, and per plugin call of one event's stage: whether the next
    /// run is spread over the cores (see SpreadEstimate).
    private let eventSpread = SpreadEstimate()
    private let callSpread = SpreadEstimate()

    /// Runs `body(0..<count)` and returns when every call has: on this thread when `estimate`
    /// expects the run to be short, otherwise in at most as many parts as there are cores, the
    /// first on this thread and the others on threads of their own (each takes a contiguous run
    /// of indexes). The time this thread's part took is recorded in `estimate`.
    static func concurrently(_ count: Int, estimate: SpreadEstimate, _ body: @escaping @Sendable (Int) -> Void) {
        let parts = estimate.worthSpreading(count) ? min(count, cores) : 1
        let group = DispatchGroup()
        for part in 1..<parts {  // none when the run stays on this thread
            let range = (count * part / parts)..<(count * (part + 1) / parts)
            group.enter()
            onOwnThread {
                for i in range { body(i) }
                group.leave()
            }
        }
        let start = Clock.monotonicNs()
        let own = count / parts  // the first part, on this thread
        for i in 0..<own { body(i) }
        estimate.record(ns: Clock.monotonicNs() &- start, items: own)
        group.wait()
    }

    /// One plugin's call on one event, recorded in its call tracker with the augmentation timeout
    /// as its deadline, and in its ejection state: a failure, or an answer past that deadline,
    /// counts towards ejecting it. Nil when the plugin is not called: it is ejected, or stuck in
    /// an earlier call (a new call would only hang beside it). Tracing on, the call is a
    /// `plugin augmentation` span under `context` (the event's POST's span).
    private func augment(_ index: Int, _ event: consuming AugmentableEvent, context: InstrumentationContext?) -> AugmentationAnswer? {
        let plugin = plugins[index]
        let handle = plugin.handle
        // Read once: each read through the handle was a retain and a release.
        let calls = handle.calls
        let ejection = handle.ejection
        if calls.isStuck {
            warnStuck(plugin)
            return nil
        }
        guard ejection.admit() else { return nil }
        let token = calls.begin(deadlineSeconds: timeoutSeconds)
        let span = context.flatMap { PluginCallSpan.start(handle, context: $0) }
        let startedNs = span == nil ? 0 : Clock.monotonicNs()
        let answer = plugin.augment(consume event, appendedApart: true)
        let overran = calls.end(token)
        if let span { PluginCallSpan.end(span, outcome: overran ? "late" : answer.status == 0 ? "ok" : "error", startedNs: startedNs) }
        if overran {
            ejection.failed("no answer within augmentation_timeout (\(EngageDuration.format(timeoutSeconds)))")
        } else if case .outcome(let outcome) = answer, outcome.status != 0 {
            // Any failed augmentation counts (the event goes on without its edits), except a call
            // refused during its worker's restart backoff: the crash before it counted already.
            if PluginEjection.verdict(status: outcome.status, message: outcome.message) == .notCalled {
                ejection.notCalled()
            } else {
                ejection.failed("\(StatusCode.name(outcome.status))\(outcome.message.isEmpty ? "" : ": \(outcome.message)")")
            }
        } else {
            ejection.succeeded()
        }
        return answer
    }

    /// The context the augmentations of `event` are spans in: its traceparent, read once per event
    /// rather than once per plugin call; nil when tracing is off or the event has none.
    private static func spanContext(of event: Event) -> InstrumentationContext? {
        guard HubTracing.isEnabled, let traceparent = event.traceparent else { return nil }
        return HubTracing.context(fromTraceparent: traceparent)
    }

    /// Says, at most once per 10 s, that `plugin` is stuck in a call and left out meanwhile.
    private func warnStuck(_ plugin: AugmentationPlugin) {
        let now = Clock.monotonicNs()
        let warn: Bool = lastStuckWarningNs.withLock { last in
            guard last == 0 || now &- last > 10_000_000_000 else { return false }
            last = now
            return true
        }
        if warn {
            logger.warning(
                "augmentation '\(plugin.handle.instanceID)/\(plugin.handle.pluginID)' is stuck in a call past augmentation_timeout; events go on without it, and without calling it, until that call returns"
            )
        }
    }

    /// " (still running: 'a/x', 'b/y')" for the plugins of `indexes`, or nothing.
    private func describe(_ indexes: [Int]) -> String {
        guard !indexes.isEmpty else { return "" }
        return " (still running: " + indexes.map { "'\(plugins[$0].handle.instanceID)/\(plugins[$0].handle.pluginID)'" }.joined(separator: ", ") + ")"
    }

    /// Applies one stage's outcomes in manifest order over its `input`: the failures are logged and
    /// dropped, a plugin not called or not answered adds nothing.
    private func apply(_ answers: [AugmentationAnswer?], of stage: [Int], over input: Event, to working: inout Event, eventID: String) {
        for (i, answer) in answers.enumerated() {
            guard let answer else { continue }
            if case .outcome(let outcome) = answer, outcome.status != 0 {
                logFailure(of: plugins[stage[i]], on: eventID, outcome)
                continue
            }
            Self.apply(answer, over: input, to: &working)
        }
    }

    /// Whether two arrays share one storage (a copy not changed since), so hold the same elements.
    private static func sameStorage<Element>(_ a: [Element], _ b: [Element]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in pa.baseAddress == pb.baseAddress } }
    }

    /// A plugin's failure on one event: logged with its id and the event's; its edits are dropped.
    private func logFailure(of plugin: AugmentationPlugin, on eventID: String, _ outcome: AugmentationOutcome) {
        let handle = plugin.handle
        logger.error(
            "augmentation '\(handle.instanceID)/\(handle.pluginID)' failed on event \(eventID) (\(StatusCode.name(outcome.status)))\(outcome.message.isEmpty ? "" : ": \(outcome.message)"); the event goes on without its data"
        )
    }

    /// Applies what the plugin of a stage of its own changed to the event it was given, `event`
    /// (unchanged since): attributes it only appended go after the event's own, in place.
    static func apply(_ answer: AugmentationAnswer, toItsInput event: inout Event) {
        switch answer {
        case .appended(let appended):
            if !appended.isEmpty { event.attributes.append(contentsOf: appended) }
        case .outcome(let outcome):
            let input = event
            apply(outcome, over: input, to: &event)
        }
    }

    /// Applies what one plugin answered (relative to `input`) to `working`.
    static func apply(_ answer: AugmentationAnswer, over input: Event, to working: inout Event) {
        switch answer {
        case .appended(let appended):
            // Names new to the input: after its attributes as they are while `working` still holds
            // them (the first plugin of a stage), else set by name (another plugin of the stage
            // may have set the same name).
            if Self.sameStorage(working.attributes, input.attributes) {
                working.attributes.append(contentsOf: appended)
            } else {
                for attribute in appended { working.set(attribute.name, attribute.value) }
            }
        case .outcome(let outcome): apply(outcome, over: input, to: &working)
        }
    }

    /// Applies what one plugin changed (relative to `input`) to `working`.
    static func apply(_ outcome: AugmentationOutcome, over input: Event, to working: inout Event) {
        let output = outcome.event.list
        // The common case: the plugin kept every attribute in place and appended its own. Compare
        // position by position, with no hashing, and set only the appended ones.
        let kept = input.attributes.count
        if output.count >= kept {
            var unchanged = true
            for i in 0..<kept where output[i].name != input.attributes[i].name || output[i].value != input.attributes[i].value {
                unchanged = false
                break
            }
            if unchanged {
                // When `working` still holds the input's attributes (the same storage: the first
                // plugin of a stage) and the edit session vouches that appended names are new,
                // the plugin's list is the answer as it is: the input's attributes, then its own.
                // (Setting each by name searched every attribute by String comparison, and
                // appending copied the input's first.)
                if outcome.appendsOnlyNewNames, Self.sameStorage(working.attributes, input.attributes) {
                    working.attributes = output
                    return
                }
                for attribute in output[kept...] { working.set(attribute.name, attribute.value) }
                return
            }
        }
        let before = Dictionary(input.attributes.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        let after = Set(output.map(\.name))
        for attribute in output where before[attribute.name] != attribute.value {
            working.set(attribute.name, attribute.value)
        }
        for name in before.keys where !after.contains(name) {
            working.attributes.removeAll { $0.name == name }
        }
    }
}
