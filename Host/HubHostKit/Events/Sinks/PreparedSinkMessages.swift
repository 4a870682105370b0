import Foundation

/// A claimed batch's sink messages (each event's collector JSON, its idempotency key and user ids),
/// built on a queue of their own as soon as the batch is claimed: the building overlaps the
/// sink's call for the batch before and the store's next transaction, where on the flush's thread
/// it followed the transaction and on the sink's queue it delayed the call.
/// Safe to share: `messages` is written once on the queue before `done` is signalled and read only after `wait` has
/// taken `done`; the semaphore orders the write before every read.
final class PreparedSinkMessages: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var messages: [SinkEvent] = []  // written once on the queue, read after `done`

    init(_ events: [Event], nameField: String, on queue: DispatchQueue) {
        queue.async {
            self.messages = events.map { EventDelivery.sinkEvent($0, nameField: nameField) }
            self.done.signal()
        }
    }

    /// The messages (waits until they are built).
    func wait() -> [SinkEvent] {
        done.wait()
        done.signal()  // a second wait returns at once
        return messages
    }
}
