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
            var reader = Reader(bytes: bytes)
            return reader.attributes()
        }
    }

    /// The full decode: the fast path, else JSONDecoder (which throws on bad text).
    package static func decodeOrThrow(_ text: String) throws -> [Event.Attribute] {
        if let attributes = decode(text) { return attributes }
        return try JSONDecoder().decode([Event.Attribute].self, from: Data(text.utf8))
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func attributes() -> [Event.Attribute]? {
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
        mutating func attribute() -> Event.Attribute? {
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
        mutating func typedValue() -> PluginValue? {
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

        enum Scalar {
            case text(String)
            case number(Substring)
            case bool(Bool)
            case null
        }

        mutating func scalar() -> Scalar? {
            skipSpace()
            guard at < bytes.count else { return nil }
            switch bytes[at] {
            case UInt8(ascii: "\""): return string().map { .text($0) }
            case UInt8(ascii: "t"): return word("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return word("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return word("null") ? .null : nil
            default:
                // A JSON number starts with '-' or a digit; Int64 and Double then read it (an int with a
                // fraction or exponent is not an Int64: the fallback decides).
                let start = at
                guard bytes[at] == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) else { return nil }
                while at < bytes.count, Self.isNumberByte(bytes[at]) { at += 1 }
                return .number(Substring(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self))
            }
        }

        static func isNumberByte(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
        }

        mutating func word(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard at + count <= bytes.count else { return false }
            for index in 0..<count where bytes[at + index] != literal.utf8Start[index] { return false }
            at += count
            return true
        }

        /// A JSON string; nil on a bad escape or an unescaped control character.
        mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = at
            // Most strings have no escape: one copy of the bytes between the quotes.
            while at < bytes.count {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
                    at += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                at += 1
            }
            var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<at]))
            while at < bytes.count {
                let byte = bytes[at]
                at += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)  // the column is a Swift String: valid UTF-8
                case 0..<0x20: return nil
                case UInt8(ascii: "\\"):
                    guard at < bytes.count else { return nil }
                    let escape = bytes[at]
                    at += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let unit = hex4() else { return nil }
                        var scalarValue = UInt32(unit)
                        if (0xD800..<0xDC00).contains(unit) {  // a surrogate pair
                            guard word("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(scalarValue) else { return nil }
                        out += Array(String(Character(scalar)).utf8)
                    default: return nil
                    }
                default: out.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt16? {
            guard at + 4 <= bytes.count else { return nil }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[at]
                at += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
            }
            return value
        }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
        }

        /// Skips whitespace, then takes `byte` if it is next.
        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        /// Whether only whitespace is left.
        mutating func end() -> Bool {
            skipSpace()
            return at == bytes.count
        }
    }
}
