import Foundation
import HubHostABI

/// A `logging` plugin as a destination of the log pipeline. Calls are serialized per instance, as
/// the header promises ([host-serialized]).
/// Sendable: `handle` and `lock` are `let`s; every in-process `log`/`flush` call runs under `lock`, as the header's
/// [host-serialized] asks; isolated calls go through the worker, which serialises its own.
public final class LoggingPlugin: LogDestination, Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle
    private let lock = NSLock()  // log and flush are [host-serialized]; an NSLock, not a Mutex: it guards the C calls, no state

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .logging, "LoggingPlugin needs a logging plugin")
        self.handle = handle
    }

    /// Isolated: a failed worker drops the record, as a failing logging plugin does.
    public func write(_ record: LogRecord) {
        guard let instance = handle.instance else {
            let (channel, index) = IsolatedCalls.worker(handle)
            _ = channel.call(index, .log) { $0.logRecord(record) }
            return
        }
        let api = instance.api(hh_logging_v1_t.self)
        var source = record.source
        var message = record.message
        source.withUTF8 { sourceBytes in
            message.withUTF8 { messageBytes in
                var raw = hh_log_record_t(
                    severity: record.severity.rawValue, verbosity: record.verbosity.rawValue, time_ms: record.timeMs,
                    source: hh_string_t(
                        data: UnsafeRawPointer(sourceBytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: sourceBytes.count),
                    message: hh_string_t(
                        data: UnsafeRawPointer(messageBytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: messageBytes.count))
                lock.withLock { api.pointee.log(instance.handle, &raw) }
            }
        }
    }

    /// Calls the plugin's optional `flush` (before shutdown and when a user asks); nothing when it has none.
    /// Isolated: a failed worker ignores it.
    public func flush() {
        guard let instance = handle.instance else {
            let (channel, index) = IsolatedCalls.worker(handle)
            _ = channel.call(index, .flush) { _ in }
            return
        }
        guard let flush = instance.api(hh_logging_v1_t.self).pointee.flush else { return }
        lock.withLock { flush(instance.handle) }
    }
}

// MARK: Over the wire

extension IsolatedCalls {
    // The host side is LoggingPlugin's write and flush above: neither reads an answer.
    // The worker side, one server per call of the kind.
    static let loggingServers: [WorkerOp: Server] = [
        .log: { handle, request, _ in LoggingPlugin(handle).write(try request.logRecord()) },
        .flush: { handle, _, _ in LoggingPlugin(handle).flush() }
    ]
}

extension WireWriter {
    mutating func logRecord(_ r: LogRecord) {
        i32(r.severity.rawValue)
        i32(r.verbosity.rawValue)
        i64(r.timeMs)
        string(r.source)
        string(r.message)
    }
}

extension WireReader {
    mutating func logRecord() throws -> LogRecord {
        guard let severity = LogSeverity(rawValue: try i32()), let verbosity = LogVerbosity(rawValue: try i32()) else {
            throw WireError(description: "bad log levels")
        }
        return LogRecord(severity: severity, verbosity: verbosity, timeMs: try i64(), source: try string(), message: try string())
    }
}
