/// Reads JSON text into a JSONValue by hand, for columns read back on every query: JSONDecoder
/// took about 30 µs a row on the prefetch catalog's `files` and `persistent_user_info` columns,
/// five times the SQL itself. It takes any valid JSON (every escape, surrogate pairs, whitespace)
/// and returns nil for what it does not take: malformed text, a nesting deeper than 64, or a
/// number with more than 15 significant digits or an exponent beyond ±300 (which a Double could
/// not hold exactly); the caller then falls back to JSONDecoder, so the results and the errors are
/// the Codable form's.
package enum JSONValueReader {
    /// The value, or nil when the text is not JSON this reader takes whole.
    package static func read(_ text: String) -> JSONValue? {
        var text = text
        return text.withUTF8 { bytes in
            var reader = JSONScanner(bytes: bytes)
            guard let value = reader.value(depth: 0) else { return nil }
            reader.skipSpace()
            return reader.at == bytes.count ? value : nil
        }
    }
}

extension JSONScanner {
    /// Any JSON value at `at`, nested at most 64 deep.
    package mutating func value(depth: Int) -> JSONValue? {
        guard depth < 64 else { return nil }
        skipSpace()
        guard at < bytes.count else { return nil }
        switch bytes[at] {
        case UInt8(ascii: "{"):
            at += 1
            var object: [String: JSONValue] = [:]
            if take(UInt8(ascii: "}")) { return .object(object) }
            repeat {
                skipSpace()
                guard let key = string(), take(UInt8(ascii: ":")), let member = value(depth: depth + 1) else { return nil }
                if object[key] == nil { object[key] = member }  // the first of duplicate keys, as JSONDecoder keeps
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? .object(object) : nil
        case UInt8(ascii: "["):
            at += 1
            var array: [JSONValue] = []
            if take(UInt8(ascii: "]")) { return .array(array) }
            repeat {
                guard let element = value(depth: depth + 1) else { return nil }
                array.append(element)
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]")) ? .array(array) : nil
        case UInt8(ascii: "\""): return string().map(JSONValue.string)
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        default: return number().map(JSONValue.number)
        }
    }
}
