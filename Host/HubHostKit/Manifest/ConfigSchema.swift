import Foundation
import Yams

/// The type of one configuration key, as a plugin.yaml `config:` entry declares it.
package enum ConfigType: String, Codable, CaseIterable, Sendable {
    case string, int, double, bool
    /// Seconds or an Engage expiration string; plugins read it as a double of seconds.
    case duration
    /// Milliseconds since 1970-01-01T00:00:00Z.
    case time
}

/// The numbers a numeric configuration key accepts (int, double, duration in seconds, time).
package struct ConfigRange: Equatable, Sendable {
    package var minimum: Double?
    /// True when the minimum itself is refused ("more than 0").
    package var excludesMinimum: Bool
    package var maximum: Double?

    package init(minimum: Double?, excludesMinimum: Bool = false, maximum: Double?) {
        self.minimum = minimum
        self.excludesMinimum = excludesMinimum
        self.maximum = maximum
    }

    /// `lower` to `upper`, both accepted.
    package static func between(_ lower: Double, _ upper: Double) -> ConfigRange { ConfigRange(minimum: lower, maximum: upper) }
    package static func atLeast(_ lower: Double) -> ConfigRange { ConfigRange(minimum: lower, maximum: nil) }
    /// More than 0, and at most `upper` when given.
    package static func positive(atMost upper: Double? = nil) -> ConfigRange { ConfigRange(minimum: 0, excludesMinimum: true, maximum: upper) }

    package func contains(_ value: Double) -> Bool {
        guard value.isFinite else { return false }
        if let minimum, excludesMinimum ? value <= minimum : value < minimum { return false }
        if let maximum, value > maximum { return false }
        return true
    }

    /// "between 1 and 64", "at least 0.1", "more than 0", "more than 0, at most 3600".
    package var text: String {
        func number(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        }
        switch (minimum, maximum) {
        case (let low?, let high?) where !excludesMinimum: return "between \(number(low)) and \(number(high))"
        case (let low?, let high?): return "more than \(number(low)), at most \(number(high))"
        case (let low?, nil): return excludesMinimum ? "more than \(number(low))" : "at least \(number(low))"
        case (nil, let high?): return "at most \(number(high))"
        case (nil, nil): return "any"
        }
    }
}

/// One key of a configuration schema: a plugin's `config:` (declared in its plugin.yaml) or a
/// section of plugins.yaml (declared by the engine's settings type). The schema is the one place a
/// key's type, default, accepted values and meaning are written: the parser checks them, `config
/// show` prints them and `hubhost config reference` documents them.
package struct ConfigKey: Encodable, Equatable, Sendable {
    package var key: String
    package var type: ConfigType
    package var defaultValue: PluginValue?
    package var required: Bool
    package var doc: String
    /// The numbers accepted (numeric types); nil: any the type can hold.
    package var range: ConfigRange?
    /// The strings accepted (string type); nil: any. An empty string always means "not set".
    package var allowedValues: [String]?
    /// True when an empty string is refused (a string the plugin cannot do without).
    package var nonEmpty: Bool
    /// A regular expression the whole string must match (string type); nil: any.
    package var pattern: String?
    /// A setting of a plugins.yaml section that a reload applies to a running serve (the other
    /// keys are read once, when their engine opens, and a reload that changes one is refused).
    /// The reload, `config reference` and docs/reload.md read it; a plugin's own keys leave it false.
    package var live: Bool

    enum CodingKeys: String, CodingKey {
        case key, type, defaultValue = "default", required, doc, minimum, maximum, allowed, nonEmpty = "non_empty", pattern
    }

    package init(
        key: String, type: ConfigType, defaultValue: PluginValue? = nil, required: Bool = false, doc: String = "",
        range: ConfigRange? = nil, allowedValues: [String]? = nil, nonEmpty: Bool = false, pattern: String? = nil,
        live: Bool = false
    ) {
        self.key = key
        self.type = type
        self.defaultValue = defaultValue
        self.required = required
        self.doc = doc
        self.range = range
        self.allowedValues = allowedValues
        self.nonEmpty = nonEmpty
        self.pattern = pattern
        self.live = live
    }

    /// True when `pattern` compiles and matches all of `text`.
    static func matchesWhole(_ text: String, _ pattern: String) -> Bool {
        guard let expression = try? NSRegularExpression(pattern: "^(?:" + pattern + ")$", options: [.dotMatchesLineSeparators]) else { return false }
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// Why `value` is refused by the key's range, allowed values, non-emptiness or pattern; nil when it is accepted.
    package func refusal(of value: PluginValue) -> String? {
        if let range {
            let number: Double?
            switch value {
            case .int(let i), .timeMs(let i): number = Double(i)
            case .double(let d): number = d
            default: number = nil
            }
            if let number, !range.contains(number) {
                let unit = type == .duration ? " s" : ""
                return "must be \(range.text)\(unit), not \(value)\(unit)"
            }
        }
        guard case .string(let text) = value else { return nil }
        if nonEmpty, text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return "must not be empty"
        }
        if let allowedValues, !text.isEmpty, !allowedValues.contains(text) {
            return "unknown value '\(text)'; expected one of: \(allowedValues.joined(separator: ", "))"
        }
        if let pattern, !Self.matchesWhole(text, pattern) {
            return "'\(text)' does not match \(pattern)" + (doc.isEmpty ? "" : " (\(doc))")
        }
        return nil
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(type, forKey: .type)
        try container.encode(defaultValue?.json ?? .null, forKey: .defaultValue)
        try container.encode(required, forKey: .required)
        try container.encode(doc, forKey: .doc)
        try container.encodeIfPresent(range?.minimum, forKey: .minimum)
        try container.encodeIfPresent(range?.maximum, forKey: .maximum)
        try container.encodeIfPresent(allowedValues, forKey: .allowed)
        if nonEmpty { try container.encode(true, forKey: .nonEmpty) }
        try container.encodeIfPresent(pattern, forKey: .pattern)
    }
}

