/// The attributes column of the event store, written by hand: the same JSON the Codable form
/// reads back (`[{"name":"Level","value":{"type":"int","value":3}},...]`) at a fraction of
/// JSONEncoder's cost, which was most of `track`'s time in `hubhost bench events`.
package enum AttributeJSON {
    /// Writes straight into the new String's storage, sized once from an upper bound (every text
    /// byte escaped as \u00XX is 6 bytes; 96 per attribute covers the punctuation, type name and the
    /// longest number, at most 71 bytes for a double like -1.7976931348623157e+308): no growth
    /// checks, no intermediate buffers. Appending to a String piece by piece
    /// cost more than SQLite's insert of the row.
    package static func encode(_ attributes: [Event.Attribute]) -> String {
        var none: EncodingRun?
        var fragments: [Range<Int>] = []
        let bound = Self.bound(attributes)
        return String(unsafeUninitializedCapacity: bound) { write(attributes, run: &none, fragments: &fragments, into: $0, bound: bound) }
    }

    /// The same text as `encode(_:)` as its UTF-8 bytes, which is how the store binds it: no
    /// String is made (making one checks that the bytes written are UTF-8, which they are by
    /// construction, and that check was a sixth of the encoding's cost).
    package static func encodeUTF8(_ attributes: [Event.Attribute]) -> [UInt8] {
        var none: EncodingRun?
        var fragments: [Range<Int>] = []
        let bound = Self.bound(attributes)
        return [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
            count = write(attributes, run: &none, fragments: &fragments, into: buffer, bound: bound)
        }
    }

    /// The same bytes as `encodeUTF8(_:)`, for one event of a run encoded one after the other on
    /// this thread (`run`), appended to `output` (a run's events share one array rather than
    /// allocate one each); returns where they are in it. An attribute written as the previous
    /// event's at the same place is copied from its text, and doubles are formatted through the
    /// run's `FormattedDoubles` (formatting one, `description`, was a quarter of the encoding's cost).
    package static func appendUTF8(_ attributes: [Event.Attribute], run: inout EncodingRun?, to output: inout [UInt8]) -> Range<Int> {
        precondition(run != nil, "AttributeJSON.appendUTF8 needs a run")
        let bound = Self.bound(attributes)
        var fragments = run!.takeFragments()
        var scratch = run!.takeScratch(atLeast: bound)
        let written = scratch.withUnsafeMutableBufferPointer { write(attributes, run: &run, fragments: &fragments, into: $0, bound: bound) }
        let start = output.count
        scratch.withUnsafeBufferPointer { output.append(contentsOf: UnsafeBufferPointer(rebasing: $0[..<written])) }
        run!.remember(attributes, written: scratch, fragments)
        return start..<output.count
    }

    /// The attributes of `events`, one event after the other through `run`, in one array: event
    /// `i`'s bytes (those `encodeUTF8` gives it) are `text[places[i - events.startIndex]]`.
    package static func encodeUTF8(_ events: ArraySlice<Event>, run: inout EncodingRun?) -> (text: [UInt8], places: [Range<Int>]) {
        var text: [UInt8] = []
        var places: [Range<Int>] = []
        places.reserveCapacity(events.count)
        for i in events.indices {
            places.append(appendUTF8(events[i].attributes, run: &run, to: &text))
            // Room for the run from its first event's size: one allocation, not one per doubling.
            if i == events.startIndex { text.reserveCapacity(text.count * (events.count + events.count / 4)) }
        }
        return (text, places)
    }

    /// `appendUTF8` into an array of its own.
    package static func encodeUTF8(_ attributes: [Event.Attribute], run: inout EncodingRun?) -> [UInt8] {
        var output: [UInt8] = []
        _ = appendUTF8(attributes, run: &run, to: &output)
        return output
    }

    /// The most bytes `attributes` can take (see `ByteWriter.attribute`).
    private static func bound(_ attributes: [Event.Attribute]) -> Int {
        var bound = 2
        for attribute in attributes {
            bound += 96 + 6 * attribute.name.utf8.count
            if case .string(let text) = attribute.value { bound += 6 * text.utf8.count }
        }
        return bound
    }

    /// Writes the JSON of `attributes` into `buffer` (at least `bound` bytes) and returns how many
    /// bytes it wrote; with a `run`, where each attribute's text is (`fragments`).
    private static func write(
        _ attributes: [Event.Attribute], run: inout EncodingRun?, fragments: inout [Range<Int>], into buffer: UnsafeMutableBufferPointer<UInt8>,
        bound: Int
    ) -> Int {
        var out = ByteWriter(base: buffer.baseAddress!)
        out.byte(UInt8(ascii: "["))
        if run != nil {
            let before = run!.attributes
            let beforeText = run!.text
            let beforeFragments = run!.fragments
            fragments.reserveCapacity(attributes.count)
            attributes.withUnsafeBufferPointer { now in
                before.withUnsafeBufferPointer { previous in
                    beforeText.withUnsafeBufferPointer { previousText in
                        for index in now.indices {
                            if index > 0 { out.byte(UInt8(ascii: ",")) }
                            let start = out.count
                            if index < previous.count, EncodingRun.sameBits(now.baseAddress! + index, previous.baseAddress! + index) {
                                out.bytes(UnsafeBufferPointer(rebasing: previousText[beforeFragments[index]]))
                                run!.countCopied()
                            } else {
                                out.attribute(now[index], &run!.doubles)
                            }
                            fragments.append(start..<out.count)
                        }
                    }
                }
            }
        } else {
            var none: FormattedDoubles?
            for (index, attribute) in attributes.enumerated() {
                if index > 0 { out.byte(UInt8(ascii: ",")) }
                out.attribute(attribute, &none)
            }
        }
        out.byte(UInt8(ascii: "]"))
        precondition(out.count <= bound, "AttributeJSON: the size bound was wrong")
        return out.count
    }
}

