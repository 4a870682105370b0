/// The attributes column of the event store, written by hand: the same JSON the Codable form
/// reads back (`[{"name":"Level","value":{"type":"int","value":3}},...]`) at a fraction of
/// JSONEncoder's cost, which was most of `track`'s time in `hubhost bench events`.
enum AttributeJSON {
    static func encode(_ attributes: [Event.Attribute]) -> String {
        var out = "["
        out.reserveCapacity(48 * attributes.count + 2)
        for (index, attribute) in attributes.enumerated() {
            if index > 0 { out += "," }
            out += "{\"name\":"
            appendString(attribute.name, to: &out)
            out += ",\"value\":{\"type\":\""
            switch attribute.value {
            case .null: out += "null\"}"
            case .string(let s):
                out += "string\",\"value\":"
                appendString(s, to: &out)
                out += "}"
            case .int(let i): out += "int\",\"value\":\(i)}"
            case .double(let d):
                // JSON has no NaN or infinity: such a value is stored as null.
                out += d.isFinite ? "double\",\"value\":\(d)}" : "null\"}"
            case .bool(let b): out += "bool\",\"value\":\(b)}"
            case .timeMs(let t): out += "time\",\"value\":\(t)}"
            }
            out += "}"
        }
        out += "]"
        return out
    }

    static func appendString(_ text: String, to out: inout String) {
        out += "\""
        // Most texts need no escaping: append them whole.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out += text
            out += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
