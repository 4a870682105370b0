import Foundation

/// The collector format's JSON, written by hand because it is on every event's way out: one
/// event object is `{"attributes":[{"name":"Event Name","value":"PLAYER LOADED"},...],
/// "eventTimestamp":"2014-06-10T00:00:00.000Z","eventTypeCode":"17","idempotencyKey":"..."}`.
/// The bytes are exactly what JSONSerialization with `.sortedKeys` wrote before (keys sorted, "/"
/// escaped as "\/", control characters as \b \f \n \r \t or \u00xx, everything else as UTF-8; a
/// test compares the two), at a fraction of the cost: JSONSerialization and ISO8601DateFormatter
/// were half of the delivery's time.
enum CollectorJSON {
    /// One element of the "events" array.
    static func event(_ event: Event, nameField: String) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(160 + event.attributes.count * 48)
        // Literals appended from their UTF-8 views and the time written in place: an Array per
        // literal and seven small strings per time were a third of building a batch's messages.
        out.append(contentsOf: #"{"attributes":["#.utf8)
        var first = true
        func attribute(_ name: String, _ value: PluginValue) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(contentsOf: #"{"name":"#.utf8)
            string(name, into: &out)
            out.append(contentsOf: #","value":"#.utf8)
            switch value {
            case .timeMs(let ms):
                out.append(UInt8(ascii: "\""))
                isoTime(ms, into: &out)
                out.append(UInt8(ascii: "\""))
            case .null: out.append(contentsOf: #""""#.utf8)
            default: string(value.description, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        if !event.name.isEmpty { attribute(nameField, .string(event.name)) }
        for item in event.attributes { attribute(item.name, item.value) }
        out.append(contentsOf: #"],"eventTimestamp":""#.utf8)
        isoTime(event.timestampMs, into: &out)
        out.append(contentsOf: #"","eventTypeCode":""#.utf8)
        out.append(contentsOf: String(event.type.code).utf8)  // digits: nothing to escape
        out.append(contentsOf: #"","idempotencyKey":"#.utf8)
        string(event.id, into: &out)
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }

    /// A JSON string literal, escaped as JSONSerialization escapes it.
    static func string(_ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { string(utf8: $0, into: &out) }
    }

    /// `string(_:into:)` through a ByteWriter (memory sized for 6 bytes per text byte, 2 for the
    /// quotes): a text with nothing to escape is copied as it is.
    static func string(_ text: String, to out: inout ByteWriter) {
        var text = text
        text.withUTF8 { string(utf8: $0, to: &out) }
    }

    /// The same from a text's UTF-8 bytes.
    static func string(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter) {
        guard needsEscape(bytes) else {
            out.byte(UInt8(ascii: "\""))
            out.bytes(bytes)
            out.byte(UInt8(ascii: "\""))
            return
        }
        var escaped: [UInt8] = []
        string(utf8: bytes, into: &escaped)
        escaped.withUnsafeBufferPointer { out.bytes($0) }
    }

    /// The same from a text's UTF-8 bytes (valid UTF-8: they are copied as they are).
    static func string(utf8 bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most texts (ids, names, numbers) need no escape: one copy of their bytes.
        guard needsEscape(bytes) else {
            out.append(contentsOf: bytes)
            out.append(UInt8(ascii: "\""))
            return
        }
        let hex = Array("0123456789abcdef".utf8)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "/"): out += [UInt8(ascii: "\\"), UInt8(ascii: "/")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20: out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// An attribute value as the collector gets it: text, times in ISO 8601, null as "".
    static func text(_ value: PluginValue) -> String {
        switch value {
        case .timeMs(let ms): return isoTime(ms)
        case .null: return ""
        default: return value.description
        }
    }

    /// Whether `bytes` hold a control character, `"`, `\` or `/`, read eight at a time: every
    /// string of every event written passes here, and the byte-by-byte test was the largest single
    /// part of building a batch's messages. The word tests are the usual ones: a byte below 0x20
    /// (bytes of 0x80 and up, UTF-8's, never count), a byte equal to one of the three.
    static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasByteBelow(_ word: UInt64, _ limit: UInt64) -> Bool { (word &- ones &* limit) & ~word & highs != 0 }
        var at = 0
        while at + 8 <= bytes.count {
            let word = raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            if hasByteBelow(word, 0x20) || hasByteBelow(word ^ (ones &* 0x22), 1) || hasByteBelow(word ^ (ones &* 0x5C), 1)
                || hasByteBelow(word ^ (ones &* 0x2F), 1)
            {
                return true
            }
            at += 8
        }
        while at < bytes.count {
            let byte = base[at]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/") { return true }
            at += 1
        }
        return false
    }

    /// `2014-06-10T00:00:00.000Z` (UTC, milliseconds), as ISO8601DateFormatter with fractional
    /// seconds writes it, without building a formatter per call.
    static func isoTime(_ ms: Int64) -> String {
        var out = [UInt8]()
        out.reserveCapacity(24)
        isoTime(ms, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The same time's 24 characters (a year past 9999 takes its digits) appended to `out`, with
    /// no string in between: nothing in it needs escaping.
    static func isoTime(_ ms: Int64, into out: inout [UInt8]) {
        let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
            guard isoTime(ms, to: text.baseAddress!) else { return false }
            out.append(contentsOf: UnsafeBufferPointer(text))
            return true
        }
        if !written { isoTimeOutsideYears1970To9999(ms, into: &out) }
    }

    /// The same 24 bytes written at `text` when the time is in 1970 to 9999 (SafeTime.validMs:
    /// every time an event holds); false, with nothing written, for any other.
    static func isoTime(_ ms: Int64, to text: UnsafeMutablePointer<UInt8>) -> Bool {
        let (wholeSeconds, fraction) = secondsAndMillis(ms)
        // The date by arithmetic and its 24 bytes written at once. gmtime_r, for the other times,
        // took glibc's time zone lock per call, and each time is written for every event sent.
        guard (0..<253_402_300_800).contains(wholeSeconds) else { return false }
        let (days, second) = wholeSeconds.quotientAndRemainder(dividingBy: 86_400)
        let (year, month, day) = UTCTimestamp.civilDate(days: days)
        func put(_ value: Int64, at end: Int, width: Int) {
            var rest = value
            for index in stride(from: end, to: end - width, by: -1) {
                text[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
        }
        put(year, at: 3, width: 4)
        text[4] = UInt8(ascii: "-")
        put(month, at: 6, width: 2)
        text[7] = UInt8(ascii: "-")
        put(day, at: 9, width: 2)
        text[10] = UInt8(ascii: "T")
        put(second / 3_600, at: 12, width: 2)
        text[13] = UInt8(ascii: ":")
        put(second / 60 % 60, at: 15, width: 2)
        text[16] = UInt8(ascii: ":")
        put(second % 60, at: 18, width: 2)
        text[19] = UInt8(ascii: ".")
        put(fraction, at: 22, width: 3)
        text[23] = UInt8(ascii: "Z")
        return true
    }

    /// Whole seconds since 1970 and the milliseconds after them (0...999, also before 1970).
    private static func secondsAndMillis(_ ms: Int64) -> (seconds: Int64, millis: Int64) {
        let (seconds, millis) = ms.quotientAndRemainder(dividingBy: 1000)
        return millis < 0 ? (seconds - 1, millis + 1000) : (seconds, millis)
    }

    /// A time before 1970 or after 9999 through gmtime_r (digits as many as the year takes).
    private static func isoTimeOutsideYears1970To9999(_ ms: Int64, into out: inout [UInt8]) {
        let (wholeSeconds, fraction) = secondsAndMillis(ms)
        var time = time_t(wholeSeconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else {
            out.append(contentsOf: "1970-01-01T00:00:00.000Z".utf8)
            return
        }
        /// `value`'s decimal digits, at least `width` of them (zeros first); a negative value
        /// (a year before 1 AD) keeps its sign.
        func digits(_ value: Int, _ width: Int) {
            if value < 0 {
                out.append(UInt8(ascii: "-"))
                digits(-value, width)
                return
            }
            var divisor = 1
            var count = 1
            while divisor <= value / 10 {
                divisor *= 10
                count += 1
            }
            for _ in count..<max(count, width) { out.append(UInt8(ascii: "0")) }
            var rest = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        out.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        out.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        out.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        out.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        out.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        out.append(UInt8(ascii: "."))
        digits(Int(fraction), 3)
        out.append(UInt8(ascii: "Z"))
    }
}