/// The attribute JSON's pieces, written into memory sized in advance by `AttributeJSON.bound`.
extension ByteWriter {
    /// One attribute's object, `{"name":...,"value":{...}}`; doubles through `doubles` when given.
    fileprivate mutating func attribute(_ attribute: Event.Attribute, _ doubles: inout FormattedDoubles?) {
        literal("{\"name\":")
        string(attribute.name)
        literal(",\"value\":{\"type\":\"")
        switch attribute.value {
        case .null: literal("null\"}")
        case .string(let text):
            literal("string\",\"value\":")
            string(text)
            byte(UInt8(ascii: "}"))
        case .int(let i):
            literal("int\",\"value\":")
            integer(i)
            byte(UInt8(ascii: "}"))
        case .double(let d):
            // JSON has no NaN or infinity: such a value is stored as null.
            if d.isFinite {
                literal("double\",\"value\":")
                if doubles != nil { doubles!.withText(of: d) { bytes($0) } } else { text(d.description) }
                byte(UInt8(ascii: "}"))
            } else {
                literal("null\"}")
            }
        case .bool(let b): literal(b ? "bool\",\"value\":true}" : "bool\",\"value\":false}")
        case .timeMs(let t):
            literal("time\",\"value\":")
            integer(t)
            byte(UInt8(ascii: "}"))
        }
        byte(UInt8(ascii: "}"))
    }

    /// A JSON string: quoted, with `"`, `\\` and control characters escaped; other UTF-8 as is.
    fileprivate mutating func string(_ text: String) {
        byte(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { source in
            // Most texts need no escaping: copy them whole.
            guard ByteWriter.needsEscaping(source) else {
                bytes(source)
                return
            }
            for value in source {
                switch value {
                case UInt8(ascii: "\""): literal("\\\"")
                case UInt8(ascii: "\\"): literal("\\\\")
                case UInt8(ascii: "\n"): literal("\\n")
                case UInt8(ascii: "\r"): literal("\\r")
                case UInt8(ascii: "\t"): literal("\\t")
                case 0..<0x20:
                    literal("\\u00")
                    byte(ByteWriter.hex[Int(value >> 4)])
                    byte(ByteWriter.hex[Int(value & 0x0F)])
                default: byte(value)  // UTF-8 passes through unchanged (JSON is UTF-8)
                }
            }
        }
        byte(UInt8(ascii: "\""))
    }

    fileprivate static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Whether `source` holds a byte below 0x20, a `"` or a `\\`. Eight bytes at a time (the
    /// classic "has a zero byte" test, exact for whether any byte matches): a closure per byte
    /// made this scan the encoder's largest cost, names and texts being short but many.
    fileprivate static func needsEscaping(_ source: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = source.baseAddress else { return false }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        while offset + 8 <= source.count {
            let word = UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let control = (word &- ones &* 0x20) & ~word
            if (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highs != 0 { return true }
            offset += 8
        }
        while offset < source.count {
            let value = base[offset]
            if value < 0x20 || value == UInt8(ascii: "\"") || value == UInt8(ascii: "\\") { return true }
            offset += 1
        }
        return false
    }
}
