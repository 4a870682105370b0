import Foundation
import HubHostABI
import Synchronization

/// The host side of one augment call: the event's strings for the view (the id and name lent for
/// the call, attributes as C copies), the edits the plugin makes through the editor. Strings handed
/// out stay valid until `release`, even after an edit replaces them, as the header promises
/// ("valid until the augment call returns").
final class EventEditSession {
    /// Not checked for exclusive access at run time: every access is under `lock` or after the
    /// call, and the checks were a tenth of the host's cost of an attribute a plugin sets.
    @exclusivity(unchecked) private(set) var working: AugmentableEvent
    /// How many attributes the event had when given: while edits only append, the event as given
    /// is `working` cut back to them, so no copy of it is kept (a copy would make the first append
    /// copy every attribute, a sixth of the host's cost of a call).
    private let givenCount: Int
    /// The event as given, saved before the first edit that changes or removes an attribute in place.
    private var saved: AugmentableEvent?
    /// Made at the first string value a plugin reads: most calls (plugins that only write, or read
    /// numbers) need none.
    private var copies: HostStringCopies?
    private var cAttributes: [(name: hh_string_t, value: hh_value_t)] = []
    /// The view and editor are [any-thread] during the call: their callbacks run under this lock.
    /// It guards the session's fields by convention rather than holding them (a `Mutex<Void>`
    /// inside the object, not an NSLock: no second object to allocate and free per call): the
    /// caller reads `working` without it once the call has returned.
    private let lock = Mutex<Void>(())

    /// The C copies are rebuilt only when the plugin reads after an edit: a plugin that only
    /// writes (the common case) costs no copies beyond the first.
    private var stale = false

    /// The plugin's names kept as Strings (`AugmentationPlugin.names`); nil: each made anew.
    private let names: AttributeNames?

    /// Nothing is copied up front: a plugin that reads attributes by name gets just those
    /// converted, and the full C copy is built only for reads by index. `names` keeps the names
    /// the plugin sets and reads from one call to the next.
    init(_ event: consuming AugmentableEvent, names: AttributeNames? = nil) {
        givenCount = event.list.count
        working = event
        self.names = names
        stale = true
    }

    /// The text of a name the plugin hands over, when it is valid UTF-8, and where the plugin's
    /// kept names hold it (nil: not kept).
    private func name(_ s: hh_string_t) -> (text: String, slot: Int?)? {
        guard let names else { return validUTF8(s).map { ($0, nil) } }
        return names.name(s)
    }

    /// The text of a text value the plugin sets under the name at `slot`, when it is valid UTF-8.
    private func textValue(_ s: hh_string_t, slot: Int?) -> String? {
        guard let names else { return validUTF8(s) }
        return names.value(s, slot: slot)
    }

    /// The event as it was given, whatever the plugin edited: what a failed call answers.
    var original: AugmentableEvent {
        lock.withLock { _ in originalLocked }
    }

    private var originalLocked: AugmentableEvent {
        if let saved { return saved }
        var given = working
        given.list.removeLast(given.list.count - givenCount)
        return given
    }

    /// Called under `lock` before an edit changes or removes an attribute in place.
    private func saveOriginal() {
        if saved == nil { saved = originalLocked }
    }

    private func refresh() {
        if stale {
            rebuild()
            stale = false
        }
    }

    func release() {
        copies?.release()
    }

    private func copy(_ text: String) -> hh_string_t {
        if copies == nil { copies = HostStringCopies() }
        return copies!.copy(text)
    }

    private func rebuild() {
        cAttributes = working.list.map { attribute in (copy(attribute.name), cValue(attribute.value)) }
    }

    /// A C copy of one value; a string's bytes live until `release`.
    private func cValue(_ swiftValue: PluginValue) -> hh_value_t {
        var value = hh_value_t()
        switch swiftValue {
        case .null: value.type = HH_VALUE_NULL
        case .string(let s):
            value.type = HH_VALUE_STRING
            value.of.string = copy(s)
        case .int(let i):
            value.type = HH_VALUE_INT64
            value.of.int64 = i
        case .double(let d):
            value.type = HH_VALUE_DOUBLE
            value.of.real = d
        case .bool(let b):
            value.type = HH_VALUE_BOOL
            value.of.boolean = b
        case .timeMs(let t):
            value.type = HH_VALUE_TIME_MS
            value.of.time_ms = t
        }
        return value
    }

