import Foundation
import HubHostABI
import Synchronization

/// The attribute names one augmentation plugin sets, kept as Strings, and under each the last
/// text value it set: a plugin sets the same few names on every event, often with the same text
/// (a place, a condition), and making each one a String again (validating its bytes as UTF-8 and
/// copying them) was a third of the host's cost of a `set_attribute`. A value given as the same
/// String is also the same bits in the next event, which lets the store's JSON encoding copy its
/// text from the event before (`EncodingRun`). Names and values are looked up by their bytes; one
/// not kept yet is validated as before (`validUTF8`) and kept while there is room.
/// Sendable: the kept names and values live in a Mutex.
final class AttributeNames: Sendable {
    private struct Entry {
        let bytes: [UInt8]
        let text: String
    }

    /// The last text value set under one kept name, and how often the next one matched it.
    private struct KeptValue {
        var entry: Entry
        var hits = 0
        var misses = 0
    }

    private struct State {
        var names: [Entry] = []
        /// `values[i]`: the value kept under `names[i]`, nil until one is.
        var values: [KeptValue?] = []
    }

    /// At most this many names are kept, each of at most `maxLength` bytes: a plugin whose names
    /// vary (say, one per event) fills the list once and then costs a scan of it per set.
    static let capacity = 32
    static let maxLength = 64
    /// A text value of at most this many bytes is kept under its name (one per name, the last set).
    static let maxValueLength = 256
    /// A name's values stop being kept once they changed this many times more than they repeated
    /// (a value that is new at every event, say a counter, would only cost a copy per set).
    static let maxValueMisses = 16

    private let state = Mutex(State())

    /// The name `s` holds when it is valid UTF-8 (kept or newly made), nil when it is not.
    func text(_ s: hh_string_t) -> String? { name(s)?.text }

    /// The name `s` holds when it is valid UTF-8 (kept or newly made) and where it is kept (nil
    /// when it is not: no room, or too long); nil when it is not valid UTF-8.
    func name(_ s: hh_string_t) -> (text: String, slot: Int?)? {
        guard let data = s.data, s.length > 0, s.length <= Self.maxLength else { return validUTF8(s).map { ($0, nil) } }
        let bytes = UnsafeRawBufferPointer(start: data, count: s.length)
        let kept: (String, Int)? = state.withLock { state in
            for (index, entry) in state.names.enumerated() where Self.same(entry, bytes) { return (entry.text, index) }
            return nil
        }
        if let kept { return kept }
        guard let text = validUTF8(s) else { return nil }
        let slot: Int? = state.withLock { state in
            guard state.names.count < Self.capacity else { return nil }
            state.names.append(Entry(bytes: Array(bytes), text: text))
            state.values.append(nil)
            return state.names.count - 1
        }
        return (text, slot)
    }

    /// The text value `s` holds when it is valid UTF-8, set under the kept name at `slot`: the
    /// String made for the same bytes the last time when they are the same, else a new one (kept
    /// in its place). Nil when it is not valid UTF-8.
    func value(_ s: hh_string_t, slot: Int?) -> String? {
        guard let slot, let data = s.data, s.length > 0, s.length <= Self.maxValueLength else { return validUTF8(s) }
        let bytes = UnsafeRawBufferPointer(start: data, count: s.length)
        let kept: String?? = state.withLock { state in
            guard slot < state.values.count else { return .some(nil) }
            guard var value = state.values[slot] else { return nil }
            guard value.misses <= value.hits + Self.maxValueMisses else { return .some(nil) }  // no longer kept
            if Self.same(value.entry, bytes) {
                value.hits += 1
                state.values[slot] = value
                return .some(value.entry.text)
            }
            value.misses += 1
            state.values[slot] = value
            return nil
        }
        switch kept {
        case .some(.some(let text)): return text
        case .some(.none): return validUTF8(s)  // not kept under this name
        case .none: break
        }
        guard let text = validUTF8(s) else { return nil }
        state.withLock { state in
            let entry = Entry(bytes: Array(bytes), text: text)
            if var value = state.values[slot] {
                value.entry = entry
                state.values[slot] = value
            } else {
                state.values[slot] = KeptValue(entry: entry)
            }
        }
        return text
    }

    /// How many names are kept.
    var count: Int { state.withLock { $0.names.count } }

    private static func same(_ entry: Entry, _ bytes: UnsafeRawBufferPointer) -> Bool {
        entry.bytes.count == bytes.count && entry.bytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
    }
}
