import Foundation
import Synchronization

/// A log destination that keeps every record it receives: for tests, PluginTestKit and the
/// conformance suite, which check what a plugin logged.
/// Sendable: the records it kept live in a Mutex.
package final class LogCapture: LogDestination, Sendable {
    private let kept = Mutex<[LogRecord]>([])

    /// An empty capture: it keeps every record it receives from then on.
    package init() {}

    /// Every record received so far, in the order written (a copy: later records do not change it).
    package var records: [LogRecord] { kept.withLock { $0 } }
    /// The message of each record received so far, in order.
    package var messages: [String] { records.map(\.message) }

    /// Keeps `record`: the pipeline calls it for each record that passed its filter. Any thread.
    package func write(_ record: LogRecord) { kept.withLock { $0.append(record) } }
    /// Does nothing: the records are kept in memory as they arrive.
    package func flush() {}
}
