import Foundation

/// One deliver call running on the sink's queue while the caller goes on with the store's part of
/// the pipeline (EventDelivery.flush); `wait` blocks until the sink has answered.
/// Safe to share: `result` and `elapsedNs` are written once on the queue before `done` is signalled and read only after
/// `wait` has taken `done`; the semaphore orders the writes before every read.
final class PendingSinkDelivery: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: SinkBatchResult?  // written once on the queue, read after `done`
    private var elapsedNs: UInt64 = 0  // likewise

    /// The call starts once `messages` are built (PreparedSinkMessages, usually done by then).
    init(sink: EventSink, messages prepared: PreparedSinkMessages, timeoutMs: UInt32, on queue: DispatchQueue) {
        queue.async {
            let messages = prepared.wait()
            let start = Clock.monotonicNs()
            self.result = sink.deliver(messages, timeoutMs: timeoutMs)
            self.elapsedNs = Clock.monotonicNs() - start
            self.done.signal()
        }
    }

    /// The sink's answer (waits for it; the sink bounds its own time by `timeoutMs`), and how long
    /// its deliver call took.
    func wait() -> (result: SinkBatchResult, elapsedNs: UInt64) {
        done.wait()
        done.signal()  // a second wait returns at once
        return (result!, elapsedNs)
    }
}
