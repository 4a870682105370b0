import Foundation

/// What `AttributeJSON` reuses while it encodes a run of events one after the other: the
/// previous event's attributes with the text it wrote for each, and the doubles it formatted.
/// Events of a batch mostly carry the same attributes at the same places (an augmentation's
/// place, coordinates and weather; the device and app values hubhost fills in), and writing an
/// attribute's text again (its name and text values scanned for bytes to escape, its number
/// formatted) was most of the encoding's cost. An attribute with the same bits as the previous
/// event's at that place (`sameBits`) gets that text copied: the same bytes it would be written
/// as. Not shared: one per encoding thread.
package struct EncodingRun {
    /// The doubles formatted so far, for the attributes not copied.
    var doubles: FormattedDoubles? = FormattedDoubles()
    /// The previous event's attributes and its text.
    private(set) var attributes: [Event.Attribute] = []
    /// Its JSON, as `AttributeJSON.appendUTF8` wrote it: the first bytes of this memory.
    private(set) var text: [UInt8] = []
    /// Where each of the previous event's attributes is in `text` (its `{"name":...}` object).
    private(set) var fragments: [Range<Int>] = []

    /// How many attributes were copied from the event before rather than written.
    private(set) var copied = 0

    /// Where the next event's JSON is written (then appended to the caller's output), while
    /// `text` holds the previous one's; the two change places after each event. Written in
    /// place, the bound an event's JSON is sized by is several times its length, and a block
    /// that size allocated per event (freed by the writer thread, never back into this thread's
    /// cache of small blocks) cost more than writing the JSON.
    private var scratch: [UInt8] = []
    /// The `fragments` of the event before the previous one, kept for their capacity.
    private var spareFragments: [Range<Int>] = []

    package init() {}

    /// The bytes of memory this run keeps between events (its two texts).
    var heldBytes: Int { scratch.capacity + text.capacity }

    /// Counts one attribute copied from the event before.
    mutating func countCopied() { copied += 1 }

    /// Memory of at least `bound` bytes to write the next event's JSON in, lent until `remember`.
    mutating func takeScratch(atLeast bound: Int) -> [UInt8] {
        if scratch.count < bound { scratch = [UInt8](repeating: 0, count: max(bound, 4096)) }
        return exchange(&scratch, with: [])
    }

    /// An empty fragments array with room (the one the event before the previous one used).
    mutating func takeFragments() -> [Range<Int>] {
        var fragments = exchange(&spareFragments, with: [])
        fragments.removeAll(keepingCapacity: true)
        return fragments
    }

    /// Keeps the event just encoded: `attributes` written at the start of `written` (memory from
    /// `takeScratch`), attribute `i` at `fragments[i]`. The previous event's memory is the next scratch.
    mutating func remember(_ attributes: [Event.Attribute], written: consuming [UInt8], _ fragments: consuming [Range<Int>]) {
        self.attributes = attributes
        scratch = exchange(&text, with: written)
        spareFragments = exchange(&self.fragments, with: fragments)
    }

    /// Whether two attributes are the same bits: the same String storage (or the same short
    /// String held inline) for the name and a text value, the same number's bits (0.0 and -0.0
    /// differ; a NaN is never written as a number), so the same text. Comparing the bytes of the
    /// Strings instead cost more than writing them; Swift's `==` on String compares canonical
    /// equivalence, not bytes, so it would not do. Bits that differ (another String with the
    /// same text, or an unused payload byte) only mean the attribute is written anew.
    static func sameBits(_ a: UnsafePointer<Event.Attribute>, _ b: UnsafePointer<Event.Attribute>) -> Bool {
        memcmp(a, b, MemoryLayout<Event.Attribute>.size) == 0
    }
}
