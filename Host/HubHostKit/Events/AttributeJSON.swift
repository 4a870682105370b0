/// The attributes column of the event store, written by hand: the same JSON the Codable form
/// reads back (`[{"name":"Level","value":{"type":"int","value":3}},...]`) at a fraction of
/// JSONEncoder's cost, which was most of `track`'s time in `hubhost bench events`.
enum AttributeJSON {
    /// Encodes into one byte buffer and makes one String at the end: appending to a String piece by
    /// piece (capacity checks, grapheme bookkeeping on every append) cost more than SQLite's insert.
    static func encode(_ attributes: [Event.Attribute]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(64 * attributes.count + 2)
        out.append(UInt8(ascii: "["))
        for (index, attribute) in attributes.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            append("{\"name\":", to: &out)
            appendString(attribute.name, to: &out)
            append(",\"value\":{\"type\":\"", to: &out)
            switch attribute.value {
            case .null: append("null\"}", to: &out)
            case .string(let s):
                append("string\",\"value\":", to: &out)
                appendString(s, to: &out)
                out.append(UInt8(ascii: "}"))
            case .int(let i):
                append("int\",\"value\":", to: &out)
                appendInteger(i, to: &out)
                out.append(UInt8(ascii: "}"))
            case .double(let d):
                // JSON has no NaN or infinity: such a value is stored as null.
                if d.isFinite {
                    append("double\",\"value\":", to: &out)
                    append(d.description, to: &out)
                    out.append(UInt8(ascii: "}"))
                } else {
                    append("null\"}", to: &out)
                }
            case .bool(let b): append(b ? "bool\",\"value\":true}" : "bool\",\"value\":false}", to: &out)
            case .timeMs(let t):
                append("time\",\"value\":", to: &out)
                appendInteger(t, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    @inline(__always)
    static func append(_ text: StaticString, to out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func append(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value == 0 { out.append(UInt8(ascii: "0")); return }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for 20 digits, no allocation
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            if value < 0 { out.append(UInt8(ascii: "-")) }
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[i]) }
        }
    }

    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            // Most texts need no escaping: append them whole.
            guard bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                out.append(contentsOf: bytes)
                return
            }
            let hex = Array("0123456789abcdef".utf8)
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""): append("\\\"", to: &out)
                case UInt8(ascii: "\\"): append("\\\\", to: &out)
                case UInt8(ascii: "\n"): append("\\n", to: &out)
                case UInt8(ascii: "\r"): append("\\r", to: &out)
                case UInt8(ascii: "\t"): append("\\t", to: &out)
                case 0..<0x20:
                    append("\\u00", to: &out)
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0x0F)])
                default: out.append(byte)  // UTF-8 passes through unchanged (JSON is UTF-8)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
