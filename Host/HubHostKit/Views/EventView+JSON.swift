import Foundation

/// Events as JSON, written by hand because `POST /v1/events` answers every request with them:
/// JSONEncoder was a large part of a one-event request's time. The bytes are what JSONEncoder with
/// `.sortedKeys` writes for the events' views (keys sorted, "/" escaped as "\/", control characters
/// as \b \f \n \r \t or \u00xx, whole numbers below 9e15 without a fraction; a test compares the
/// two), except a number that is not finite, which is written as null where JSONEncoder fails.
extension EventView {
    /// `events` as JSONEncoder writes their views (with no last error), without making the views:
    /// what `POST /v1/events` answers, so no dictionary of attributes is built per event.
    package static func json(events: [Event]) -> Data {
        let bound = jsonByteBound(events: events)
        return [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
            count = writeJSON(events: events, to: UnsafeMutableRawBufferPointer(buffer))
        }.withUnsafeBufferPointer { Data(buffer: $0) }
    }

    /// The most bytes `writeJSON(events:to:)` writes for `events`: every text byte escaped takes at
    /// most 6 (`\u00XX`); 384 per event hold its keys, quotes, numbers (20 digits at most) and
    /// time (under 64 bytes, even for a year the formatter writes with more digits); 64 per
    /// attribute its quotes, colon, comma and a number's text (at most 24 bytes).
    package static func jsonByteBound(events: [Event]) -> Int {
        var bound = 2
        for event in events {
            bound += 384 + 6 * (event.id.utf8.count + event.name.utf8.count + (event.traceparent?.utf8.count ?? 0))
            for attribute in event.attributes {
                bound += 64 + 6 * attribute.name.utf8.count
                if case .string(let text) = attribute.value { bound += 6 * text.utf8.count }
            }
        }
        return bound
    }

    /// Writes what `json(events:)` answers into `memory` (at least `jsonByteBound(events:)`
    /// bytes) and returns how many bytes it wrote: the route writes it straight into the answer's
    /// buffer, where writing it into an array piece by piece, then copying it into Data and again
    /// into the answer, cost about as much as reading the request.
    package static func writeJSON(events: [Event], to memory: UnsafeMutableRawBufferPointer) -> Int {
        let bound = jsonByteBound(events: events)
        precondition(memory.count >= bound, "EventView.writeJSON: less memory than the bound")
        var out = ByteWriter(base: memory.baseAddress!.assumingMemoryBound(to: UInt8.self))
        out.byte(UInt8(ascii: "["))
        for (n, event) in events.enumerated() {
            if n > 0 { out.byte(UInt8(ascii: ",")) }
            out.literal(#"{"attempts":"#)
            out.integer(Int64(event.attempts))
            out.literal(#","attributes":"#)
            writeAttributes(event.attributes, to: &out)
            out.literal(#","id":"#)
            CollectorJSON.string(event.id, to: &out)
            out.literal(#","name":"#)
            CollectorJSON.string(event.name, to: &out)
            out.literal(#","status":"#)
            CollectorJSON.string(event.status.rawValue, to: &out)
            out.literal(#","timestamp":"#)
            CollectorJSON.string(UTCTimestamp.text(ms: event.timestampMs), to: &out)
            out.literal(#","timestampMs":"#)
            out.integer(event.timestampMs)
            if let traceparent = event.traceparent {
                out.literal(#","traceparent":"#)
                CollectorJSON.string(traceparent, to: &out)
            }
            out.literal(#","type":"#)
            CollectorJSON.string(event.type.rawValue, to: &out)
            out.literal(#","typeCode":"#)
            out.integer(Int64(event.type.code))
            out.byte(UInt8(ascii: "}"))
        }
        out.byte(UInt8(ascii: "]"))
        precondition(out.count <= bound, "EventView: the size bound was wrong")
        return out.count
    }

    /// An event's attributes as the view's dictionary writes them: sorted by name, and of two with
    /// one name the later (the dictionary keeps the last); each value as JSONEncoder writes the
    /// view's number, text, boolean or null.
    private static func writeAttributes(_ attributes: [Event.Attribute], to out: inout ByteWriter) {
        var order = Array(attributes.indices)
        order.sort { attributes[$0].name < attributes[$1].name || (attributes[$0].name == attributes[$1].name && $0 < $1) }
        out.byte(UInt8(ascii: "{"))
        var first = true
        for (k, index) in order.enumerated() {
            if k + 1 < order.count, attributes[order[k + 1]].name == attributes[index].name { continue }
            if !first { out.byte(UInt8(ascii: ",")) }
            first = false
            CollectorJSON.string(attributes[index].name, to: &out)
            out.byte(UInt8(ascii: ":"))
            switch attributes[index].value {
            case .null: out.literal("null")
            case .string(let text): CollectorJSON.string(text, to: &out)
            case .int(let i): number(Double(i), to: &out)
            case .double(let d): number(d, to: &out)
            case .bool(let b): out.literal(b ? "true" : "false")
            case .timeMs(let t): number(Double(t), to: &out)
            }
        }
        out.byte(UInt8(ascii: "}"))
    }

    /// A number as JSONEncoder writes the view's: whole below 9e15 without a fraction, else Swift's
    /// text of it; not finite as null (where JSONEncoder fails).
    private static func number(_ d: Double, to out: inout ByteWriter) {
        if d == d.rounded(), abs(d) < 9e15 {
            out.integer(Int64(d))
        } else if d.isFinite {
            out.text(d.description)
        } else {
            out.literal("null")
        }
    }
}
