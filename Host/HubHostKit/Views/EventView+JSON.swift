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

    /// `events` as `json(_:)` writes their views (with no last error), without making the views:
    /// what `POST /v1/events` answers, so no dictionary of attributes is built per event.
    package static func json(events: [Event]) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(events.count * (320 + (events.first?.attributes.count ?? 0) * 40))
        out.append(UInt8(ascii: "["))
        for (n, event) in events.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            writeObject(
                attempts: event.attempts, id: event.id, lastError: nil, name: event.name, status: event.status.rawValue,
                timestampMs: event.timestampMs, traceparent: event.traceparent, type: event.type, into: &out
            ) { out in writeAttributes(event.attributes, into: &out) }
        }
        out.append(UInt8(ascii: "]"))
        return Data(out)
    }

    /// This view as one JSON object, keys in JSONEncoder's sorted order.
    func write(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        Self.key("attempts", first: true, into: &out)
        out.append(contentsOf: String(attempts).utf8)
        Self.key("attributes", into: &out)
        JSONValue.object(attributes).write(into: &out)
        Self.writeRest(
            id: id, lastError: lastError, name: name, status: status, timestamp: timestamp, timestampMs: timestampMs,
            traceparent: traceparent, type: type, typeCode: typeCode, into: &out)
    }

    /// An event's object, its attributes written by `attributes` (the same keys and order as `write`).
    private static func writeObject(
        attempts: Int, id: String, lastError: String?, name: String, status: String, timestampMs: Int64, traceparent: String?,
        type: EventType, into out: inout [UInt8], attributes: (inout [UInt8]) -> Void
    ) {
        out.append(UInt8(ascii: "{"))
        key("attempts", first: true, into: &out)
        out.append(contentsOf: String(attempts).utf8)
        key("attributes", into: &out)
        attributes(&out)
        writeRest(
            id: id, lastError: lastError, name: name, status: status, timestamp: UTCTimestamp.text(ms: timestampMs), timestampMs: timestampMs,
            traceparent: traceparent, type: type.rawValue, typeCode: type.code, into: &out)
    }

    /// An event's attributes as the view's dictionary writes them: sorted by name, and of two with
    /// one name the later (the dictionary keeps the last).
    private static func writeAttributes(_ attributes: [Event.Attribute], into out: inout [UInt8]) {
        var order = Array(attributes.indices)
        order.sort { attributes[$0].name < attributes[$1].name || (attributes[$0].name == attributes[$1].name && $0 < $1) }
        out.append(UInt8(ascii: "{"))
        var first = true
        for (k, index) in order.enumerated() {
            if k + 1 < order.count, attributes[order[k + 1]].name == attributes[index].name { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            CollectorJSON.string(attributes[index].name, into: &out)
            out.append(UInt8(ascii: ":"))
            attributes[index].value.json.write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// `"name":`, after a comma unless it is the object's first key.
    private static func key(_ name: StaticString, first: Bool = false, into out: inout [UInt8]) {
        if !first { out.append(UInt8(ascii: ",")) }
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    /// The keys after "attributes", in sorted order, and the object's end.
    private static func writeRest(
        id: String, lastError: String?, name: String, status: String, timestamp: String, timestampMs: Int64, traceparent: String?,
        type: String, typeCode: Int, into out: inout [UInt8]
    ) {
        key("id", into: &out)
        CollectorJSON.string(id, into: &out)
        if let lastError {
            key("lastError", into: &out)
            CollectorJSON.string(lastError, into: &out)
        }
        key("name", into: &out)
        CollectorJSON.string(name, into: &out)
        key("status", into: &out)
        CollectorJSON.string(status, into: &out)
        key("timestamp", into: &out)
        CollectorJSON.string(timestamp, into: &out)
        key("timestampMs", into: &out)
        out.append(contentsOf: String(timestampMs).utf8)
        if let traceparent {
            key("traceparent", into: &out)
            CollectorJSON.string(traceparent, into: &out)
        }
        key("type", into: &out)
        CollectorJSON.string(type, into: &out)
        key("typeCode", into: &out)
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
