import Foundation

/// The cases of a String-backed enum found by their raw value's UTF-8 bytes, with no String made
/// from the bytes: for enums read from every row of a hot query (an event's type and status).
struct RawTextTable<Value: RawRepresentable & Sendable>: Sendable where Value.RawValue == String {
    private let cases: [(bytes: [UInt8], value: Value)]

    init(_ values: [Value]) { cases = values.map { (Array($0.rawValue.utf8), $0) } }

    /// The case whose raw value is exactly `bytes`, or nil. Compared with memcmp: the generic
    /// element-by-element comparison was about 4% of a delivery's flush thread in a profile.
    func value(_ bytes: UnsafeBufferPointer<UInt8>) -> Value? {
        for entry in cases where entry.bytes.count == bytes.count {
            let equal = entry.bytes.withUnsafeBufferPointer { known in
                bytes.isEmpty || memcmp(known.baseAddress!, bytes.baseAddress!, bytes.count) == 0
            }
            if equal { return entry.value }
        }
        return nil
    }
}
