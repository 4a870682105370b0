/// The last few doubles `AttributeJSON` formatted, with their text: what encoding a run of events
/// (`EncodingRun`) reuses instead of calling `description` again for a value it just wrote. Augmentation gives every
/// event the same coordinates and temperatures, so most of a batch's doubles are repeats; the
/// text is `description`'s own, so the stored bytes are the same with or without it. Keyed by
/// the bit pattern (0.0 and -0.0 differ). Not shared: one per encoding thread.
package struct FormattedDoubles {
    /// How many values are kept: an event carries a handful of doubles.
    static let capacity = 8

    private var bits: [UInt64] = []
    private var texts: [String] = []
    /// Whether each slot was reused since the hand last passed it ("second chance"): a value
    /// every event repeats stays, one that each event has anew (a score) takes the free slots.
    private var reused: [Bool] = []
    private var hand = 0

    package init() {
        bits.reserveCapacity(Self.capacity)
        texts.reserveCapacity(Self.capacity)
        reused.reserveCapacity(Self.capacity)
    }

    /// Calls `body` with the UTF-8 of `value.description`, formatted now or reused.
    mutating func withText(of value: Double, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        let key = value.bitPattern
        if let index = bits.firstIndex(of: key) {
            reused[index] = true
            texts[index].withUTF8(body)
            return
        }
        var text = value.description
        text.withUTF8(body)
        if bits.count < Self.capacity {
            bits.append(key)
            texts.append(text)
            reused.append(false)
            return
        }
        while reused[hand] {
            reused[hand] = false
            hand = (hand + 1) % Self.capacity
        }
        bits[hand] = key
        texts[hand] = text
        hand = (hand + 1) % Self.capacity
    }
}
