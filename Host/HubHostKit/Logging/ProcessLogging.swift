import Foundation
import Logging
import Synchronization

/// Routes swift-log's process-wide LoggingSystem (what Hummingbird, NIO, AsyncHTTPClient and other
/// libraries log with) through a host's logging pipeline: the same severity/verbosity filter and
/// the same logging plugins as hubhost's own records. `hubhost serve` calls it; an embedding app
/// may, unless it bootstraps LoggingSystem itself (swift-log allows one bootstrap per process).
package enum ProcessLogging {
    private static let current = Mutex<LogPipeline?>(nil)
    private static let bootstrapped: Void = {
        LoggingSystem.bootstrap { label in RoutedLogHandler(label: label) }
    }()

    /// From now on, library records go to `pipeline`. Bootstraps LoggingSystem on the first call;
    /// later calls only switch the pipeline. [thread-safe]
    package static func route(to pipeline: LogPipeline) {
        _ = bootstrapped
        current.withLock { $0 = pipeline }
    }

    static var pipeline: LogPipeline? { current.withLock { $0 } }

    /// A handler that looks up the routed pipeline at each record (loggers are made before a host
    /// exists); with none yet, warnings and errors go to standard error.
    struct RoutedLogHandler: LogHandler {
        let label: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            if let pipeline = ProcessLogging.pipeline {
                var handler = PipelineLogHandler(label: label, pipeline: pipeline)
                handler.metadata = metadata
                handler.log(event: event)
            } else if event.level >= .warning {
                FileHandle.standardError.write(Data("\(label): \(event.message)\n".utf8))
            }
        }
    }
}
