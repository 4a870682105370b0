import Foundation
import Logging
import OTel
import ServiceLifecycle
import Synchronization
import Tracing

/// hubhost's traces: spans for each HTTP request (Hummingbird's TracingMiddleware), each plugin
/// call inside a trace, each group commit and each sink delivery, exported over OTLP/HTTP by
/// swift-otel when `tracing.endpoint` is set (`bootstrap`, which `hubhost serve` calls once).
///
/// Off by default, and then free: every span site first reads `isEnabled`, one relaxed atomic
/// load, and makes no span, no context and no allocation when it is false; no tracer is
/// bootstrapped (InstrumentationSystem keeps its no-op tracer).
package enum HubTracing {
    private static let enabled = Atomic<Bool>(false)

    /// True once `bootstrap` set up a tracer for this process.
    @inline(__always)
    package static var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// For `bootstrap` (and tests that bootstrap a tracer of their own): span sites make spans from now on.
    package static func markEnabled() { enabled.store(true, ordering: .relaxed) }

    /// Sets up the process's tracer from `settings` and returns the exporter's service (to run in
    /// serve's ServiceGroup, ahead of the others so it stops last and exports their last spans);
    /// nil when tracing is off. Call once per process: the tracer is process-global.
    /// OTEL_* environment variables (e.g. OTEL_BSP_SCHEDULE_DELAY) override swift-otel's defaults.
    package static func bootstrap(_ settings: TracingSettings, logger: Logger) throws -> (any Service)? {
        guard settings.isEnabled else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "hubhost"
        configuration.diagnosticLogger = .custom(logger)
        configuration.propagators = [.traceContext]
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.traces.otlpExporter.endpoint = settings.tracesURL
        configuration.traces.sampler = .parentBasedTraceIDRatio(ratio: settings.sampleRatio) ?? .parentBasedAlwaysOn
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        markEnabled()
        return backend.service
    }

    // MARK: W3C traceparent

    /// The longest `traceparent` header looked at; a longer one is ignored without being parsed.
    package static let maxTraceparentLength = 256

    /// `header` as a valid W3C traceparent in version 00 form (`00-<32 hex>-<16 hex>-<2 hex>`,
    /// lowercase), or nil when it is not one (ignored, as the W3C asks; never an error). A later
    /// version is read as 00 (its first four fields), as the specification asks.
    package static func validTraceparent(_ header: some StringProtocol) -> String? {
        guard header.utf8.count <= maxTraceparentLength else { return nil }
        var bytes = Array(header.utf8)
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        var start = 0
        while start < bytes.count, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        bytes.removeFirst(start)
        guard bytes.count >= 55 else { return nil }
        func hex(_ range: Range<Int>) -> Bool {
            bytes[range].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }
        guard hex(0..<2), bytes[2] == 0x2D, hex(3..<35), bytes[35] == 0x2D, hex(36..<52), bytes[52] == 0x2D, hex(53..<55) else {
            return nil
        }
        let version = String(decoding: bytes[0..<2], as: UTF8.self)
        if version == "ff" { return nil }
        if version == "00", bytes.count != 55 { return nil }
        if bytes.count > 55, bytes[55] != 0x2D { return nil }
        if bytes[3..<35].allSatisfy({ $0 == 0x30 }) || bytes[36..<52].allSatisfy({ $0 == 0x30 }) { return nil }
        return "00" + String(decoding: bytes[2..<55], as: UTF8.self)
    }

    /// The trace id (32 hex digits) of a valid traceparent.
    package static func traceID(ofTraceparent traceparent: String) -> String? {
        guard let valid = validTraceparent(traceparent) else { return nil }
        return String(valid.dropFirst(3).prefix(32))
    }

    // MARK: Contexts

    private struct DictionaryExtractor: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    }

    private struct DictionaryInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
    }

    /// A context whose parent is the span `traceparent` names (top level when it is nil or not valid).
    package static func context(fromTraceparent traceparent: String?) -> InstrumentationContext {
        var context = InstrumentationContext.topLevel
        guard let traceparent else { return context }
        InstrumentationSystem.instrument.extract(["traceparent": traceparent], into: &context, using: DictionaryExtractor())
        return context
    }

    /// The traceparent of `context`'s span, or nil when it has none (or tracing is off).
    package static func traceparent(of context: InstrumentationContext?) -> String? {
        guard isEnabled, let context else { return nil }
        var headers: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &headers, using: DictionaryInjector())
        return headers["traceparent"]
    }

    /// The traceparent of the current task's span, or nil.
    package static var currentTraceparent: String? { traceparent(of: InstrumentationContext.current) }

    /// Starts a span under the span `traceparent` names; nil when tracing is off.
    static func startSpan(_ name: String, parent traceparent: String?, kind: SpanKind = .internal) -> (any Span)? {
        guard isEnabled else { return nil }
        return Tracing.startSpan(name, context: context(fromTraceparent: traceparent), ofKind: kind)
    }

    /// Runs `body` with `span`'s context as the current one (plugin-call spans below it are its
    /// children, and sinks send its traceparent on); plainly when there is no span.
    static func withCurrent<T>(_ span: (any Span)?, _ body: () throws -> T) rethrows -> T {
        guard let span else { return try body() }
        return try InstrumentationContext.withValue(span.context, operation: body)
    }
}
