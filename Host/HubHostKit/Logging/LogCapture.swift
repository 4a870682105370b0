import Foundation

/// A log destination that keeps every record it receives: for tests, PluginTestKit and the
/// conformance suite, which check what a plugin logged.
/// Safe to share: `kept`, its only mutable field, is read and written under `lock`.
public final class LogCapture: LogDestination, @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [LogRecord] = []

    public init() {}

    public var records: [LogRecord] { lock.withLock { kept } }
    public var messages: [String] { records.map(\.message) }

    public func write(_ record: LogRecord) { lock.withLock { kept.append(record) } }
    public func flush() {}
}
