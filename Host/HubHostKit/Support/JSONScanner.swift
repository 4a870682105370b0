/// The tokens of JSON text, read by hand from its UTF-8 bytes: what JSONValueReader and the readers
/// of one known shape (an event's attributes, an item's files) are built from. Each read skips the
/// whitespace before its token and returns nil for what JSON's grammar does not allow; `number`
/// returns only what a Double holds exactly (at most 15 significant digits, an exponent within
/// ±300). So a reader can fall back to JSONDecoder and never read another value.
package struct JSONScanner {
    package let bytes: UnsafeBufferPointer<UInt8>
    /// The next byte to read.
    package var at = 0

    package init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    package mutating func skipSpace() {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
    }

    /// Skips whitespace, then takes `byte` if it is next.
    package mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    /// Whether only whitespace is left.
    package mutating func end() -> Bool {
        skipSpace()
        return at == bytes.count
    }

    /// Takes `word` (true, false, null, or any ASCII text) if it comes next, as it is.
    package mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count else { return false }
        for i in 0..<count where bytes[at + i] != word.utf8Start[i] { return false }
        at += count
        return true
    }

    /// A string token, unescaped; nil on a bad escape, an unescaped control character or bytes
    /// that are not UTF-8.
    package mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = at
        // The common case: no escape, so the bytes are the string; all ASCII, they need no UTF-8
        // validation (the generic validating initializer was a third of reading a catalog row).
        var ascii = true
        while at < bytes.count, bytes[at] != UInt8(ascii: "\""), bytes[at] != UInt8(ascii: "\\"), bytes[at] >= 0x20 {
            ascii = ascii && bytes[at] < 0x80
            at += 1
        }
        guard at < bytes.count else { return nil }
        if bytes[at] == UInt8(ascii: "\"") {
            defer { at += 1 }
            let text = UnsafeBufferPointer(rebasing: bytes[start..<at])
            return ascii ? String(decoding: text, as: UTF8.self) : String(validating: text, as: UTF8.self)
        }
        var utf8 = Array(bytes[start..<at])
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            switch byte {
            case UInt8(ascii: "\""): return String(validating: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard at < bytes.count else { return nil }
                let escape = bytes[at]
                at += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A high surrogate must be followed by its low half.
                        guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default: return nil
                }
            default:
                guard byte >= 0x20 else { return nil }  // control characters must be escaped
                utf8.append(byte)
            }
        }
        return nil
    }

    package mutating func hex4() -> UInt32? {
        guard at + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[at]
            at += 1
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = value << 4 | UInt32(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        return value
    }

    /// A number token in JSON's grammar, exact as a Double: at most 15 significant digits.
    package mutating func number() -> Double? {
        let start = at
        func digits() -> Int {
            let from = at
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
            return at - from
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        let integerStart = at
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        var fractionDigits = 0
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            fractionDigits = digits()
            guard fractionDigits > 0 else { return nil }
        }
        var exponent = 0
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            var negative = false
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") {
                negative = bytes[at] == UInt8(ascii: "-")
                at += 1
            }
            let exponentStart = at
            guard (1...3).contains(digits()) else { return nil }
            for i in exponentStart..<at { exponent = exponent * 10 + Int(bytes[i] - UInt8(ascii: "0")) }
            if negative { exponent = -exponent }
        }
        // Leading zeros of a fraction like 0.000123 are not significant.
        var significant = integerDigits + fractionDigits
        if bytes[integerStart] == UInt8(ascii: "0") {
            significant -= 1
            var i = integerStart + 2
            while i < at, significant > 0, bytes[i] == UInt8(ascii: "0") {
                significant -= 1
                i += 1
            }
        }
        guard significant <= 15, abs(exponent) <= 300 else { return nil }
        if fractionDigits == 0 && exponent == 0 {
            // An integer: exact without a Double parse.
            var value: Int64 = 0
            for i in integerStart..<at { value = value * 10 + Int64(bytes[i] - UInt8(ascii: "0")) }
            return Double(bytes[start] == UInt8(ascii: "-") ? -value : value)
        }
        return Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self))
    }
}
