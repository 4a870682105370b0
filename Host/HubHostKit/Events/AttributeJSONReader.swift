import Foundation

/// Reads the attributes column back by hand: every claim of a delivery decodes a whole batch of
/// rows, and JSONDecoder was about a fifth of `hubhost bench sinks`. The fast path takes the JSON
/// AttributeJSON writes and any other valid JSON of the same shape (keys in any order, whitespace,
/// every escape, as older rows written by JSONEncoder have); anything it does not recognise (an
/// unknown type, an int written as 3.0, malformed text) returns nil and the caller falls back to
/// JSONDecoder, so the result and the errors are the Codable form's.
package enum AttributeJSONReader {
    /// The attributes, or nil when the text is not in the shape this reader knows.
    package static func decode(_ text: String) -> [Event.Attribute]? {
        var text = text
        return text.withUTF8 { bytes in
            var reader = JSONScanner(bytes: bytes)
            return reader.attributes()
        }
    }

    /// The full decode: the fast path, else JSONDecoder (which throws on bad text).
    package static func decodeOrThrow(_ text: String) throws -> [Event.Attribute] {
        if let attributes = decode(text) { return attributes }
        return try JSONDecoder().decode([Event.Attribute].self, from: Data(text.utf8))
    }
}

/// The attributes column's shape, read with JSONScanner's tokens.
extension JSONScanner {
    fileprivate mutating func attributes() -> [Event.Attribute]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var result: [Event.Attribute] = []
        if take(UInt8(ascii: "]")) { return end() ? result : nil }
        while true {
            guard let attribute = attribute() else { return nil }
            result.append(attribute)
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "]")) else { return nil }
            return end() ? result : nil
        }
    }

    /// `{"name":"...","value":{...}}`, keys in any order, each exactly once.
    fileprivate mutating func attribute() -> Event.Attribute? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var name: String?
        var value: PluginValue?
        repeat {
            guard let key = string() else { return nil }
            guard take(UInt8(ascii: ":")) else { return nil }
            switch key {
            case "name" where name == nil:
                guard let text = string() else { return nil }
                name = text
            case "value" where value == nil:
                guard let typed = typedValue() else { return nil }
                value = typed
            default: return nil  // an unknown or repeated key: let JSONDecoder judge
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), let name, let value else { return nil }
        return Event.Attribute(name, value)
    }

    /// `{"type":"int","value":3}` (no "value" for null).
    fileprivate mutating func typedValue() -> PluginValue? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var type: String?
        var raw: Scalar?
        repeat {
            guard let key = string() else { return nil }
            guard take(UInt8(ascii: ":")) else { return nil }
            switch key {
            case "type" where type == nil:
                guard let text = string() else { return nil }
                type = text
            case "value" where raw == nil:
                guard let scalar = scalar() else { return nil }
                raw = scalar
            default: return nil
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), let type else { return nil }
        switch (type, raw) {
        case ("null", _): return .null  // the Codable form ignores a value here
        case ("string", .text(let text)?): return .string(text)
        case ("int", .number(let digits)?): return Int64(digits).map { .int($0) }
        case ("time", .number(let digits)?): return Int64(digits).map { .timeMs($0) }
        case ("double", .number(let digits)?): return Double(digits).map { .double($0) }
        case ("bool", .bool(let flag)?): return .bool(flag)
        default: return nil
        }
    }

    fileprivate enum Scalar {
        case text(String)
        case number(Substring)
        case bool(Bool)
        case null
    }

    fileprivate mutating func scalar() -> Scalar? {
        skipSpace()
        guard at < bytes.count else { return nil }
        switch bytes[at] {
        case UInt8(ascii: "\""): return string().map { .text($0) }
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        default:
            // A JSON number starts with '-' or a digit; Int64 and Double then read it (an int with a
            // fraction or exponent is not an Int64: the fallback decides).
            let start = at
            guard bytes[at] == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) else { return nil }
            while at < bytes.count, Self.isNumberByte(bytes[at]) { at += 1 }
            return .number(Substring(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self))
        }
    }

    fileprivate static func isNumberByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }
}
