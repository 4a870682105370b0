import Foundation

/// A claimed batch's sink messages (each event's collector JSON, its idempotency key and user ids,
/// laid out as one SinkBatch), built on a queue of their own as soon as the batch is claimed: the
/// building overlaps the sink's call for the batch before and the store's next transaction, where
/// on the flush's thread it followed the transaction and on the sink's queue it delayed the call.
/// Safe to share: `messages` is written once on the queue before `done` is signalled and read only after `wait` has
/// taken `done`; the semaphore orders the write before every read.
final class PreparedSinkMessages: @unchecked Sendable {
    struct Messages {
        /// The readable events' messages, in the claimed order.
        var batch = SinkBatch()
        /// The claimed events whose stored attributes are not JSON attributes (a damaged row), by
        /// their index in the claimed batch, and why. Each is rejected (FAILED_POST with the
        /// reason) while the others go out: one bad row does not hold up every later event.
        var unreadable: [(index: Int, reason: String)] = []

        /// The claimed events these messages answer for.
        var claimedCount: Int { batch.count + unreadable.count }
    }

    private let done = DispatchSemaphore(value: 0)
    private var messages = Messages()  // written once on the queue, read after `done`

    init(_ claimed: EventStore.ClaimedBatch, nameField: String, on queue: DispatchQueue) {
        queue.async {
            self.messages = Self.build(claimed, nameField: nameField)
            self.done.signal()
        }
    }

    /// The messages (waits until they are built).
    func wait() -> Messages {
        done.wait()
        done.signal()  // a second wait returns at once
        return messages
    }

    /// Each claimed event as its sink gets it: written from the stored row, else from the decoded event.
    static func build(_ claimed: EventStore.ClaimedBatch, nameField: String) -> Messages {
        var messages = Messages()
        let events = claimed.events
        messages.batch.reserve(events.count, bytesPerEvent: claimed.text.count / max(1, events.count) + 160)
        claimed.text.withUnsafeBufferPointer { text in
            for (index, event) in events.enumerated() {
                let written = messages.batch.append(
                    idempotencyKey: UnsafeBufferPointer(rebasing: text[event.id]), typeCode: Int32(clamping: event.type.code),
                    timeMs: event.timestampMs
                ) { body in
                    CollectorJSON.appendEvent(index, of: claimed, nameField: nameField, to: &body)
                }
                guard !written else {
                    messages.batch.setTraceparentOfLast(event.traceparent)
                    continue
                }
                do {
                    messages.batch.append(EventDelivery.sinkEvent(try claimed.event(at: index), nameField: nameField))
                    messages.batch.setTraceparentOfLast(event.traceparent)
                } catch {
                    messages.unreadable.append((index, "the stored event cannot be read (its attributes are not valid): \(error)"))
                }
            }
        }
        return messages
    }

    /// Hands the readable messages to `deliver` and answers for every claimed event: the sink's
    /// outcome for each event it was given, a rejection for each unreadable one. An answer with
    /// another count than the events given is passed on as it is (the delivery retries that batch).
    static func deliver(_ messages: Messages, _ deliver: (SinkBatch) -> SinkBatchResult) -> SinkBatchResult {
        if messages.unreadable.isEmpty { return deliver(messages.batch) }
        let answer: SinkBatchResult = messages.batch.isEmpty ? .answered([]) : deliver(messages.batch)
        guard case .answered(let outcomes) = answer, outcomes.count == messages.batch.count else { return answer }
        var given = outcomes.makeIterator()
        var unreadable = messages.unreadable.makeIterator()
        var nextUnreadable = unreadable.next()
        var answered: [SinkOutcome] = []
        answered.reserveCapacity(messages.claimedCount)
        for index in 0..<messages.claimedCount {
            if let bad = nextUnreadable, bad.index == index {
                answered.append(.rejected(reason: bad.reason))
                nextUnreadable = unreadable.next()
            } else if let outcome = given.next() {
                answered.append(outcome)
            }
        }
        return .answered(answered)
    }
}
