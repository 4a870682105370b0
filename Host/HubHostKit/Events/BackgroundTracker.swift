import Foundation

/// Tracks events without making the caller wait for the disk: for high-rate events of low value
/// each (the Content Hub's page-view metrics), where one durable commit per event would bound a web
/// page to the disk's fsync rate. Events wait in memory and one worker writes whatever has gathered
/// with one batch (one commit) at a time, so they are stored within milliseconds; a crash in that
/// window loses them, which is why `EventEngine.track` (durable before it returns) stays the
/// default. The commits do not wait for the disk either (`EventEngine.trackBatch(_:waitForDisk:)`):
/// stored, they survive kill -9, not a power loss before the next sync. `waitUntilWritten()`
/// returns once everything enqueued before it is stored.
/// @unchecked: its state is guarded by an NSCondition (waitUntilWritten waits), which Mutex cannot
/// express. `pending` and `writing`, its only mutable fields, are read and written only while `condition` is
/// locked; the closures are `let` and @Sendable.
final class BackgroundTracker: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [Event] = []
    private var writing = false
    private let write: @Sendable ([Event]) throws -> Void
    private let failed: @Sendable (Error, [Event]) -> Void

    /// `write` stores a batch (EventEngine.trackBatch); `failed` hears a batch that could not be stored.
    init(write: @escaping @Sendable ([Event]) throws -> Void, failed: @escaping @Sendable (Error, [Event]) -> Void) {
        self.write = write
        self.failed = failed
    }

    func enqueue(_ event: Event) {
        condition.lock()
        pending.append(event)
        let start = !writing
        writing = true
        condition.unlock()
        if start { Thread.detachNewThread { [self] in drain() } }
    }

    /// Waits until every event enqueued so far was written (or failed).
    func waitUntilWritten() {
        condition.lock()
        while writing { condition.wait() }
        condition.unlock()
    }

    private func drain() {
        while true {
            condition.lock()
            let batch = pending
            pending = []
            if batch.isEmpty {
                writing = false
                condition.broadcast()
                condition.unlock()
                return
            }
            condition.unlock()
            do { try write(batch) } catch { failed(error, batch) }
        }
    }
}
