import HubHostABI
import Logging

/// Severity, the ZBiM scale: None < CriticalError < Error < Warning < Info.
/// As a setting it is the least important severity still logged; None turns logging off.
public enum LogSeverity: Int32, CaseIterable, Comparable, Sendable {
    /// As a setting: log nothing. Never the severity of a record.
    case none = 0
    /// The most severe records (swift-log's critical).
    case criticalError = 1
    /// Failures (swift-log's error); the default setting.
    case error = 2
    /// Warnings (swift-log's warning).
    case warning = 3
    /// The least severe records: what happened in the normal course (swift-log's notice, info, debug, trace).
    case info = 4

    /// The name plugins.yaml and JSON use: "none", "critical_error", "error", "warning", "info".
    public var name: String {
        switch self {
        case .none: return "none"
        case .criticalError: return "critical_error"
        case .error: return "error"
        case .warning: return "warning"
        case .info: return "info"
        }
    }

    /// The severity named `name`, in any case, with `-`, `_` or nothing between words
    /// ("critical-error", "CriticalError"); nil for an unknown name.
    public init?(name: String) {
        let key = name.lowercased().replacingOccurrences(of: "-", with: "_")
        guard let match = LogSeverity.allCases.first(where: { $0.name == key || $0.name.replacingOccurrences(of: "_", with: "") == key })
        else { return nil }
        self = match
    }

    public static func < (a: LogSeverity, b: LogSeverity) -> Bool { a.rawValue < b.rawValue }
}

/// Verbosity, the ZBiM scale: None < Debug < Info. As a setting it is the most detailed verbosity
/// still logged; None turns logging off.
public enum LogVerbosity: Int32, CaseIterable, Comparable, Sendable {
    /// As a setting: log nothing. Never the verbosity of a record.
    case none = 0
    /// Ordinary detail: every record but the most detailed; the default setting.
    case debug = 1
    /// The most detailed records (swift-log's debug and trace).
    case info = 2

    /// The name plugins.yaml and JSON use: "none", "debug", "info".
    public var name: String {
        switch self {
        case .none: return "none"
        case .debug: return "debug"
        case .info: return "info"
        }
    }

    /// The verbosity named `name`, in any case; nil for an unknown name.
    public init?(name: String) {
        guard let match = LogVerbosity.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = match
    }

    public static func < (a: LogVerbosity, b: LogVerbosity) -> Bool { a.rawValue < b.rawValue }
}

/// The host's log filter (plugins.yaml `logging:`), applied before any logging delegate is called.
///
/// The ZBiM SDK's stacking rule: a record is logged when neither its severity nor its verbosity is past
/// the configured level in the ordered lists above, and nothing is logged when either setting is
/// None. Defaults: severity Error, verbosity Debug.
public struct LogFilter: Codable, Equatable, Sendable {
    /// The least important severity still logged (`logging.severity`); `.none` turns logging off.
    public var severity: LogSeverity
    /// The most detailed verbosity still logged (`logging.verbosity`); `.none` turns logging off.
    public var verbosity: LogVerbosity

    /// A filter with these settings; the defaults are plugins.yaml's (severity Error, verbosity Debug).
    public init(severity: LogSeverity = .error, verbosity: LogVerbosity = .debug) {
        self.severity = severity
        self.verbosity = verbosity
    }

    /// Whether a record of these levels is logged: both at or below the settings, and neither the
    /// settings nor the record's levels `.none`.
    public func allows(severity recordSeverity: LogSeverity, verbosity recordVerbosity: LogVerbosity) -> Bool {
        guard severity != .none, verbosity != .none, recordSeverity != .none, recordVerbosity != .none else { return false }
        return recordSeverity <= severity && recordVerbosity <= verbosity
    }

    /// Whether `record` passes: by its levels, except that the record of an operator's own action
    /// (a reload and what it changed) passes whatever severity is set, unless logging is off. At
    /// the default severity (Error) the operator still finds in the log what the reload did, and
    /// the record keeps its true severity (Info for an applied reload) rather than posing as an error.
    public func allows(_ record: LogRecord) -> Bool {
        if record.isOperatorAction { return severity != .none && verbosity != .none }
        return allows(severity: record.severity, verbosity: record.verbosity)
    }

    /// How a swift-log level maps onto the two scales: the host's own logging uses swift-log.
    /// debug and trace are the most detailed records (verbosity Info); the rest are ordinary detail.
    public static func levels(for level: Logger.Level) -> (LogSeverity, LogVerbosity) {
        switch level {
        case .critical: return (.criticalError, .debug)
        case .error: return (.error, .debug)
        case .warning: return (.warning, .debug)
        case .notice, .info: return (.info, .debug)
        case .debug, .trace: return (.info, .info)
        }
    }
}

/// One record on its way through the logging pipeline.
public struct LogRecord: Equatable, Sendable {
    /// How important the record is (never `.none` for a record that is logged).
    public var severity: LogSeverity
    /// How detailed the record is (never `.none` for a record that is logged).
    public var verbosity: LogVerbosity
    /// When it was logged, in milliseconds since 1970 (wall clock).
    public var timeMs: Int64
    /// "hubhost", an engine label ("hubhost.loader") or a plugin instance id.
    public var source: String
    /// The text of the record, as a logging plugin receives it.
    public var message: String
    /// The record of something the operator did (a reload): logged at any severity setting but None.
    public var isOperatorAction: Bool

    /// A record with these fields; `isOperatorAction` is false unless the record reports an operator's action.
    public init(
        severity: LogSeverity, verbosity: LogVerbosity, timeMs: Int64, source: String, message: String, isOperatorAction: Bool = false
    ) {
        self.severity = severity
        self.verbosity = verbosity
        self.timeMs = timeMs
        self.source = source
        self.message = message
        self.isOperatorAction = isOperatorAction
    }
}

/// Levels are written by name ("error", "debug") in JSON, as in plugins.yaml.
extension LogSeverity: Codable {
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let level = LogSeverity(name: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown severity '\(text)'"))
        }
        self = level
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}

extension LogVerbosity: Codable {
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let level = LogVerbosity(name: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown verbosity '\(text)'"))
        }
        self = level
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}
