import Logging

/// A swift-log LogHandler that feeds the hubhost logging pipeline, so the host's own logging
/// (which uses swift-log) reaches the same filter and logging delegates as plugin logging.
package struct PipelineLogHandler: LogHandler {
    package let label: String
    package let pipeline: LogPipeline
    package var metadata: Logger.Metadata = [:]
    /// swift-log's own level gate is left wide open: the pipeline's filter decides.
    package var logLevel: Logger.Level = .trace

    package init(label: String, pipeline: LogPipeline) {
        self.label = label
        self.pipeline = pipeline
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let (severity, verbosity) = LogFilter.levels(for: event.level)
        guard pipeline.allows(severity: severity, verbosity: verbosity) else { return }
        var text = "\(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        if !merged.isEmpty {
            text += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        pipeline.log(severity, verbosity, source: label, text)
    }
}

extension Logger {
    /// A logger whose records go through `pipeline`, without touching the process-wide LoggingSystem.
    package init(label: String, pipeline: LogPipeline) {
        self.init(label: label) { label in PipelineLogHandler(label: label, pipeline: pipeline) }
    }
}
