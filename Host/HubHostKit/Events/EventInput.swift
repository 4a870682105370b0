import Foundation

/// Events as JSON, the form `hubhost track --stdin` reads and `POST /v1/events` accepts:
///
///     {"type": "named_event", "name": "PLAYER LOADED", "timestamp": 1402358400000,
///      "attributes": {"Level": 3, "Mode": "arcade", "Score": 12.5, "Premium": true,
///                     "Started": {"type": "time", "value": 1402358400000}}}
///
/// One event, a list of them, or `{"events": [...]}`. `type` is a name (`named_event`, `app_start`,
/// ...) or a Universal Behavior code (`17`); `timestamp` is ms since epoch or an ISO 8601 text
/// (default: now). Plain JSON values take their natural type; `{"type": ..., "value": ...}` is explicit.
package enum EventInput {
    package struct Problem: Error, CustomStringConvertible {
        package var description: String
        /// A size limit was passed (HTTP answers 413 rather than 400).
        package var tooLarge = false
    }

    package static func parse(_ data: Data) throws -> [Event] {
        // Most bodies have one plain shape, read straight from the bytes (EventInput+CommonShape);
        // anything else, and every problem, goes to the general reader.
        if let events = parseCommonShape(data) { return events }
        return try parseGeneral(data)
    }

    /// The general reader: any input JSONSerialization reads, every problem named.
    static func parseGeneral(_ data: Data) throws -> [Event] {
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw Problem(description: "not valid JSON: \(error.localizedDescription)")
        }
        let items: [Any]
        if let list = json as? [Any] {
            items = list
        } else if let object = json as? [String: Any], let list = object["events"] as? [Any] {
            items = list
        } else {
            items = [json]
        }
        guard !items.isEmpty else { throw Problem(description: "no events in the input") }
        guard items.count <= EventLimits.maxEventsPerRequest else {
            throw Problem(description: "\(items.count) events in one input; the limit is \(EventLimits.maxEventsPerRequest)", tooLarge: true)
        }
        return try items.enumerated().map { index, item in
            do {
                return try event(item)
            } catch let problem as Problem {
                throw Problem(
                    description: items.count > 1 ? "event \(index + 1): \(problem.description)" : problem.description,
                    tooLarge: problem.tooLarge)
            }
        }
    }

    static let knownKeys = ["type", "name", "timestamp", "attributes", "id", "purchase"]
    static let purchaseKeys = ["amount", "number_of_items", "currency_code", "item_list"]

    static func event(_ item: Any) throws -> Event {
        guard let object = item as? [String: Any] else { throw Problem(description: "an event must be a JSON object") }
        for key in object.keys.sorted() where !knownKeys.contains(key) {
            throw Problem(
                description:
                    "unknown key '\(Suggestion.clip(key))'\(Suggestion.hint(for: key, in: knownKeys)); expected: \(knownKeys.joined(separator: ", "))"
            )
        }
        let typeText: String
        switch object["type"] {
        case let text as String: typeText = text
        case let number as NSNumber: typeText = number.stringValue
        case nil: typeText = "named_event"
        default: throw Problem(description: "'type' must be a name or a code")
        }
        guard let type = EventType(text: typeText) else {
            let names = EventType.allCases.map(\.rawValue)
            throw Problem(
                description:
                    "unknown event type '\(Suggestion.clip(typeText))'\(Suggestion.hint(for: typeText, in: names)); expected one of: \(names.joined(separator: ", "))"
            )
        }
        var event = Event(type: type, name: try text(object["name"], key: "name") ?? "")
        if let id = try text(object["id"], key: "id"), !id.isEmpty {
            guard id.utf8.count <= 128 else { throw Problem(description: "'id' is \(id.utf8.count) bytes; the limit is 128", tooLarge: true) }
            event.id = id
        }
        if let stamp = object["timestamp"] {
            event.timestampMs = try time(stamp, what: "'timestamp'")
        }
        if let attributes = object["attributes"] {
            guard let map = attributes as? [String: Any] else { throw Problem(description: "'attributes' must be an object of name: value") }
            guard map.count <= EventLimits.maxAttributes else {
                throw Problem(description: "\(map.count) attributes; the limit is \(EventLimits.maxAttributes)", tooLarge: true)
            }
            // JSON object keys are unique: appended, not `set` (a search per attribute made 100,000 attributes quadratic).
            event.attributes.reserveCapacity(map.count)
            for name in map.keys.sorted() {
                event.attributes.append(Event.Attribute(name, try value(map[name]!, name: name)))
            }
        }
        do {
            try EventLimits.check(event)
        } catch let refusal as EventLimits.Refusal {
            throw Problem(description: refusal.description, tooLarge: refusal.tooLarge)
        }
        do {
            if let raw = object["purchase"] {
                guard type == .purchaseSuccessful else {
                    throw Problem(description: "'purchase' belongs to a purchase_successful event, not \(type.rawValue)")
                }
                for attribute in try purchase(raw).attributes() { event.set(attribute.name, attribute.value) }
            }
            try Purchase.validate(event)
        } catch let invalid as Purchase.Invalid {
            throw Problem(description: invalid.description)
        }
        return event
    }

    /// A string field: absent or null is nil; any other JSON type is refused, naming the field.
    static func text(_ raw: Any?, key: String) throws -> String? {
        switch raw {
        case nil, is NSNull: return nil
        case let text as String: return text
        default: throw Problem(description: "'\(key)' must be a string, not \(jsonType(raw!))")
        }
    }

    static func jsonType(_ raw: Any) -> String {
        switch raw {
        case let number as NSNumber: return String(cString: number.objCType) == "c" ? "a boolean" : "a number"
        case is [Any]: return "a list"
        case is [String: Any]: return "an object"
        default: return "\(type(of: raw))"
        }
    }

    /// An integer from a JSON number that holds one exactly (not a boolean, not 2.5, not 1e300).
    static func exactInteger(_ raw: Any) -> Int64? {
        guard let number = raw as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        let objCType = String(cString: number.objCType)
        if objCType == "d" || objCType == "f" {
            let double = number.doubleValue
            // 2^63 itself is not representable: strictly below it.
            guard double.isFinite, double == double.rounded(), double >= -9.223372036854775808e18, double < 9.223372036854775808e18 else {
                return nil
            }
            return Int64(double)
        }
        return number.int64Value
    }

    /// `{"amount": 50, "currency_code": "USD", "item_list": ["box", "hammer"], "number_of_items": 2}`
    static func purchase(_ raw: Any) throws -> Purchase {
        guard let object = raw as? [String: Any] else {
            throw Problem(description: "'purchase' must be an object with \(purchaseKeys.joined(separator: ", "))")
        }
        for key in object.keys.sorted() where !purchaseKeys.contains(key) {
            throw Problem(
                description:
                    "unknown purchase key '\(Suggestion.clip(key))'\(Suggestion.hint(for: key, in: purchaseKeys)); expected: \(purchaseKeys.joined(separator: ", "))"
            )
        }
        func integer(_ key: String) throws -> Int64? {
            guard let value = object[key] else { return nil }
            guard let integer = exactInteger(value) else { throw Problem(description: "purchase '\(key)' must be an integer") }
            return integer
        }
        guard let amount = try integer("amount") else { throw Problem(description: "purchase 'amount' is required") }
        guard let currency = object["currency_code"] as? String else {
            throw Problem(description: "purchase 'currency_code' is required (e.g. \"USD\")")
        }
        let items: [String]
        switch object["item_list"] {
        case nil: items = []
        case let list as [String]: items = list
        default: throw Problem(description: "purchase 'item_list' must be a list of item ids")
        }
        return Purchase(amount: amount, numberOfItems: try integer("number_of_items"), currencyCode: currency, itemList: items)
    }

    static func value(_ raw: Any, name: String) throws -> PluginValue {
        switch raw {
        case is NSNull: return .null
        case let text as String: return .string(text)
        case let number as NSNumber:
            // JSON true/false decode as a boolean NSNumber whose Objective-C type is "c".
            let objCType = String(cString: number.objCType)
            if objCType == "c" { return .bool(number.boolValue) }
            if objCType == "d" || objCType == "f" { return .double(number.doubleValue) }
            // An integer JSON number beyond Int64 (2^63 to 2^64-1 arrive as unsigned) would wrap
            // to a negative number: refused, not corrupted.
            guard objCType != "Q" || number.uint64Value <= UInt64(Int64.max) else {
                throw Problem(
                    description:
                        "attribute '\(Suggestion.clip(name))': \(number) is outside the 64-bit integer range (send it as a double or a string)")
            }
            return .int(number.int64Value)
        case let typed as [String: Any]:
            guard let type = typed["type"] as? String, let inner = typed["value"] else {
                throw Problem(description: "attribute '\(name)': an object value must be {\"type\": ..., \"value\": ...}")
            }
            switch (type, inner) {
            case ("string", let s as String): return .string(s)
            case ("int", let n as NSNumber):
                guard let integer = exactInteger(n) else { throw Problem(description: "attribute '\(name)': \(n) is not a 64-bit integer") }
                return .int(integer)
            case ("double", let n as NSNumber): return .double(n.doubleValue)
            case ("bool", let n as NSNumber) where String(cString: n.objCType) == "c": return .bool(n.boolValue)
            case ("time", _): return .timeMs(try time(inner, what: "attribute '\(name)'"))
            case ("null", _): return .null
            default: throw Problem(description: "attribute '\(name)': a \(type) cannot hold \(inner)")
            }
        default:
            throw Problem(description: "attribute '\(name)': lists are not attribute values")
        }
    }

    /// Milliseconds since epoch from a number or an ISO 8601 text, within SafeTime.validMs
    /// (1970 to 9999); anything else is refused before any arithmetic touches it.
    package static func time(_ raw: Any, what: String) throws -> Int64 {
        let usage = "\(what) must be milliseconds since 1970 or an ISO 8601 time like 2014-06-10T00:00:00.000Z"
        var ms: Int64?
        if let number = raw as? NSNumber, String(cString: number.objCType) != "c" {
            let double = number.doubleValue
            guard double.isFinite, double >= Double(SafeTime.validMs.lowerBound), double <= Double(SafeTime.validMs.upperBound) else {
                throw Problem(description: "\(what) \(number) is outside 0...\(SafeTime.validMs.upperBound) (1970-01-01 to 9999-12-31)")
            }
            ms = exactInteger(number) ?? Int64(double)
        } else if let text = raw as? String {
            if let integer = Int64(text) {
                ms = integer
            } else {
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                var date = formatter.date(from: text)
                if date == nil {
                    formatter.formatOptions = [.withInternetDateTime]
                    date = formatter.date(from: text)
                }
                if let date {
                    guard let converted = SafeTime.milliseconds(epochSeconds: date.timeIntervalSince1970) else {
                        throw Problem(description: "\(what) \(text) is outside 1970-01-01 to 9999-12-31")
                    }
                    ms = converted
                }
            }
        }
        guard let ms else { throw Problem(description: usage) }
        guard SafeTime.validMs.contains(ms) else {
            throw Problem(description: "\(what) \(ms) is outside 0...\(SafeTime.validMs.upperBound) (1970-01-01 to 9999-12-31)")
        }
        return ms
    }
}
