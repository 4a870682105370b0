import Foundation

/// The limits every event is checked against before anything of it is stored, whichever front end
/// it came through (HTTP, CLI, Swift API): an event outside them is refused whole, with the limit
/// in the message. Documented in README.md, "Limits and security".
package enum EventLimits {
    /// Attributes on one event, the caller's and hubhost's together.
    package static let maxAttributes = 1_000
    /// Bytes (UTF-8) of an event name or an attribute name.
    package static let maxNameBytes = 1_024
    /// Bytes (UTF-8) of one string attribute value.
    package static let maxStringValueBytes = 1 << 20
    /// Events in one request (`POST /v1/events`) or one `track --stdin` input.
    package static let maxEventsPerRequest = 10_000

    /// Why an event is refused. `tooLarge` limits answer 413 over HTTP, the others 400.
    package struct Refusal: Error, CustomStringConvertible, Equatable {
        package var description: String
        package var tooLarge: Bool
    }

    /// Checks the time, sizes and values of `event`.
    package static func check(_ event: Event) throws {
        try checkTime(event.timestampMs, what: "the event's timestamp")
        if event.name.utf8.count > maxNameBytes {
            throw Refusal(description: "the event name is \(event.name.utf8.count) bytes; the limit is \(maxNameBytes)", tooLarge: true)
        }
        if event.attributes.count > maxAttributes {
            throw Refusal(description: "the event has \(event.attributes.count) attributes; the limit is \(maxAttributes)", tooLarge: true)
        }
        for attribute in event.attributes {
            try check(attribute.name, attribute.value)
        }
    }

    /// Checks one attribute (also what a plugin sets on an event).
    package static func check(_ name: String, _ value: PluginValue) throws {
        if name.isEmpty { throw Refusal(description: "an attribute name is empty", tooLarge: false) }
        if name.utf8.count > maxNameBytes {
            throw Refusal(description: "attribute name of \(name.utf8.count) bytes; the limit is \(maxNameBytes)", tooLarge: true)
        }
        guard !allows(value) else { return }
        // Outside the limits (`allows`, the one place they are written): what the refusal says.
        switch value {
        case .string(let text):
            throw Refusal(description: "attribute '\(name)' is \(text.utf8.count) bytes; the limit is \(maxStringValueBytes)", tooLarge: true)
        case .double(let number):
            throw Refusal(description: "attribute '\(name)' is \(number); a double must be finite", tooLarge: false)
        case .timeMs(let ms):
            try checkTime(ms, what: "attribute '\(name)'")
        case .null, .int, .bool:
            break
        }
    }

    /// Whether `value` is within the limits (`check`'s answer for the value alone, without the
    /// refusal's words): what a plugin's edit under a name already checked is held to.
    @inline(__always) static func allows(_ value: PluginValue) -> Bool {
        switch value {
        case .string(let text): return text.utf8.count <= maxStringValueBytes
        case .double(let number): return number.isFinite
        case .timeMs(let ms): return SafeTime.validMs.contains(ms)
        case .null, .int, .bool: return true
        }
    }

    static func checkTime(_ ms: Int64, what: String) throws {
        guard SafeTime.validMs.contains(ms) else {
            throw Refusal(
                description:
                    "\(what) is \(ms) ms since 1970, outside the valid range \(SafeTime.validMs.lowerBound)...\(SafeTime.validMs.upperBound) (1970-01-01 to 9999-12-31)",
                tooLarge: false)
        }
    }
}
