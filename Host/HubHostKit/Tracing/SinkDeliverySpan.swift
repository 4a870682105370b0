import Foundation
import Tracing

/// The span of one batch's delivery through the sink (`events.sink.deliver`), a child of the
/// first event of the batch that has a traceparent (a new trace when none has); the sink's plugin
/// call is its child. Its attributes: the sink, the batch's size and what became of its events.
enum SinkDeliverySpan {
    /// Nil when tracing is off (one atomic load).
    static func start(sink: String, _ batch: SinkBatch) -> (any Span)? {
        guard let span = HubTracing.startSpan("events.sink.deliver", parent: batch.firstTraceparent, kind: .producer) else { return nil }
        span.updateAttributes { attributes in
            attributes["hubhost.sink"] = sink
            attributes["hubhost.events.count"] = batch.count
            attributes["hubhost.events.traced"] = batch.traceparents.count
        }
        return span
    }

    static func end(_ span: (any Span)?, _ answer: SinkBatchResult) {
        guard let span else { return }
        switch answer {
        case .notAttempted(let reason):
            span.attributes["hubhost.sink.outcome"] = "not_attempted"
            span.setStatus(SpanStatus(code: .error, message: reason))
        case .answered(let outcomes):
            var delivered = 0
            var retry = 0
            var rejected = 0
            for outcome in outcomes {
                switch outcome {
                case .delivered: delivered += 1
                case .retry: retry += 1
                case .rejected: rejected += 1
                }
            }
            span.updateAttributes { attributes in
                attributes["hubhost.sink.outcome"] = retry + rejected == 0 ? "delivered" : "partial"
                attributes["hubhost.events.delivered"] = delivered
                attributes["hubhost.events.retry"] = retry
                attributes["hubhost.events.rejected"] = rejected
            }
            if retry + rejected > 0 { span.setStatus(SpanStatus(code: .error, message: "\(retry) to retry, \(rejected) rejected")) }
        }
        span.end()
    }
}
