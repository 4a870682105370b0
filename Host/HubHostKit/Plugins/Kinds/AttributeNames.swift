import Foundation
import HubHostABI
import Synchronization

/// The attribute names one augmentation plugin sets, kept as Strings: a plugin sets the same few
/// names on every event, and making each one a String again (validating its bytes as UTF-8 and
/// copying them) was a third of the host's cost of a `set_attribute`. A name is looked up by its
/// bytes; one not kept yet is validated as before (`validUTF8`) and kept while there is room.
/// Sendable: the kept names live in a Mutex.
final class AttributeNames: Sendable {
    private struct Entry {
        let bytes: [UInt8]
        let text: String
    }

    /// At most this many names are kept, each of at most `maxLength` bytes: a plugin whose names
    /// vary (say, one per event) fills the list once and then costs a scan of it per set.
    static let capacity = 32
    static let maxLength = 64

    private let entries = Mutex<[Entry]>([])

    /// The name `s` holds when it is valid UTF-8 (kept or newly made), nil when it is not.
    func text(_ s: hh_string_t) -> String? {
        guard let data = s.data, s.length > 0, s.length <= Self.maxLength else { return validUTF8(s) }
        let bytes = UnsafeRawBufferPointer(start: data, count: s.length)
        let kept: String? = entries.withLock { list in
            for entry in list where entry.bytes.count == bytes.count {
                let same = entry.bytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
                if same { return entry.text }
            }
            return nil
        }
        if let kept { return kept }
        guard let text = validUTF8(s) else { return nil }
        entries.withLock { list in
            if list.count < Self.capacity { list.append(Entry(bytes: Array(bytes), text: text)) }
        }
        return text
    }

    /// How many names are kept.
    var count: Int { entries.withLock { $0.count } }
}
