import Foundation

/// One deliver call running on the sink's queue while the caller goes on with the store's part of
/// the pipeline (EventDelivery.flush); `wait` blocks until the sink has answered.
final class PendingSinkDelivery: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: SinkBatchResult?  // written once on the queue, read after `done`
    private var elapsedNs: UInt64 = 0  // likewise

    /// `events` become the sink's messages (their collector JSON) on `queue` too, before the call:
    /// that work overlaps the store's transaction on the flush's thread instead of following it.
    init(sink: EventSink, events: [Event], nameField: String, timeoutMs: UInt32, on queue: DispatchQueue) {
        queue.async {
            let messages = events.map { EventDelivery.sinkEvent($0, nameField: nameField) }
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