/// A plugin's configuration schema: checks an instance's `config:` map from plugins.yaml and fills in defaults.
package struct ConfigSchema: Equatable, Sendable {
    package var keys: [ConfigKey]

    package init(keys: [ConfigKey]) { self.keys = keys }

    /// `values` with every key's default where it has none (a settings type's stored values).
    package func withDefaults(_ values: [String: PluginValue]) -> [String: PluginValue] {
        var filled = values
        for key in keys where filled[key.key] == nil { filled[key.key] = key.defaultValue }
        return filled
    }

    /// Converts one YAML value to the key's type; reports and returns nil when it does not fit.
    func value(of node: Node, as type: ConfigType, key: String, reader: YAMLReader) -> PluginValue? {
        switch type {
        case .string:
            if case .scalar(let scalar) = node, !reader.isNull(node) { return .string(scalar.string) }
            reader.report(node, key: key, "expected a string, found \(reader.describe(node))")
            return nil
        case .int: return reader.int(node, key: key).map(PluginValue.int)
        case .double: return reader.double(node, key: key).map(PluginValue.double)
        case .bool: return reader.bool(node, key: key).map(PluginValue.bool)
        case .duration: return reader.duration(node, key: key).map(PluginValue.double)
        case .time: return reader.int(node, key: key).map(PluginValue.timeMs)
        }
    }

    /// Checks `config` (nil when the instance has none) against the schema. Unknown keys, wrong
    /// types and missing required keys are reported; the result has every key with a value,
    /// defaults included.
    func resolve(_ config: Node?, path: String, reader: YAMLReader, reportAt anchor: Node) -> [String: PluginValue] {
        var lines: [String: Int] = [:]
        return resolve(config, path: path, reader: reader, reportAt: anchor, lines: &lines)
    }

    /// As above, also telling on which line each key was given (keys left at their default are absent).
    func resolve(_ config: Node?, path: String, reader: YAMLReader, reportAt anchor: Node, lines: inout [String: Int]) -> [String: PluginValue] {
        var resolved: [String: PluginValue] = [:]
        var given: [String: (keyNode: Node, value: Node)] = [:]
        if let config, let entries = reader.mapping(config, key: path) {
            given = reader.known(
                entries, allowed: keys.map(\.key), in: path, what: "config key",
                none: "the plugin takes no config keys (its plugin.yaml declares no config:); remove the instance's config")
        }
        for key in keys {
            if let entry = given[key.key], !reader.isNull(entry.value) {
                if let value = value(of: entry.value, as: key.type, key: "\(path).\(key.key)", reader: reader) {
                    if let refusal = key.refusal(of: value) {
                        // Refused: reported, and the key keeps its default.
                        reader.report(entry.value, key: "\(path).\(key.key)", refusal)
                        if let fallback = key.defaultValue { resolved[key.key] = fallback }
                    } else {
                        resolved[key.key] = value
                        lines[key.key] = entry.keyNode.mark?.line
                    }
                }
            } else if let fallback = key.defaultValue {
                resolved[key.key] = fallback
            } else if key.required {
                reader.report(
                    given[key.key]?.keyNode ?? config ?? anchor, key: "\(path).\(key.key)",
                    "required config key '\(key.key)' (\(key.type.rawValue)) is missing\(key.doc.isEmpty ? "" : ": \(key.doc)")")
            }
        }
        return resolved
    }
}

extension ConfigSchema {
    /// Checks a config given as values (the Swift API and PluginTestKit; plugins.yaml goes through
    /// YAML with positions instead). Fills in defaults; throws every problem at once.
    package func resolve(values: [String: PluginValue], source: String = "config") throws -> [String: PluginValue] {
        var problems: [String] = []
        var resolved: [String: PluginValue] = [:]
        let declared = Set(keys.map(\.key))
        for key in values.keys.sorted() where !declared.contains(key) {
            problems.append(
                "unknown config key '\(key)'" + (keys.isEmpty ? ": the plugin takes no config keys" : Suggestion.hint(for: key, in: keys.map(\.key))))
        }
        for key in keys {
            guard let value = values[key.key], value != .null else {
                if let fallback = key.defaultValue {
                    resolved[key.key] = fallback
                } else if key.required {
                    problems.append("required config key '\(key.key)' (\(key.type.rawValue)) is missing")
                }
                continue
            }
            switch (key.type, value) {
            case (.string, .string), (.int, .int), (.double, .double), (.bool, .bool), (.time, .timeMs), (.duration, .double):
                resolved[key.key] = value
            case (.double, .int(let i)), (.duration, .int(let i)):
                resolved[key.key] = .double(Double(i))
            case (.time, .int(let i)):
                resolved[key.key] = .timeMs(i)
            case (.duration, .string(let text)):
                switch EngageDuration.parse(text) {
                case .success(let seconds): resolved[key.key] = .double(seconds)
                case .failure(let error): problems.append("'\(key.key)': \(error)")
                }
            default:
                problems.append("'\(key.key)' expects \(key.type.rawValue), got \(value.typeName) \(value)")
            }
            if let accepted = resolved[key.key], let refusal = key.refusal(of: accepted) {
                problems.append("'\(key.key)' \(refusal)")
                resolved[key.key] = key.defaultValue
            }
        }
        guard problems.isEmpty else {
            throw ManifestError(problems.map { ManifestDiagnostic(file: source, line: 0, column: 0, key: "", message: $0) })
        }
        return resolved
    }
}
