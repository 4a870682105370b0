import Foundation
import GRDB

extension EventStore {
    /// What one step of a pipelined delivery writes: the statuses of the batch the sink answered,
    /// the claims given back, and the claim of a next batch, all in ONE durable transaction (one
    /// fsync where there were two: with synchronous = FULL the fsync, not SQLite, is most of a
    /// batch's store time on a slow disk).
    struct DeliveryStep {
        var posted: [String] = []
        /// Failed attempts, grouped by reason (see markAttemptFailed).
        var failed: [(ids: [String], error: String, retryAtMs: Int64, maxAttempts: Int)] = []
        /// Claims ended without an attempt (see release).
        var released: [String] = []
        /// The next batch to claim (see claimDeliverable), or nil.
        var claim: (limit: Int, nowMs: Int64, leaseUntilMs: Int64)?

        var isEmpty: Bool { posted.isEmpty && failed.isEmpty && released.isEmpty && claim == nil }
    }

    /// Writes `step` in one transaction and returns the claimed batch (empty without a claim).
    /// Nothing of it is written when it throws.
    func commit(_ step: DeliveryStep) throws -> [Event] {
        guard !step.isEmpty else { return [] }
        return try pool.write { db in
            let now = Clock.wallMs()
            if !step.posted.isEmpty { try Self.markPosted(db, step.posted, nowMs: now) }
            for failure in step.failed where !failure.ids.isEmpty {
                try Self.markAttemptFailed(db, failure.ids, error: failure.error, retryAtMs: failure.retryAtMs, maxAttempts: failure.maxAttempts, nowMs: now)
            }
            if !step.released.isEmpty { try Self.release(db, step.released) }
            guard let claim = step.claim else { return [] }
            return try Self.claim(db, limit: claim.limit, nowMs: claim.nowMs, leaseUntilMs: claim.leaseUntilMs)
        }
    }
}
