import Foundation

/// A claimed event's collector JSON written straight from its row, the attributes read from the
/// stored JSON as they are copied out: decoding every claimed event into an `Event` and encoding it
/// again was most of a delivery's own work. The bytes are those `event(_:nameField:)` writes for the
/// decoded event (a test compares the two on every kind of value and escape). The batch's text is
/// valid UTF-8 (ClaimedBatch repairs a row that is not), so text without escapes is copied as is.
extension CollectorJSON {
    /// Appends the collector JSON object of `batch`'s event at `index` to `out` and answers its
    /// `Mobile User Id` and `Device Id` as text ("" when absent); nil, with `out` as it was, when
    /// its attributes are not in the shape AttributeJSON writes (an older row's JSONEncoder form,
    /// keys in another order, whitespace, a number an Int64 does not hold): the caller then decodes
    /// the event and writes it from that.
    static func appendEvent(
        _ index: Int, of batch: EventStore.ClaimedBatch, nameField: String, to out: inout [UInt8]
    ) -> (mobileUserID: String, anonymousID: String)? {
        let row = batch.events[index]
        let mark = out.count
        let users = batch.text.withUnsafeBufferPointer { text -> (mobileUserID: String, anonymousID: String)? in
            func part(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: text[range]) }
            literal(#"{"attributes":["#, into: &out)
            var first = true
            if !row.name.isEmpty {
                first = false
                literal(#"{"name":"#, into: &out)
                string(nameField, into: &out)
                literal(#","value":"#, into: &out)
                string(utf8: part(row.name), into: &out)
                out.append(UInt8(ascii: "}"))
            }
            let stored = part(row.attributesJSON)
            var scanner = JSONScanner(bytes: stored)
            guard scanner.literal("[") else { return nil }
            var mobileUserID: String?
            var anonymousID: String?
            if !scanner.literal("]") {
                repeat {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    literal(#"{"name":"#, into: &out)
                    guard scanner.literal(#"{"name":"#), let name = copyString(&scanner, into: &out) else { return nil }
                    literal(#","value":"#, into: &out)
                    guard scanner.literal(#","value":{"type":""#) else { return nil }
                    guard let value = copyValue(&scanner, into: &out), scanner.literal("}}") else { return nil }
                    out.append(UInt8(ascii: "}"))
                    // The first attribute of each name counts, as Event's subscript finds it.
                    if mobileUserID == nil, name.equals("Mobile User Id", in: out) {
                        mobileUserID = value.text(in: out)
                    } else if anonymousID == nil, name.equals("Device Id", in: out) {
                        anonymousID = value.text(in: out)
                    }
                } while scanner.literal(",")
                guard scanner.literal("]") else { return nil }
            }
            guard scanner.at == stored.count else { return nil }
            literal(#"],"eventTimestamp":""#, into: &out)
            isoTime(row.timestampMs, into: &out)
            literal(#"","eventTypeCode":""#, into: &out)
            ascii(String(row.type.code), into: &out)  // digits: nothing to escape
            literal(#"","idempotencyKey":"#, into: &out)
            string(utf8: part(row.id), into: &out)
            out.append(UInt8(ascii: "}"))
            return (mobileUserID ?? "", anonymousID ?? "")
        }
        if users == nil { out.removeSubrange(mark...) }
        return users
    }

    /// A string copied out: its bytes as they are (between the quotes just written), or decoded
    /// from escapes and escaped again.
    private enum CopiedString {
        case plain(Range<Int>)
        case escaped(String)

        func equals(_ text: StaticString, in out: [UInt8]) -> Bool {
            switch self {
            case .plain(let range):
                // memcmp: the generic comparison of a slice was a tenth of writing an event.
                return range.count == text.utf8CodeUnitCount
                    && out.withUnsafeBufferPointer { memcmp($0.baseAddress! + range.lowerBound, text.utf8Start, range.count) == 0 }
            case .escaped(let decoded): return decoded == text.description
            }
        }

        /// The text itself (for a value other than a string, the collector's text of it).
        func text(in out: [UInt8]) -> String {
            switch self {
            case .plain(let range): return String(decoding: out[range], as: UTF8.self)
            case .escaped(let decoded): return decoded
            }
        }
    }

    /// Copies the JSON string at `scanner` into `out` as `string(_:into:)` writes it. A string
    /// with no escape, no "/" and no control character (the stored column's text is valid UTF-8)
    /// is the same bytes in both forms; any other is decoded and written again.
    private static func copyString(_ scanner: inout JSONScanner, into out: inout [UInt8]) -> CopiedString? {
        let bytes = scanner.bytes
        guard scanner.at < bytes.count, bytes[scanner.at] == UInt8(ascii: "\"") else { return nil }
        var end = scanner.at + 1
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] != UInt8(ascii: "/"),
            bytes[end] >= 0x20
        {
            end += 1
        }
        guard end < bytes.count else { return nil }
        if bytes[end] == UInt8(ascii: "\"") {
            out.append(UInt8(ascii: "\""))
            let start = out.count
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[(scanner.at + 1)..<end]))
            let range = start..<out.count
            out.append(UInt8(ascii: "\""))
            scanner.at = end + 1
            return .plain(range)
        }
        guard let decoded = scanner.string() else { return nil }
        string(decoded, into: &out)
        return .escaped(decoded)
    }

    /// Copies the typed value whose `{"type":"` was just read (up to, not including, its closing
    /// brace) as the collector's text: times in ISO 8601, null as "".
    private static func copyValue(_ scanner: inout JSONScanner, into out: inout [UInt8]) -> CopiedString? {
        if scanner.literal(#"string","value":"#) { return copyString(&scanner, into: &out) }
        out.append(UInt8(ascii: "\""))
        let start = out.count
        if scanner.literal(#"null""#) {
            // nothing: null is ""
        } else if scanner.literal(#"int","value":"#) {
            guard let value = integer(&scanner) else { return nil }
            ascii(String(value), into: &out)
        } else if scanner.literal(#"time","value":"#) {
            guard let value = integer(&scanner) else { return nil }
            isoTime(value, into: &out)
        } else if scanner.literal(#"double","value":"#) {
            // As the decoded event has it: the token read as a Double, written as Swift writes it.
            let tokenStart = scanner.at
            while scanner.at < scanner.bytes.count, Self.isNumberByte(scanner.bytes[scanner.at]) { scanner.at += 1 }
            let token = Substring(decoding: UnsafeBufferPointer(rebasing: scanner.bytes[tokenStart..<scanner.at]), as: UTF8.self)
            guard tokenStart < scanner.at, let value = Double(token) else { return nil }
            out.append(contentsOf: String(value).utf8)
        } else if scanner.literal(#"bool","value":true"#) {
            literal("true", into: &out)
        } else if scanner.literal(#"bool","value":false"#) {
            literal("false", into: &out)
        } else {
            return nil
        }
        let range = start..<out.count
        out.append(UInt8(ascii: "\""))
        return .plain(range)
    }

    /// `-?[0-9]+` within Int64's range; nil for anything else (the decoded path judges it).
    private static func integer(_ scanner: inout JSONScanner) -> Int64? {
        let bytes = scanner.bytes
        var at = scanner.at
        let negative = at < bytes.count && bytes[at] == UInt8(ascii: "-")
        if negative { at += 1 }
        let digitsStart = at
        var value: Int64 = 0
        while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) {
            let digit = Int64(bytes[at] - UInt8(ascii: "0"))
            let (shifted, overflowShift) = value.multipliedReportingOverflow(by: 10)
            // Built negative: Int64.min has no positive counterpart.
            let (next, overflowAdd) = shifted.subtractingReportingOverflow(digit)
            guard !overflowShift, !overflowAdd else { return nil }
            value = next
            at += 1
        }
        guard at > digitsStart, at < bytes.count, !isNumberByte(bytes[at]) else { return nil }
        if !negative {
            guard value != Int64.min else { return nil }
            value = -value
        }
        scanner.at = at
        return value
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }
}
