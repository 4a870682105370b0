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

    private struct State {
        var names: [Entry] = []
        /// `values[i]`: the text value last kept under `names[i]`, nil until one is; how often the
        /// next value had the same bytes (`hits[i]`) and how often not (`misses[i]`).
        var values: [Entry?] = []
        var hits: [Int] = []
        var misses: [Int] = []
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

    /// The name `s` holds when it is valid UTF-8 (kept or newly made) and where it is kept (nil
    /// when it is not: no room, or too long); nil when it is not valid UTF-8.
    func name(_ s: hh_string_t) -> (text: String, slot: Int?)? {
        guard let data = s.data, s.length > 0, s.length <= Self.maxLength else { return validUTF8(s).map { ($0, nil) } }
        let bytes = UnsafeRawBufferPointer(start: data, count: s.length)
        let kept: (String, Int)? = state.withLock { state in
            // Through the buffer: iterating the array itself copied each entry (two retains and releases).
            state.names.withUnsafeBufferPointer { names in
                for index in names.indices where Self.same(names[index], bytes) { return (names[index].text, index) }
                return nil
            }
        }
        if let kept { return kept }
        guard let text = validUTF8(s) else { return nil }
        let slot: Int? = state.withLock { state in
            guard state.names.count < Self.capacity else { return nil }
            state.names.append(Entry(bytes: Array(bytes), text: text))
            state.values.append(nil)
            state.hits.append(0)
            state.misses.append(0)
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
            guard slot < state.values.count, state.misses[slot] <= state.hits[slot] + Self.maxValueMisses else { return .some(nil) }  // not kept
            let same: String? = state.values.withUnsafeBufferPointer { values in
                guard let entry = values[slot], Self.same(entry, bytes) else { return nil }
                return entry.text
            }
            guard let same else {
                if state.values[slot] != nil { state.misses[slot] += 1 }
                return nil
            }
            state.hits[slot] += 1
            return .some(same)
        }
        switch kept {
        case .some(.some(let text)): return text
        case .some(.none): return validUTF8(s)  // not kept under this name
        case .none: break
        }
        guard let text = validUTF8(s) else { return nil }
        let entry = Entry(bytes: Array(bytes), text: text)
        state.withLock { $0.values[slot] = entry }
        return text
    }

    /// How many names are kept.
    var count: Int { state.withLock { $0.names.count } }

    private static func same(_ entry: Entry, _ bytes: UnsafeRawBufferPointer) -> Bool {
        entry.bytes.count == bytes.count && entry.bytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
    }
}