    func withView(_ body: (UnsafePointer<hh_event_view_t>, UnsafePointer<hh_event_editor_t>) -> hh_status_t) -> hh_status_t {
        let me = Unmanaged.passUnretained(self).toOpaque()
        // The id and name are lent as the bytes of local copies of the two Strings, valid for the
        // whole call: edits change only attributes, so nothing replaces them meanwhile. Two heap
        // copies per call (and freeing them) were about a sixth of the host's cost of a call.
        var id = working.id
        var name = working.name
        return id.withUTF8 { idBytes in
            name.withUTF8 { nameBytes in
                var view = hh_event_view_t(
                    event_data: me, event_id: Self.lent(idBytes), type_code: working.typeCode, name: Self.lent(nameBytes), time_ms: working.timeMs,
                    attribute_count: { view in EventEditSession.from(view?.pointee.event_data).count },
                    attribute_at: { view, index, name, value in EventEditSession.from(view?.pointee.event_data).attribute(at: index, name, value) },
                    get_attribute: { view, name, value in EventEditSession.from(view?.pointee.event_data).attribute(named: name, value) })
                var editor = hh_event_editor_t(
                    editor_data: me,
                    set_attribute: { editor, name, value in EventEditSession.from(editor?.pointee.editor_data).set(name, value) },
                    remove_attribute: { editor, name in EventEditSession.from(editor?.pointee.editor_data).remove(name) })
                return withExtendedLifetime(self) { body(&view, &editor) }
            }
        }
    }

    /// One byte that is never written: what an empty lent string points at, so that `data` is
    /// never NULL (as with the copies, which allocate at least one byte).
    nonisolated(unsafe) private static let emptyBytes: UnsafeMutablePointer<CChar> = {
        let byte = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
        byte.initialize(to: 0)
        return byte
    }()

    /// `bytes` as an hh_string_t, valid as long as `bytes` is.
    private static func lent(_ bytes: UnsafeBufferPointer<UInt8>) -> hh_string_t {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return hh_string_t(data: emptyBytes, length: 0) }
        return hh_string_t(data: UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), length: bytes.count)
    }

    static func from(_ data: UnsafeMutableRawPointer?) -> EventEditSession {
        Unmanaged<EventEditSession>.fromOpaque(data!).takeUnretainedValue()
    }

    var count: Int { lock.withLock { _ in working.list.count } }

    func attribute(at index: Int, _ name: UnsafeMutablePointer<hh_string_t>?, _ value: UnsafeMutablePointer<hh_value_t>?) -> hh_status_t {
        lock.withLock { _ in
            refresh()
            guard index >= 0, index < cAttributes.count else { return HH_ERR_NOT_FOUND }
            name?.pointee = cAttributes[index].name
            value?.pointee = cAttributes[index].value
            return HH_OK
        }
    }

    func attribute(named name: hh_string_t, _ value: UnsafeMutablePointer<hh_value_t>?) -> hh_status_t {
        let key = self.name(name)?.text ?? lossyUTF8(name)
        let keyLength = key.utf8.count
        return lock.withLock { _ in
            guard let attribute = working.list.first(where: { $0.name.utf8.count == keyLength && $0.name == key }) else { return HH_ERR_NOT_FOUND }
            value?.pointee = cValue(attribute.value)
            return HH_OK
        }
    }

    func set(_ name: hh_string_t, _ value: UnsafePointer<hh_value_t>?) -> hh_status_t {
        guard let value, name.length > 0, let (key, slot) = self.name(name) else { return HH_ERR_INVALID_ARGUMENT }
        let converted: PluginValue
        switch value.pointee.type {
        case HH_VALUE_NULL: converted = .null
        case HH_VALUE_STRING:
            guard let text = textValue(value.pointee.of.string, slot: slot) else { return HH_ERR_INVALID_ARGUMENT }
            converted = .string(text)
        case HH_VALUE_INT64: converted = .int(value.pointee.of.int64)
        case HH_VALUE_DOUBLE: converted = .double(value.pointee.of.real)
        case HH_VALUE_BOOL: converted = .bool(value.pointee.of.boolean)
        case HH_VALUE_TIME_MS: converted = .timeMs(value.pointee.of.time_ms)
        default: return HH_ERR_INVALID_ARGUMENT
        }
        // Plugin output is outside input too: the same limits as an event from HTTP (a time in
        // range, a finite double, sizes), so nothing a plugin sets can poison the store.
        guard (try? EventLimits.check(key, converted)) != nil else { return HH_ERR_INVALID_ARGUMENT }
        return lock.withLock { _ in
            // One search by name (a String comparison per attribute of the same length in bytes,
            // which native Strings know without counting): replace in place, else append within the limit.
            let keyLength = key.utf8.count
            if let index = working.list.firstIndex(where: { $0.name.utf8.count == keyLength && $0.name == key }) {
                saveOriginal()
                working.list[index].value = converted
            } else {
                guard working.list.count < EventLimits.maxAttributes else { return HH_ERR_INVALID_ARGUMENT }
                // The list is still the caller's at the first append: copied once, with room for
                // a plugin's usual few attributes.
                if working.list.count == givenCount { working.list.reserveCapacity(givenCount + 8) }
                working.list.append(Event.Attribute(key, converted))
            }
            stale = true
            return HH_OK
        }
    }

    func remove(_ name: hh_string_t) -> hh_status_t {
        let key = lossyUTF8(name)
        return lock.withLock { _ in
            guard working[attribute: key] != nil else { return HH_ERR_NOT_FOUND }
            saveOriginal()
            guard working.remove(key) else { return HH_ERR_NOT_FOUND }
            stale = true
            return HH_OK
        }
    }
}
