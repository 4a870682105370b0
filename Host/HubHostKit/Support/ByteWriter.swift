import Foundation

/// A cursor writing bytes front to back into memory its user sized beforehand from an upper bound
/// of what it writes: the writers of the event paths (the stored attributes' JSON, a sink message
/// from a stored row, `POST /v1/events`' answer) write a few dozen pieces per event, and appending
/// each to an Array cost a call with a capacity and a uniqueness check, more than copying its
/// bytes. Nothing is checked per piece: each user proves its bound in a comment and checks `count`
/// against it once written (a precondition).
package struct ByteWriter {
    package let base: UnsafeMutablePointer<UInt8>
    /// The bytes written so far, at `base`.
    package private(set) var count = 0

    package init(base: UnsafeMutablePointer<UInt8>) { self.base = base }

    /// The bytes written so far.
    package var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    @inline(__always) package mutating func byte(_ value: UInt8) {
        base[count] = value
        count += 1
    }

    @inline(__always) package mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        guard let start = source.baseAddress, source.count > 0 else { return }
        (base + count).update(from: start, count: source.count)
        count += source.count
    }

    @inline(__always) package mutating func literal(_ text: StaticString) {
        text.withUTF8Buffer { bytes($0) }
    }

    /// A String's UTF-8 bytes as they are.
    package mutating func text(_ text: String) {
        var text = text
        text.withUTF8 { bytes($0) }
    }

    /// Lets `write` put at most `maxCount` bytes at the end (it returns how many it wrote).
    @inline(__always) package mutating func append(upTo maxCount: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) {
        let written = write(base + count)
        precondition((0...maxCount).contains(written), "ByteWriter: more written than announced")
        count += written
    }

    /// `value` in decimal digits (at most 20 bytes, with a minus sign).
    package mutating func integer(_ value: Int64) {
        if value == 0 {
            byte(UInt8(ascii: "0"))
            return
        }
        if value < 0 { byte(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits = 0
        var scan = magnitude
        while scan > 0 {
            digits += 1
            scan /= 10
        }
        var position = count + digits - 1
        while magnitude > 0 {
            base[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
            position -= 1
        }
        count += digits
    }
}
