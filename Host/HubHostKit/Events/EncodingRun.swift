import Foundation

/// What `AttributeJSON` reuses while it encodes a run of events one after the other: the
/// previous event's attributes with the text it wrote for each, and the doubles it formatted.
/// Events of a batch mostly carry the same attributes at the same places (an augmentation's
/// place, coordinates and weather; the device and app values hubhost fills in), and writing an
/// attribute's text again (its name and text values scanned for bytes to escape, its number
/// formatted) was most of the encoding's cost. An attribute whose name and value have the same
/// bytes as the previous event's at that place gets that text copied: the same bytes it would
/// be written as. Not shared: one per encoding thread.
package struct EncodingRun {
    /// The doubles formatted so far, for the attributes not copied.
    var doubles: FormattedDoubles? = FormattedDoubles()
    /// The previous event's attributes and its text.
    private var attributes: [Event.Attribute] = []
    private var text = ""
    /// Where each of the previous event's attributes is in `text` (its `{"name":...}` object).
    private var fragments: [Range<Int>] = []

    package init() {}

    /// Keeps the event just encoded (`attributes` as `text`, attribute `i` at `fragments[i]`).
    mutating func remember(_ attributes: [Event.Attribute], _ text: String, _ fragments: [Range<Int>]) {
        self.attributes = attributes
        self.text = text
        self.fragments = fragments
    }

    /// Calls `body` with the previous event's attributes, the UTF-8 of its text and where each
    /// attribute's object is in it.
    func withPrevious<R>(_ body: ([Event.Attribute], UnsafeBufferPointer<UInt8>, [Range<Int>]) -> R) -> R {
        var text = self.text
        return text.withUTF8 { body(attributes, $0, fragments) }
    }

    /// Whether `a` and `b` are written as the same text: the same bytes of name, the same kind of
    /// value with the same bytes or bits (0.0 and -0.0 differ; NaN is never the same). Swift's
    /// `==` on String compares canonical equivalence, not bytes, so it is not used here.
    static func sameText(_ a: Event.Attribute, _ b: Event.Attribute) -> Bool {
        guard sameBytes(a.name, b.name) else { return false }
        switch (a.value, b.value) {
        case (.null, .null): return true
        case (.string(let x), .string(let y)): return sameBytes(x, y)
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.bool(let x), .bool(let y)): return x == y
        case (.timeMs(let x), .timeMs(let y)): return x == y
        default: return false
        }
    }

    /// Whether two Strings hold the same UTF-8 bytes.
    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        let count = a.utf8.count
        guard count == b.utf8.count else { return false }
        guard count > 0 else { return true }
        var a = a
        var b = b
        return a.withUTF8 { pa in b.withUTF8 { pb in memcmp(pa.baseAddress!, pb.baseAddress!, count) == 0 } }
    }
}
