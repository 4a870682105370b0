import Foundation
import Synchronization

/// A log destination that keeps every record it receives: for tests, PluginTestKit and the
/// conformance suite, which check what a plugin logged.
/// Sendable: the records it kept live in a Mutex.
public final class LogCapture: LogDestination, Sendable {
    private let kept = Mutex<[LogRecord]>([])

    public init() {}

    public var records: [LogRecord] { kept.withLock { $0 } }
    public var messages: [String] { records.map(\.message) }

    public func write(_ record: LogRecord) { kept.withLock { $0.append(record) } }
    public func flush() {}
}
