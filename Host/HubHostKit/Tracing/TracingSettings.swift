import Foundation
import Yams

/// `tracing:` in plugins.yaml: where `hubhost serve` exports its spans (OTLP/HTTP) and how many
/// traces it keeps. Off by default: with no endpoint no tracer is set up and no span is made.
package struct TracingSettings: Sendable, Equatable {
    package static let schema = ConfigSchema(keys: [
        ConfigKey(
            key: "endpoint", type: .string, defaultValue: .string(""),
            doc:
                "The OpenTelemetry collector's OTLP/HTTP base URL (e.g. http://127.0.0.1:4318): spans go to it with /v1/traces added. Empty: tracing is off (no tracer, no span). Read when serve starts.",
            pattern: #"(https?://\S+)?"#),
        ConfigKey(
            key: "sample_ratio", type: .double, defaultValue: .double(1),
            doc:
                "The share of new traces kept (0 to 1). A request whose traceparent carries the caller's sampling decision follows that decision.",
            range: .between(0, 1))
    ])

    /// The collector's base URL; empty when tracing is off.
    package var endpoint = ""
    package var sampleRatio = 1.0
    /// The plugins.yaml line each key was given on (absent: the default).
    package var lines: [String: Int] = [:]

    package init() {}

    /// True when serve exports spans.
    package var isEnabled: Bool { !endpoint.isEmpty }

    /// Where the spans are posted: the endpoint with `/v1/traces` added.
    package var tracesURL: String {
        endpoint.hasSuffix("/") ? endpoint + "v1/traces" : endpoint + "/v1/traces"
    }
}

extension TracingSettings: ManifestSection {
    package static let sectionName = "tracing"
    package static let summary =
        "Traces: spans for HTTP requests, plugin calls, group commits and sink deliveries, exported over OTLP/HTTP (swift-otel). Off unless `endpoint` is set."

    package init(section node: Node, context: ManifestSectionContext) {
        var lines: [String: Int] = [:]
        let values = context.resolve(node, schema: Self.schema, lines: &lines)
        if case .string(let text)? = values["endpoint"] { endpoint = text.trimmingCharacters(in: .whitespaces) }
        if case .double(let ratio)? = values["sample_ratio"] { sampleRatio = ratio }
        self.lines = lines
    }

    package var effectiveValues: [EffectiveSetting] {
        Self.schema.effective(
            ["endpoint": .string(endpoint), "sample_ratio": .double(sampleRatio)], lines: lines, section: Self.sectionName)
    }
}

extension HostManifest {
    /// Where serve's spans go (`tracing:`), defaults filled in.
    package var tracing: TracingSettings {
        get { section(TracingSettings.self) }
        set { setSection(newValue) }
    }
}
