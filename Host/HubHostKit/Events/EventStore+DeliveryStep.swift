import Foundation
import GRDB

extension EventStore {
    /// What one step of a pipelined delivery writes: the statuses of the batch the sink answered,
    /// the leases it ends, and the claim of a next batch, all in ONE durable transaction (one
    /// fsync where there were two: with synchronous = FULL the fsync, not SQLite, is most of a
    /// batch's store time on a slow disk).
    struct DeliveryStep {
        /// Seqs of the events delivered (ClaimedBatch.seqs: by primary key, no id lookup).
        var posted: [Int64] = []
        /// Failed attempts by seq, grouped by reason (see markAttemptFailed).
        var failed: [(seqs: [Int64], error: String, retryAtMs: Int64, maxAttempts: Int)] = []
        /// Leases ended: of the batch answered, and of a batch claimed but not sent (its events are
        /// deliverable at once: a claim no longer writes the events themselves).
        var endedLeases: [Int64] = []
        /// The next batch to claim (see claimDeliverable), or nil.
        var claim: (limit: Int, nowMs: Int64, leaseUntilMs: Int64)?

        var isEmpty: Bool { posted.isEmpty && failed.isEmpty && endedLeases.isEmpty && claim == nil }
    }

    /// Writes `step` in one transaction and returns the claimed batch (empty without a claim).
    /// Nothing of it is written when it throws. The failures are written first, event by event
    /// (a rejection final, a retry waiting out its backoff); then the delivered events move the
    /// delivered cursor (recordDelivered), which finds the retries it passes still waiting and
    /// keeps them as holes.
    ///
    /// `claimed` gets the claimed batch inside the transaction, before its COMMIT: the caller
    /// starts building the batch's sink messages there, on another thread, while the COMMIT waits
    /// for its sync (about as long as the building). Nothing may be sent before this returns: the
    /// claim is durable only then, and a throw discards it.
    func commit(_ step: DeliveryStep, claimed: (ClaimedBatch) -> Void = { _ in }) throws -> ClaimedBatch {
        guard !step.isEmpty else { return ClaimedBatch() }
        return try pool.write { db in
            let now = Clock.wallMs()
            for failure in step.failed where !failure.seqs.isEmpty {
                try Self.writingOwnRows(db, .seqs(failure.seqs)) {
                    try Self.markAttemptFailed(
                        db, .seqs(failure.seqs), error: failure.error, retryAtMs: failure.retryAtMs,
                        maxAttempts: failure.maxAttempts, nowMs: now)
                }
            }
            if !step.posted.isEmpty { try Self.recordDelivered(db, step.posted, nowMs: now) }
            for lease in step.endedLeases { try Self.endLease(db, lease) }
            guard let claim = step.claim else { return ClaimedBatch() }
            let batch = try Self.claim(db, limit: claim.limit, nowMs: claim.nowMs, leaseUntilMs: claim.leaseUntilMs)
            claimed(batch)
            return batch
        }
    }
}
