import Foundation

/// Something that receives filtered log records: a logging plugin instance, or a test's capture.
public protocol LogDestination: AnyObject {
    func write(_ record: LogRecord)
    func flush()
}

/// The host's logging pipeline: filter first (severity and verbosity from plugins.yaml), then every
/// destination in order. Records logged before the logging plugins are loaded are kept (a bounded
/// number) and replayed to them, so the loader's own messages about a failing plugin are not lost.
/// Safe to share: `filter`, `destinations` and `early` are read and written under `lock`; destinations are called
/// outside it and are each safe to share on their own.
public final class LogPipeline: @unchecked Sendable {
    private let lock = NSLock()
    private var filter: LogFilter
    private var destinations: [LogDestination] = []
    private var early: [LogRecord]? = []
    private static let earlyLimit = 1000

    public init(filter: LogFilter = LogFilter()) { self.filter = filter }

    /// True when a record of these levels would reach the destinations; callers may skip building it.
    public func allows(severity: LogSeverity, verbosity: LogVerbosity) -> Bool {
        lock.withLock { filter.allows(severity: severity, verbosity: verbosity) }
    }

    public func log(_ severity: LogSeverity, _ verbosity: LogVerbosity = .debug, source: String, _ message: String) {
        log(LogRecord(severity: severity, verbosity: verbosity, timeMs: Clock.wallMs(), source: source, message: message))
    }

    /// The record of an operator's action (a reload): passed on at any severity setting but None
    /// (`LogFilter.allows(_:)`), with its true severity.
    public func logOperatorAction(_ severity: LogSeverity, source: String, _ message: String) {
        log(LogRecord(severity: severity, verbosity: .debug, timeMs: Clock.wallMs(), source: source, message: message, isOperatorAction: true))
    }

    public func log(_ record: LogRecord) {
        // A logging plugin that logs from inside its own log call would recurse forever: drop it.
        guard !LoggingReentrancy.isInside else { return }
        let targets: [LogDestination] = lock.withLock {
            guard filter.allows(record) else { return [] }
            if early != nil {
                if early!.count < Self.earlyLimit { early!.append(record) }
                return []
            }
            return destinations
        }
        deliver(record, to: targets)
    }

    /// Filters records with `filter` from now on (a reload changed `logging:`).
    public func setFilter(_ filter: LogFilter) {
        lock.withLock { self.filter = filter }
    }

    /// Sets the destinations and replays the records kept since start-up (those that still pass the filter).
    public func attach(_ newDestinations: [LogDestination]) {
        let (replay, targets): ([LogRecord], [LogDestination]) = lock.withLock {
            destinations = newDestinations
            let kept = early ?? []
            early = nil
            return (kept.filter { filter.allows($0) }, destinations)
        }
        for record in replay { deliver(record, to: targets) }
    }

    public func flush() {
        for destination in lock.withLock({ destinations }) { destination.flush() }
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
