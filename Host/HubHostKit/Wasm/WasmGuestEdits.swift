import HubHostABI

/// The most edits a guest's augment answer may carry (the guest adapter stops at as many), so
/// replaying one costs the host a bounded time.
let maxWasmGuestEdits = 10_000

extension EventEditSession {
    /// Replays a WebAssembly guest's augment answer on this session's event: u32 count, then its
    /// plugin's edits in order (u8 0, name and value for a set; u8 1 and name for a remove).
    ///
    /// Each edit goes through this editor's own `set` and `remove` with the bytes the guest wrote,
    /// so it is checked exactly as an in-process plugin's edit is (and a worker's, whose plugin
    /// edits through this editor in its own process): valid UTF-8, the event limits, the attribute
    /// count. The guest's memory is the plugin's to write, so nothing its adapter claims to have
    /// checked is taken on trust. A refused edit is left out and the others stand, as in process,
    /// where the plugin hears HH_ERR_INVALID_ARGUMENT and the event is left as it was.
    /// Throws only when the answer cannot be read (truncated, an unknown edit or value tag).
    func replayWasmGuestEdits(from reader: inout WireReader) throws {
        let count = Int(try reader.u32())
        guard count <= maxWasmGuestEdits else { throw WireError(description: "\(count) edits; at most \(maxWasmGuestEdits)") }
        for _ in 0..<count {
            switch try reader.u8() {
            case 0:
                let name = try reader.stringBytes()
                let type = hh_value_type_t(try reader.u8())
                var value = hh_value_t()
                value.type = type
                var text: ArraySlice<UInt8> = []
                switch type {
                case HH_VALUE_NULL: break
                case HH_VALUE_STRING: text = try reader.stringBytes()
                case HH_VALUE_INT64: value.of.int64 = try reader.i64()
                case HH_VALUE_DOUBLE: value.of.real = try reader.f64()
                case HH_VALUE_BOOL: value.of.boolean = try reader.bool()
                case HH_VALUE_TIME_MS: value.of.time_ms = try reader.i64()
                default: throw WireError(description: "unknown value tag \(type)")
                }
                _ = Self.lend(name) { name in
                    Self.lend(text) { text in
                        if type == HH_VALUE_STRING { value.of.string = text }
                        return set(name, &value)
                    }
                }
            case 1:
                _ = Self.lend(try reader.stringBytes()) { remove($0) }
            case let kind:
                throw WireError(description: "edit kind \(kind)")
            }
        }
    }

    /// `bytes` as an hh_string_t for the length of `body`, as a plugin hands the editor its strings.
    private static func lend<Result>(_ bytes: ArraySlice<UInt8>, _ body: (hh_string_t) -> Result) -> Result {
        bytes.withUnsafeBufferPointer { buffer in
            body(hh_string_t(data: buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, length: buffer.count))
        }
    }
}
