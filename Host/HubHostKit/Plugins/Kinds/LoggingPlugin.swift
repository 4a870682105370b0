import Foundation
import HubHostABI

/// A `logging` plugin as a destination of the log pipeline. Calls are serialized per instance, as
/// the header promises ([host-serialized]).
public final class LoggingPlugin: LogDestination, @unchecked Sendable {
    public let instance: PluginInstance
    private let lock = NSLock()
    private let api: UnsafePointer<hh_logging_v1_t>

    public init(_ instance: PluginInstance) {
        precondition(instance.kind == .logging, "LoggingPlugin needs a logging plugin")
        self.instance = instance
        self.api = instance.api(hh_logging_v1_t.self)
    }

    public func write(_ record: LogRecord) {
        var source = record.source, message = record.message
        source.withUTF8 { sourceBytes in
            message.withUTF8 { messageBytes in
                var raw = hh_log_record_t(
                    severity: record.severity.rawValue, verbosity: record.verbosity.rawValue, time_ms: record.timeMs,
                    source: hh_string_t(data: UnsafeRawPointer(sourceBytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: sourceBytes.count),
                    message: hh_string_t(data: UnsafeRawPointer(messageBytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: messageBytes.count))
                lock.withLock { api.pointee.log(instance.handle, &raw) }
            }
        }
    }

    public func flush() {
        guard let flush = api.pointee.flush else { return }
        lock.withLock { flush(instance.handle) }
    }
}
