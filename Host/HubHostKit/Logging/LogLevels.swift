import HubHostABI
import Logging

/// Severity, the ZBiM scale: None < CriticalError < Error < Warning < Info.
/// As a setting it is the least important severity still logged; None turns logging off.
public enum LogSeverity: Int32, CaseIterable, Comparable, Sendable {
    case none = 0, criticalError = 1, error = 2, warning = 3, info = 4

    public var name: String {
        switch self {
        case .none: return "none"
        case .criticalError: return "critical_error"
        case .error: return "error"
        case .warning: return "warning"
        case .info: return "info"
        }
    }

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
    case none = 0, debug = 1, info = 2

    public var name: String {
        switch self {
        case .none: return "none"
        case .debug: return "debug"
        case .info: return "info"
        }
    }

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
    public var severity: LogSeverity
    public var verbosity: LogVerbosity

    public init(severity: LogSeverity = .error, verbosity: LogVerbosity = .debug) {
        self.severity = severity
        self.verbosity = verbosity
    }

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
    public var severity: LogSeverity
    public var verbosity: LogVerbosity
    public var timeMs: Int64
    /// "hubhost", an engine label ("hubhost.loader") or a plugin instance id.
    public var source: String
    public var message: String
    /// The record of something the operator did (a reload): logged at any severity setting but None.
    public var isOperatorAction: Bool

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
