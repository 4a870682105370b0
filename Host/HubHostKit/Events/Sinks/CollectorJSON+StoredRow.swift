import Foundation

/// A claimed event's collector JSON written straight from its row, the attributes read from the
/// stored JSON as they are copied out: decoding every claimed event into an `Event` and encoding it
/// again was most of a delivery's own work. The bytes are those `event(_:nameField:)` writes for the
/// decoded event (a test compares the two on every kind of value and escape). The batch's text is
/// valid UTF-8 (ClaimedBatch repairs a row that is not), so text without escapes is copied as is.
///
/// Written through a ByteWriter into memory sized from the row, then appended to the output at
/// once: appending each of an event's few dozen pieces to an Array was most of building a batch's
/// messages, work that runs beside the store's transaction on a machine's other core.
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
        var nameField = nameField
        return batch.text.withUnsafeBufferPointer { text in
            nameField.withUTF8 { field in
                func part(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: text[range]) }
                // The most the object can take: every byte read can become at most 6 written (a
                // control character's \u00XX; a string's escapes decode to fewer bytes than they
                // take), and 160 hold the fixed text (about 140 bytes: keys, quotes, the time's 24 or,
                // past the year 9999, up to 30, a type code's digits). The attributes never grow past
                // 6 times their stored bytes: each stored attribute has at least 33 bytes of keys and
                // type around its name and value where the collector's has 19, and a value written
                // longer than it was stored (a time, a double) takes at most 32 bytes.
                let bound = 160 + 6 * (field.count + row.name.count + row.attributesJSON.count + row.id.count)
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { memory in
                    var writer = ByteWriter(base: memory.baseAddress!)
                    guard
                        let users = write(
                            name: part(row.name), nameField: field, attributes: part(row.attributesJSON), timestampMs: row.timestampMs,
                            typeCode: row.type.code, id: part(row.id), to: &writer)
                    else { return nil }
                    precondition(writer.count <= bound, "CollectorJSON: the size bound was wrong")
                    out.append(contentsOf: writer.written)
                    return users
                }
            }
        }
    }

    /// Writes one event's object from its stored parts; nil when the attributes are not in the
    /// shape AttributeJSON writes.
    private static func write(
        name: UnsafeBufferPointer<UInt8>, nameField: UnsafeBufferPointer<UInt8>, attributes stored: UnsafeBufferPointer<UInt8>,
        timestampMs: Int64, typeCode: Int, id: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter
    ) -> (mobileUserID: String, anonymousID: String)? {
        out.literal(#"{"attributes":["#)
        var first = true
        if !name.isEmpty {
            first = false
            out.literal(#"{"name":"#)
            string(utf8: nameField, to: &out)
            out.literal(#","value":"#)
            string(utf8: name, to: &out)
            out.byte(UInt8(ascii: "}"))
        }
        var scanner = JSONScanner(bytes: stored)
        guard scanner.literal("[") else { return nil }
        var mobileUserID: String?
        var anonymousID: String?
        if !scanner.literal("]") {
            repeat {
                if !first { out.byte(UInt8(ascii: ",")) }
                first = false
                out.literal(#"{"name":"#)
                guard scanner.literal(#"{"name":"#), let name = copyString(&scanner, to: &out) else { return nil }
                out.literal(#","value":"#)
                guard scanner.literal(#","value":{"type":""#) else { return nil }
                guard let value = copyValue(&scanner, to: &out), scanner.literal("}}") else { return nil }
                out.byte(UInt8(ascii: "}"))
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
        out.literal(#"],"eventTimestamp":""#)
        time(timestampMs, to: &out)
        out.literal(#"","eventTypeCode":""#)
        out.integer(Int64(typeCode))  // digits: nothing to escape
        out.literal(#"","idempotencyKey":"#)
        string(utf8: id, to: &out)
        out.byte(UInt8(ascii: "}"))
        return (mobileUserID ?? "", anonymousID ?? "")
    }

    /// A string copied out: its bytes as they are (between the quotes just written), or decoded
    /// from escapes and escaped again.
    private enum CopiedString {
        case plain(Range<Int>)
        case escaped(String)

        func equals(_ text: StaticString, in out: ByteWriter) -> Bool {
            switch self {
            case .plain(let range):
                // memcmp: the generic comparison of a slice was a tenth of writing an event.
                return range.count == text.utf8CodeUnitCount && memcmp(out.base + range.lowerBound, text.utf8Start, range.count) == 0
            case .escaped(let decoded): return decoded == text.description
            }
        }

        /// The text itself (for a value other than a string, the collector's text of it).
        func text(in out: ByteWriter) -> String {
            switch self {
            case .plain(let range): return String(decoding: UnsafeBufferPointer(rebasing: out.written[range]), as: UTF8.self)
            case .escaped(let decoded): return decoded
            }
        }
    }

    /// `isoTime(_:into:)` through the writer.
    private static func time(_ ms: Int64, to out: inout ByteWriter) {
        var inYears1970To9999 = false
        out.append(upTo: 24) { text in
            inYears1970To9999 = isoTime(ms, to: text)
            return inYears1970To9999 ? 24 : 0
        }
        guard !inYears1970To9999 else { return }
        var text: [UInt8] = []
        isoTime(ms, into: &text)
        text.withUnsafeBufferPointer { out.bytes($0) }
    }

    /// Copies the JSON string at `scanner` into `out` as `string(_:into:)` writes it. A string
    /// with no escape, no "/" and no control character (the stored column's text is valid UTF-8)
    /// is the same bytes in both forms; any other is decoded and written again.
    private static func copyString(_ scanner: inout JSONScanner, to out: inout ByteWriter) -> CopiedString? {
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
            out.byte(UInt8(ascii: "\""))
            let start = out.count
            out.bytes(UnsafeBufferPointer(rebasing: bytes[(scanner.at + 1)..<end]))
            let range = start..<out.count
            out.byte(UInt8(ascii: "\""))
            scanner.at = end + 1
            return .plain(range)
        }
        guard let decoded = scanner.string() else { return nil }
        var escaped: [UInt8] = []
        string(decoded, into: &escaped)
        escaped.withUnsafeBufferPointer { out.bytes($0) }
        return .escaped(decoded)
    }

    /// Copies the typed value whose `{"type":"` was just read (up to, not including, its closing
    /// brace) as the collector's text: times in ISO 8601, null as "".
    private static func copyValue(_ scanner: inout JSONScanner, to out: inout ByteWriter) -> CopiedString? {
        if scanner.literal(#"string","value":"#) { return copyString(&scanner, to: &out) }
        out.byte(UInt8(ascii: "\""))
        let start = out.count
        if scanner.literal(#"int","value":"#) {
            guard let value = integer(&scanner) else { return nil }
            out.integer(value)
        } else if scanner.literal(#"null""#) {
            // nothing: null is ""
        } else if scanner.literal(#"time","value":"#) {
            guard let value = integer(&scanner) else { return nil }
            time(value, to: &out)
        } else if scanner.literal(#"double","value":"#) {
            // As the decoded event has it: the token read as a Double, written as Swift writes it.
            let tokenStart = scanner.at
            while scanner.at < scanner.bytes.count, Self.isNumberByte(scanner.bytes[scanner.at]) { scanner.at += 1 }
            let token = Substring(decoding: UnsafeBufferPointer(rebasing: scanner.bytes[tokenStart..<scanner.at]), as: UTF8.self)
            guard tokenStart < scanner.at, let value = Double(token) else { return nil }
            out.text(String(value))
        } else if scanner.literal(#"bool","value":true"#) {
            out.literal("true")
        } else if scanner.literal(#"bool","value":false"#) {
            out.literal("false")
        } else {
            return nil
        }
        let range = start..<out.count
        out.byte(UInt8(ascii: "\""))
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
