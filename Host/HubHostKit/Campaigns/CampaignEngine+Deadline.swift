import Foundation
import Synchronization

extension CampaignEngine {
    /// Evaluates `events` (as `logEvents`) on a plugin-call thread and waits at most `seconds`
    /// (0.001 to 24 hours): the event path never waits on a trigger operator without a deadline.
    /// When the evaluation overruns (an in-process operator stuck in a call), it goes on on its
    /// own thread, health reports the campaign evaluation stuck (`stuckEvaluation`), and until it
    /// returns later events are not evaluated (counted and logged), instead of piling up behind it.
    /// Blocks the calling thread: the event path's own thread, never Swift concurrency.
    public func logEvents(_ events: [Event], deadlineSeconds seconds: Double) {
        guard !evaluation.isStuck else {
            let skipped = evaluationSkipped.withLock {
                $0 += events.count
                return $0
            }
            if skipped == events.count || skipped % 10_000 < events.count {
                logger.error("campaign evaluation is stuck in a trigger operator call: \(skipped) events not evaluated so far")
            }
            return
        }
        // No condition calls an operator: nothing to bound, no thread hop. Only a lock free now is
        // taken here: one held by an evaluation stuck but not yet overdue must not hold this thread.
        if lock.try() {
            let empty = compiled.conditions.isEmpty
            lock.unlock()
            if empty { return logEvents(events) }
        }
        let limit = min(max(seconds.isFinite ? seconds : 0, 0.001), 86_400)
        let token = evaluation.begin(deadlineSeconds: limit)
        let outcome = DeadlineOutcome<Bool>()
        let evaluation = self.evaluation
        PluginCallThreads.run { [self] in
            logEvents(events)
            evaluation.end(token)
            outcome.finish(true)
        }
        if outcome.wait(seconds: limit) == nil {
            logger.error(
                "campaign evaluation took longer than \(limit) s (a trigger operator is stuck in a call): later events are not evaluated until it returns"
            )
        }
    }

    /// The campaign evaluation as health reports a stuck plugin, while it is past its deadline.
    public var stuckEvaluation: StuckPlugin? {
        guard let since = evaluation.stuckSinceNs else { return nil }
        return StuckPlugin(
            instance: "campaigns", plugin: "trigger operators", kind: PluginKind.triggerOperator.rawValue,
            runningMs: Int64(clamping: (Clock.monotonicNs() &- since) / 1_000_000))
    }
}
