import Foundation
import Synchronization

/// Something that receives filtered log records: a logging plugin instance, or a test's capture.
/// Called from any thread, so safe to share.
package protocol LogDestination: AnyObject, Sendable {
    func write(_ record: LogRecord)
    func flush()
}

/// The host's logging pipeline: filter first (severity and verbosity from plugins.yaml), then every
/// destination in order. Records logged before the logging plugins are loaded are kept (a bounded
/// number) and replayed to them, so the loader's own messages about a failing plugin are not lost.
/// Sendable: the filter, the destinations and the early records live in a Mutex; destinations are
/// called outside it and are each Sendable.
public final class LogPipeline: Sendable {
    private struct State {
        var filter: LogFilter
        var destinations: [LogDestination] = []
        var early: [LogRecord]? = []
    }
    private let state: Mutex<State>
    private static let earlyLimit = 1000

    /// A pipeline with no destinations yet, filtering with `filter` (plugins.yaml's defaults unless
    /// given): until its destinations are attached, the records that pass are kept, up to 1000.
    public init(filter: LogFilter = LogFilter()) { state = Mutex(State(filter: filter)) }

    /// True when a record of these levels would reach the destinations; callers may skip building it.
    public func allows(severity: LogSeverity, verbosity: LogVerbosity) -> Bool {
        state.withLock { $0.filter.allows(severity: severity, verbosity: verbosity) }
    }

    /// Logs `message` from `source` ("hubhost", an engine label or a plugin instance id), stamped with
    /// the wall clock now; dropped unless the filter allows its levels. Any thread.
    public func log(_ severity: LogSeverity, _ verbosity: LogVerbosity = .debug, source: String, _ message: String) {
        log(LogRecord(severity: severity, verbosity: verbosity, timeMs: Clock.wallMs(), source: source, message: message))
    }

    /// The record of an operator's action (a reload): passed on at any severity setting but None
    /// (`LogFilter.allows(_:)`), with its true severity.
    public func logOperatorAction(_ severity: LogSeverity, source: String, _ message: String) {
        log(LogRecord(severity: severity, verbosity: .debug, timeMs: Clock.wallMs(), source: source, message: message, isOperatorAction: true))
    }

    /// Passes `record` to every destination in order, when the filter allows it. A record logged from
    /// inside a destination (a logging plugin logging) is dropped, so logging never recurses. Any thread.
    public func log(_ record: LogRecord) {
        // A logging plugin that logs from inside its own log call would recurse forever: drop it.
        guard !LoggingReentrancy.isInside else { return }
        let targets: [LogDestination] = state.withLock { state in
            guard state.filter.allows(record) else { return [] }
            if state.early != nil {
                if state.early!.count < Self.earlyLimit { state.early!.append(record) }
                return []
            }
            return state.destinations
        }
        deliver(record, to: targets)
    }

    /// Filters records with `filter` from now on (a reload changed `logging:`).
    public func setFilter(_ filter: LogFilter) {
        state.withLock { $0.filter = filter }
    }

    /// Sets the destinations and replays the records kept since start-up (those that still pass the filter).
    package func attach(_ newDestinations: [LogDestination]) {
        let (replay, targets): ([LogRecord], [LogDestination]) = state.withLock { state in
            state.destinations = newDestinations
            let kept = state.early ?? []
            state.early = nil
            return (kept.filter { state.filter.allows($0) }, state.destinations)
        }
        for record in replay { deliver(record, to: targets) }
    }

    /// Asks every destination to write out what it buffered (a logging plugin's `flush`), e.g. before
    /// shutdown. Blocks until each has returned.
    public func flush() {
        for destination in state.withLock({ $0.destinations }) { destination.flush() }
    }

    private func deliver(_ record: LogRecord, to targets: [LogDestination]) {
        guard !targets.isEmpty else { return }
        LoggingReentrancy.enter()
        defer { LoggingReentrancy.leave() }
        for target in targets { target.write(record) }
    }
}

/// A per-thread flag set while a logging destination runs.
enum LoggingReentrancy {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var isInside: Bool { pthread_getspecific(key) != nil }
    static func enter() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1)) }
    static func leave() { pthread_setspecific(key, nil) }
}
