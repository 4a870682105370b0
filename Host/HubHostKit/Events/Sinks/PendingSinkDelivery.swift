import Foundation
import Synchronization

/// One deliver call running on a plugin-call thread (PluginCallThreads, never the pool Swift
/// concurrency and the HTTP server run on) while the caller goes on with the store's part of the
/// pipeline (EventDelivery.flush); `wait` blocks until the sink has answered, or its deadline.
/// Sendable: the answer and its time live in a Mutex, written once by the call's thread.
final class PendingSinkDelivery: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let answer = Mutex<(result: SinkBatchResult, elapsedNs: UInt64)?>(nil)
    /// How long past the sink's own timeout the host waits before it gives the call up.
    static let marginSeconds: Double = 5

    /// The call starts once `messages` are built (PreparedSinkMessages, usually done by then).
    init(sink: EventSink, messages prepared: PreparedSinkMessages, timeoutMs: UInt32) {
        PluginCallThreads.run { [self] in
            let messages = prepared.wait()
            let start = Clock.monotonicNs()
            // The batch's span (tracing on): under the first traced event's span, the sink's plugin
            // call below it, and the traceparent the HTTP collector sends.
            let span = SinkDeliverySpan.start(sink: sink.name, messages.batch)
            let answer = HubTracing.withCurrent(span) {
                PreparedSinkMessages.deliver(messages) { sink.deliver(batch: $0, timeoutMs: timeoutMs) }
            }
            SinkDeliverySpan.end(span, answer)
            let elapsedNs = Clock.monotonicNs() - start
            self.answer.withLock { $0 = (answer, elapsedNs) }
            done.signal()
        }
    }

    /// Whether the sink has returned.
    var isFinished: Bool { answer.withLock { $0 != nil } }

    /// The sink's answer and how long its deliver call took, waiting at most `timeoutMs` plus
    /// `marginSeconds` (the sink bounds its own time by `timeoutMs`); nil when it has not returned
    /// by then: the call goes on on its own thread, and the caller counts the batch as a retry.
    func wait(timeoutMs: UInt32) -> (result: SinkBatchResult, elapsedNs: UInt64)? {
        let limit = Double(timeoutMs) / 1000 + Self.marginSeconds
        guard done.wait(timeout: .now() + .nanoseconds(Int(SafeTime.durationNs(limit)))) == .success else { return nil }
        done.signal()  // a second wait returns at once
        return answer.withLock { $0 }
    }
}
