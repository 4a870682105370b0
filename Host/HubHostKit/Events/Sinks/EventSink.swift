import Foundation
import HubHostABI

/// What a sink did with one batch.
package enum SinkBatchResult: Equatable, Sendable {
    /// One outcome per event, in the batch's order.
    case answered([SinkOutcome])
    /// Nothing was sent and it is not an attempt (no access token yet, the sink not loaded, a sink
    /// not connected that answered HH_ERR_UNAVAILABLE): the events wait, their retry count unchanged.
    case notAttempted(reason: String)
}

/// Where tracked events leave hubhost: the built-in HTTP collector, or an `event_sink` plugin named
/// by `events.sink`. EventDelivery owns the store, the batching, the statuses and the retries; a
/// sink only sends one batch and says, per event, what became of it.
package protocol EventSink: AnyObject, Sendable {
    /// For logs and reports: "http-collector", or the plugin instance's id.
    var name: String { get }
    /// Why there is nowhere to send now (events stay NOT_POSTED on disk, nothing is claimed), or
    /// nil when the sink can take a batch.
    var unavailableReason: String? { get }
    /// Sends `events` (in tracked order), waiting at most `timeoutMs` for their acknowledgements.
    func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkBatchResult
    /// The same for a batch laid out as the delivery builds it (how it calls every sink). By
    /// default its events are handed to `deliver(_:timeoutMs:)`; the built-in sinks use its
    /// blocks as they are (the collector's body, a plugin's views).
    func deliver(batch: SinkBatch, timeoutMs: UInt32) -> SinkBatchResult
}

extension EventSink {
    package func deliver(batch: SinkBatch, timeoutMs: UInt32) -> SinkBatchResult { deliver(batch.events, timeoutMs: timeoutMs) }
}

/// An `event_sink` plugin instance as the delivery's sink.
/// Sendable: immutable after init (a `let` Sendable plugin adapter and a `let` @Sendable closure).
package final class PluginEventSink: EventSink, Sendable {
    package let plugin: EventSinkPlugin
    package var name: String { plugin.handle.instanceID }
    package var unavailableReason: String? { nil }
    private let onUndefinedOutcome: @Sendable (String) -> Void

    /// `onUndefinedOutcome` hears of every outcome code the ABI does not define (the delivery logs it).
    package init(_ plugin: EventSinkPlugin, onUndefinedOutcome: @escaping @Sendable (String) -> Void = { _ in }) {
        self.plugin = plugin
        self.onUndefinedOutcome = onUndefinedOutcome
    }

    package func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkBatchResult {
        deliver(batch: SinkBatch(events), timeoutMs: timeoutMs)
    }

    package func deliver(batch: SinkBatch, timeoutMs: UInt32) -> SinkBatchResult {
        // Tracked: a call past post_timeout makes the instance stuck for health and status.
        let token = plugin.handle.calls.begin(deadlineSeconds: Double(timeoutMs) / 1000 + PendingSinkDelivery.marginSeconds)
        let span = PluginCallSpan.start(plugin.handle)  // nil unless tracing is on (under the delivery's span)
        let startedNs = span == nil ? 0 : Clock.monotonicNs()
        let answer = plugin.deliver(batch, timeoutMs: timeoutMs)
        let late = plugin.handle.calls.end(token)
        if span != nil {
            let outcome = answer.status == HH_OK ? (late ? "late" : "ok") : answer.status == HH_ERR_UNAVAILABLE ? "unavailable" : "error"
            PluginCallSpan.end(span, outcome: outcome, startedNs: startedNs)
        }
        if answer.status == HH_ERR_UNAVAILABLE {
            // Nothing was sent (not connected, reconnecting): a wait, not an attempt.
            return .notAttempted(reason: answer.message)
        }
        if !answer.undefinedOutcomes.isEmpty {
            onUndefinedOutcome(
                "event sink '\(name)' answered outcome codes the ABI does not define (\(Set(answer.undefinedOutcomes).sorted().map(String.init).joined(separator: ", "))); those events are retried"
            )
        }
        return .answered(answer.outcomes)
    }
}

/// `events.sink` names an instance that is not a loaded event_sink: nothing is sent and nothing is
/// lost; the reason is in every flush report until plugins.yaml is fixed.
/// Sendable: immutable after init; both fields are `let` strings.
package final class UnavailableEventSink: EventSink, Sendable {
    package let name: String
    package let unavailableReason: String?

    package init(name: String, reason: String) {
        self.name = name
        unavailableReason = reason
    }

    package func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkBatchResult {
        .notAttempted(reason: unavailableReason ?? "the sink is unavailable")
    }
}
