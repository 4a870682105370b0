import Foundation

/// A typed value as it crosses the plugin boundary (hh_value_t): string, int64, double, bool,
/// time in milliseconds, or null.
public enum PluginValue: Equatable, Sendable, CustomStringConvertible {
    /// No value (HH_VALUE_NULL).
    case null
    /// A UTF-8 string.
    case string(String)
    /// A signed 64-bit integer.
    case int(Int64)
    /// A double.
    case double(Double)
    /// A boolean.
    case bool(Bool)
    /// A time, in milliseconds since 1970 (a config `time`).
    case timeMs(Int64)

    /// The payload when the value is of that type, else nil (settings read their schema-checked values so).
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The payload of a `.bool`, else nil.
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The payload of a `.double`, else nil (an `.int` is not converted).
    public var doubleValue: Double? { if case .double(let d) = self { return d } else { return nil } }
    /// The payload of an `.int`, else nil (a `.timeMs` is not one).
    public var intValue: Int64? { if case .int(let i) = self { return i } else { return nil } }

    /// The type's name for messages, as config schemas spell types: "null", "string", "int", "double", "bool" or "time".
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .string: return "string"
        case .int: return "int"
        case .double: return "double"
        case .bool: return "bool"
        case .timeMs: return "time"
        }
    }

    public var description: String {
        switch self {
        case .null: return "null"
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .bool(let b): return String(b)
        case .timeMs(let t): return String(t)
        }
    }

    /// A JSON-friendly form for `--json` output.
    public var json: JSONValue {
        switch self {
        case .null: return .null
        case .string(let s): return .string(s)
        case .int(let i): return .number(Double(i))
        case .double(let d): return .number(d)
        case .bool(let b): return .bool(b)
        case .timeMs(let t): return .number(Double(t))
        }
    }
}

/// A minimal JSON value: for printing resolved configuration, notification payloads, and reading
/// JSON whose types matter (a number is never taken for a boolean, nor the other way round).
public enum JSONValue: Codable, Equatable, Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    /// JSON `null`.
    case null
    /// A JSON string.
    case string(String)
    /// A JSON number; written as an integer when it is a whole number below 9e15 in magnitude.
    case number(Double)
    /// JSON `true` or `false`.
    case bool(Bool)
    /// A JSON array, in order.
    case array([JSONValue])
    /// A JSON object; key order is not kept.
    case object([String: JSONValue])

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .string(let s): try container.encode(s)
        case .number(let d):
            if d == d.rounded(), abs(d) < 9e15 { try container.encode(Int64(d)) } else { try container.encode(d) }
        case .bool(let b): try container.encode(b)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let d = try? container.decode(Double.self) {
            self = .number(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The value as compact JSON text, e.g. `"three"`, `-2`, `2.5`, `true`: how it was sent.
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// The value as plain text: a string as it is, a whole number without a fraction, others as JSON.
    public var plainText: String {
        switch self {
        case .string(let s): return s
        case .number(let d) where d == d.rounded() && abs(d) < 9e15: return String(Int64(d))
        default: return jsonText
        }
    }

    /// "a string", "a number", ...: the JSON type, for messages.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
