import Foundation

/// The common shape of `POST /v1/events` read straight from the bytes, before JSONSerialization.
///
/// Why: under `wrk -c32` one event per request, parsing the body with JSONSerialization (its
/// NSDictionary, NSNumber and bridging) was the largest single cost of serve that hubhost owns
/// (`perf record`: about 10% of the server's CPU for a 100-byte event). Most clients send one
/// shape: an object, or a list of objects, with `type`, `name`, `id`, `timestamp` (an integer)
/// and `attributes` of plain strings, numbers, booleans and nulls, in ASCII without escapes.
///
/// The rule that keeps this safe: this reader either produces exactly the events the general
/// reader (`EventInput.parseGeneral`) would, or gives up (nil) and the general reader reads the
/// input from the start. It never reports a problem itself, so every error message, limit and
/// refusal still comes from one place. It gives up on anything it does not read itself: escapes,
/// non-ASCII or control bytes in a string, a number in any form but a plain integer of at most 18
/// digits or a plain decimal (no exponent, no `-0`, no leading zero), a nested or explicitly typed
/// value, a key twice, an unknown key, `purchase`, `{"events": [...]}`, an empty list, and any
/// event the limits or the purchase rules would refuse. `EventInputCommonShapeTests` checks the
/// two readers against each other on hand-written and generated inputs.
extension EventInput {
    /// The events of `data` when it has the common shape; nil when the general reader must read it.
    static func parseCommonShape(_ data: Data) -> [Event]? {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> [Event]? in
            var reader = CommonShapeReader(bytes: bytes)
            return reader.document()
        }
    }
}

/// A one-pass reader over the body's bytes for `parseCommonShape`; every method returns nil (or
/// false) to give up.
private struct CommonShapeReader {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")
    private static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    private static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
    private static let minus = UInt8(ascii: "-"), dot = UInt8(ascii: "."), zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")

    /// One event object, or a non-empty list of them, and nothing after it but whitespace.
    mutating func document() -> [Event]? {
        skipWhitespace()
        var events: [Event] = []
        if peek() == Self.openBracket {
            position += 1
            skipWhitespace()
            guard peek() != Self.closeBracket else { return nil }  // no events: the general reader says so
            while true {
                guard let event = event(), events.count < EventLimits.maxEventsPerRequest else { return nil }
                events.append(event)
                skipWhitespace()
                guard let next = take() else { return nil }
                if next == Self.closeBracket { break }
                guard next == Self.comma else { return nil }
                skipWhitespace()
            }
        } else {
            guard let event = event() else { return nil }
            events.append(event)
        }
        skipWhitespace()
        return position == bytes.count ? events : nil
    }

    /// `{"type": ..., "name": ..., "id": ..., "timestamp": ..., "attributes": {...}}`, each key at
    /// most once, every one optional; built and checked as the general reader builds and checks it.
    private mutating func event() -> Event? {
        guard take() == Self.openBrace else { return nil }
        var typeText: String?
        var name: String?
        var id: String?
        var timestamp: Int64?
        var attributes: [Event.Attribute]?
        skipWhitespace()
        if peek() == Self.closeBrace {
            position += 1
        } else {
            while true {
                guard let key = string() else { return nil }
                skipWhitespace()
                guard take() == Self.colon else { return nil }
                skipWhitespace()
                // A key given twice is refused: each of the five is read at most once (no set of keys).
                switch key {
                case "type":
                    guard typeText == nil, let text = string() else { return nil }
                    typeText = text
                case "name":
                    guard name == nil, let text = string() else { return nil }
                    name = text
                case "id":
                    guard id == nil, let text = string() else { return nil }
                    id = text
                case "timestamp":
                    guard timestamp == nil, case .int(let value)? = number() else { return nil }
                    timestamp = value
                case "attributes":
                    guard attributes == nil, let list = attributeObject() else { return nil }
                    attributes = list
                default: return nil  // purchase, events, or a key the general reader refuses
                }
                skipWhitespace()
                guard let next = take() else { return nil }
                if next == Self.closeBrace { break }
                guard next == Self.comma else { return nil }
                skipWhitespace()
            }
        }
        guard let type = EventType(text: typeText ?? "named_event") else { return nil }
        var event = Event(type: type, name: name ?? "")
        if let id, !id.isEmpty {
            guard id.utf8.count <= 128 else { return nil }
            event.id = id
        }
        if let timestamp {
            guard let ms = try? EventInput.time(NSNumber(value: timestamp), what: "'timestamp'") else { return nil }
            event.timestampMs = ms
        }
        if let attributes {  // at most EventLimits.maxAttributes (attributeObject)
            // The general reader appends them in the order of their sorted names. Sorted, a name
            // given twice is next to itself: refused here rather than through a set of names.
            let sorted = attributes.sorted { $0.name < $1.name }
            guard !zip(sorted, sorted.dropFirst()).contains(where: { $0.name == $1.name }) else { return nil }
            event.attributes = sorted
        }
        guard (try? EventLimits.check(event)) != nil, (try? Purchase.validate(event)) != nil else { return nil }
        return event
    }

