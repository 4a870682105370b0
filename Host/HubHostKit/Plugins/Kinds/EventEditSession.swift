import Foundation
import HubHostABI
import Synchronization

/// The host side of one augment call: the event's strings for the view (the id and name lent for
/// the call, attributes as C copies), the edits the plugin makes through the editor. Strings handed
/// out stay valid until `release`, even after an edit replaces them, as the header promises
/// ("valid until the augment call returns").
final class EventEditSession {
    /// The event as given, never changed: what a failed call answers. While the plugin's edits
    /// only append, the edited event is this one with `added` after its attributes, so the given
    /// attributes are neither copied nor changed (the caller's copy of the event shares them, and
    /// appending to it would have copied every attribute, the largest part of the host's cost of
    /// a call).
    let given: AugmentableEvent
    /// The attributes appended to the given event, in order: names new to it and to each other.
    /// Not checked for exclusive access at run time (nor is `edited`): every access is under
    /// `lock` or after the call, and the checks were a tenth of the host's cost of an attribute a
    /// plugin sets.
    @exclusivity(unchecked) private var added: [Event.Attribute] = []
    /// The whole edited event, made at the first edit that changes or removes one of the given
    /// attributes (from then on every edit goes to it, and `added` is no longer used).
    @exclusivity(unchecked) private var edited: AugmentableEvent?
    /// Made at the first string value a plugin reads: most calls (plugins that only write, or read
    /// numbers) need none.
    private var copies: HostStringCopies?
    private var cAttributes: [(name: hh_string_t, value: hh_value_t)] = []
    /// The view and editor are [any-thread] during the call: their callbacks run under this lock.
    /// It guards the session's fields by convention rather than holding them (a `Mutex<Void>`
    /// inside the object, not an NSLock: no second object to allocate and free per call): the
    /// caller reads the edits without it once the call has returned.
    private let lock = Mutex<Void>(())

    /// The C copies are rebuilt only when the plugin reads after an edit: a plugin that only
    /// writes (the common case) costs no copies beyond the first.
    private var stale = false

    /// The plugin's names kept as Strings (`AugmentationPlugin.names`); nil: each made anew.
    /// Not retained: the plugin holds them for as long as its call, and a session lives only for
    /// the call (`init`'s caller promises it). Retained, each lookup was a retain and a release.
    private unowned(unsafe) let names: AttributeNames?

    /// Nothing is copied up front: a plugin that reads attributes by name gets just those
    /// converted, and the full C copy is built only for reads by index. `names` keeps the names
    /// the plugin sets and reads from one call to the next; the caller keeps it alive for as long
    /// as the session.
    init(_ event: consuming AugmentableEvent, names: AttributeNames? = nil) {
        given = event
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

    /// The event with the plugin's edits (a new event when it appended: read it once, after the call).
    var working: AugmentableEvent {
        lock.withLock { _ in
            if let edited { return edited }
            guard !added.isEmpty else { return given }
            var event = given
            event.list.append(contentsOf: added)
            return event
        }
    }

    /// What the plugin appended to the given event, when that is all it did (its edits changed
    /// and removed none of the given attributes); nil when it did more.
    var appended: [Event.Attribute]? {
        lock.withLock { _ in edited == nil ? added : nil }
    }

    /// The event as it was given, whatever the plugin edited: what a failed call answers.
    var original: AugmentableEvent { given }

    /// The attributes as edited so far, for reads (caller holds `lock`).
    private var currentList: [Event.Attribute] {
        if let edited { return edited.list }
        return added.isEmpty ? given.list : given.list + added
    }

    /// Called under `lock` before an edit changes or removes one of the given attributes: from
    /// then on the edits go to a whole copy of the event.
    private func makeEdited() {
        guard edited == nil else { return }
        var event = given
        event.list.append(contentsOf: added)
        edited = event
        added = []
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
        cAttributes = currentList.map { attribute in (copy(attribute.name), cValue(attribute.value)) }
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
        var id = given.id
        var name = given.name
        return id.withUTF8 { idBytes in
            name.withUTF8 { nameBytes in
                var view = hh_event_view_t(
                    event_data: me, event_id: Self.lent(idBytes), type_code: given.typeCode, name: Self.lent(nameBytes), time_ms: given.timeMs,
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

    var count: Int { lock.withLock { _ in edited?.list.count ?? given.list.count + added.count } }

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
            let found: PluginValue?
            if let edited {
                found = Self.index(of: key, keyLength, in: edited.list).map { edited.list[$0].value }
            } else {
                found =
                    Self.index(of: key, keyLength, in: given.list).map { given.list[$0].value }
                    ?? Self.index(of: key, keyLength, in: added).map { added[$0].value }
            }
            guard let found else { return HH_ERR_NOT_FOUND }
            value?.pointee = cValue(found)
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
        // range, a finite double, sizes), so nothing a plugin sets can poison the store. A kept
        // name (`slot`) was checked when it was kept: 1 to `AttributeNames.maxLength` bytes.
        guard slot == nil ? (try? EventLimits.check(key, converted)) != nil : EventLimits.allows(converted) else { return HH_ERR_INVALID_ARGUMENT }
        return lock.withLock { _ in
            // One search by name (a String comparison per attribute of the same length in bytes,
            // which native Strings know without counting): replace in place, else append within the limit.
            let keyLength = key.utf8.count
            if edited == nil {
                if let index = Self.index(of: key, keyLength, in: added) {
                    added[index].value = converted  // one of its own: the given attributes stay as they are
                } else if let index = Self.index(of: key, keyLength, in: given.list) {
                    makeEdited()  // the given attributes come first in it, at the same places
                    edited!.list[index].value = converted
                } else {
                    guard given.list.count + added.count < EventLimits.maxAttributes else { return HH_ERR_INVALID_ARGUMENT }
                    if added.isEmpty { added.reserveCapacity(8) }  // a plugin's usual few attributes
                    added.append(Event.Attribute(key, converted))
                }
            } else if let index = Self.index(of: key, keyLength, in: edited!.list) {
                edited!.list[index].value = converted
            } else {
                guard edited!.list.count < EventLimits.maxAttributes else { return HH_ERR_INVALID_ARGUMENT }
                edited!.list.append(Event.Attribute(key, converted))
            }
            stale = true
            return HH_OK
        }
    }

    /// Where the attribute named `key` (of `keyLength` UTF-8 bytes) is in `list`, if it is there.
    /// Through the buffer, names of another length skipped before any String comparison:
    /// `firstIndex(where:)` on the array retained and released each name it passed.
    private static func index(of key: String, _ keyLength: Int, in list: [Event.Attribute]) -> Int? {
        list.withUnsafeBufferPointer { attributes in
            for index in attributes.indices where attributes[index].name.utf8.count == keyLength && attributes[index].name == key { return index }
            return nil
        }
    }

    func remove(_ name: hh_string_t) -> hh_status_t {
        let key = lossyUTF8(name)
        return lock.withLock { _ in
            if edited == nil {
                if let index = added.firstIndex(where: { $0.name == key }) {
                    added.remove(at: index)  // one of its own: the given attributes stay as they are
                    stale = true
                    return HH_OK
                }
                guard given[attribute: key] != nil else { return HH_ERR_NOT_FOUND }
                makeEdited()
            }
            guard edited!.remove(key) else { return HH_ERR_NOT_FOUND }
            stale = true
            return HH_OK
        }
    }
}
