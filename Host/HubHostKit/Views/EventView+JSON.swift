import Foundation

/// Events as JSON, written by hand because `POST /v1/events` answers every request with them:
/// JSONEncoder was a large part of a one-event request's time. The bytes are what JSONEncoder with
/// `.sortedKeys` writes for the same views (keys sorted, "/" escaped as "\/", control characters as
/// \b \f \n \r \t or \u00xx, whole numbers below 9e15 without a fraction; a test compares the two),
/// except a number that is not finite, which is written as null where JSONEncoder fails.
extension EventView {
    /// A JSON array of `views`.
    package static func json(_ views: [EventView]) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(views.count * (320 + (views.first?.attributes.count ?? 0) * 40))
        out.append(UInt8(ascii: "["))
        for (n, view) in views.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            view.write(into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return Data(out)
    }

    /// This view as one JSON object, keys in JSONEncoder's sorted order.
    func write(into out: inout [UInt8]) {
        func key(_ name: StaticString, first: Bool = false) {
            if !first { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(UInt8(ascii: "\""))
            out.append(UInt8(ascii: ":"))
        }
        out.append(UInt8(ascii: "{"))
        key("attempts", first: true)
        out.append(contentsOf: String(attempts).utf8)
        key("attributes")
        JSONValue.object(attributes).write(into: &out)
        key("id")
        CollectorJSON.string(id, into: &out)
        if let lastError {
            key("lastError")
            CollectorJSON.string(lastError, into: &out)
        }
        key("name")
        CollectorJSON.string(name, into: &out)
        key("status")
        CollectorJSON.string(status, into: &out)
        key("timestamp")
        CollectorJSON.string(timestamp, into: &out)
        key("timestampMs")
        out.append(contentsOf: String(timestampMs).utf8)
        if let traceparent {
            key("traceparent")
            CollectorJSON.string(traceparent, into: &out)
        }
        key("type")
        CollectorJSON.string(type, into: &out)
        key("typeCode")
        out.append(contentsOf: String(typeCode).utf8)
        out.append(UInt8(ascii: "}"))
    }
}

extension JSONValue {
    /// This value as JSONEncoder with `.sortedKeys` writes it (see `EventView.json`).
    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .string(let s): CollectorJSON.string(s, into: &out)
        case .number(let d):
            if d == d.rounded(), abs(d) < 9e15 {
                out.append(contentsOf: String(Int64(d)).utf8)
            } else if d.isFinite {
                out.append(contentsOf: d.description.utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (n, name) in members.keys.sorted().enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                CollectorJSON.string(name, into: &out)
                out.append(UInt8(ascii: ":"))
                members[name]!.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