    /// `{"name": value, ...}` of plain values (a name given twice is refused by `event`, once sorted).
    private mutating func attributeObject() -> [Event.Attribute]? {
        guard take() == Self.openBrace else { return nil }
        var attributes: [Event.Attribute] = []
        skipWhitespace()
        if peek() == Self.closeBrace {
            position += 1
            return attributes
        }
        while true {
            guard let name = string(), attributes.count < EventLimits.maxAttributes else { return nil }
            skipWhitespace()
            guard take() == Self.colon else { return nil }
            skipWhitespace()
            guard let value = plainValue() else { return nil }
            attributes.append(Event.Attribute(name, value))
            skipWhitespace()
            guard let next = take() else { return nil }
            if next == Self.closeBrace { return attributes }
            guard next == Self.comma else { return nil }
            skipWhitespace()
        }
    }

    /// A string, a number, true, false or null.
    private mutating func plainValue() -> PluginValue? {
        guard let first = peek() else { return nil }
        switch first {
        case Self.quote: return string().map { .string($0) }
        case Self.minus, Self.zero...Self.nine: return number()
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        default: return nil  // an object or a list: the general reader
        }
    }

    /// A string of printable ASCII without escapes.
    private mutating func string() -> String? {
        guard take() == Self.quote else { return nil }
        let start = position
        while let byte = peek() {
            if byte == Self.quote {
                let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                position += 1
                return text
            }
            guard byte >= 0x20, byte < 0x7F, byte != Self.backslash else { return nil }
            position += 1
        }
        return nil
    }

    /// `-?(0|[1-9][0-9]{0,17})` as an integer, or `-?(0|[1-9][0-9]*).[0-9]+` of at most 15 digits
    /// in all as a double; no exponent and no integer `-0` (whose types the general reader decides
    /// in its own way). Why 15: Foundation's JSON reader rounds a decimal of 16 digits or more
    /// differently from `Double(String)` (0.1000000000000000055511151231257827 reads as
    /// 0.10000000000000005 there, 0.1 here); up to 15 the two agree bit for bit (200,000 random
    /// decimals of 2 to 25 digits compared: no difference below 16).
    private mutating func number() -> PluginValue? {
        let start = position
        if peek() == Self.minus { position += 1 }
        let digitsStart = position
        while let byte = peek(), byte >= Self.zero, byte <= Self.nine { position += 1 }
        let digits = position - digitsStart
        guard digits > 0, digits <= 18, digits == 1 || bytes[digitsStart] != Self.zero else { return nil }
        var isDecimal = false
        if peek() == Self.dot {
            isDecimal = true
            position += 1
            let fractionStart = position
            while let byte = peek(), byte >= Self.zero, byte <= Self.nine { position += 1 }
            guard position > fractionStart, digits + (position - fractionStart) <= 15 else { return nil }
        }
        if let next = peek(), next == UInt8(ascii: "e") || next == UInt8(ascii: "E") { return nil }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if isDecimal { return Double(text).map { .double($0) } }
        guard let integer = Int64(text), !(integer == 0 && bytes[start] == Self.minus) else { return nil }
        return .int(integer)
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        for index in 0..<count where bytes[position + index] != word.utf8Start[index] { return false }
        position += count
        return true
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private mutating func take() -> UInt8? {
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
    }
}
