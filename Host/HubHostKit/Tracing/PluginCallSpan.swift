import Foundation
import Tracing

/// The span of one call into a plugin: `plugin <kind>`, with the instance, plugin id and kind, and
/// once it returned its outcome and duration. Made only inside a trace (a request's, a sink
/// delivery's): a call with no current span would only start a trace of its own. With tracing off
/// `start` is one atomic load and returns nil.
enum PluginCallSpan {
    /// A started span for a call into `handle`'s plugin, or nil (tracing off, or no trace around).
    static func start(_ handle: PluginHandle, context: InstrumentationContext? = InstrumentationContext.current) -> (any Span)? {
        guard HubTracing.isEnabled, let context else { return nil }
        let span = Tracing.startSpan("plugin \(handle.kind.rawValue)", context: context, ofKind: .client)
        span.updateAttributes { attributes in
            attributes["hubhost.plugin.instance"] = handle.instanceID
            attributes["hubhost.plugin.id"] = handle.pluginID
            attributes["hubhost.plugin.kind"] = handle.kind.rawValue
        }
        return span
    }

    /// Ends `span` with the call's `outcome` ("ok", "error", "unavailable", "late") and its
    /// duration since `startedNs` (Clock.monotonicNs); an outcome other than "ok" marks it an error.
    static func end(_ span: (any Span)?, outcome: String, startedNs: UInt64) {
        guard let span else { return }
        span.updateAttributes { attributes in
            attributes["hubhost.plugin.outcome"] = outcome
            attributes["hubhost.plugin.duration_ms"] = Double(Clock.monotonicNs() &- startedNs) / 1e6
        }
        if outcome != "ok" { span.setStatus(SpanStatus(code: .error, message: outcome)) }
        span.end()
    }
}
