import Foundation
import HubHostABI

/// The part of an event an augmentation plugin sees and may change: its id, type code, name, time
/// and typed attributes, in order. The event engine converts its events to and from this.
public struct AugmentableEvent: Equatable, Sendable {
    public var id: String
    public var typeCode: Int32
    public var name: String
    public var timeMs: Int64
    public var attributes: [(name: String, value: PluginValue)]

    public init(id: String, typeCode: Int32, name: String, timeMs: Int64, attributes: [(name: String, value: PluginValue)] = []) {
        self.id = id
        self.typeCode = typeCode
        self.name = name
        self.timeMs = timeMs
        self.attributes = attributes
    }

    public subscript(attribute name: String) -> PluginValue? {
        attributes.first { $0.name == name }?.value
    }

    public static func == (a: AugmentableEvent, b: AugmentableEvent) -> Bool {
        a.id == b.id && a.typeCode == b.typeCode && a.name == b.name && a.timeMs == b.timeMs
            && a.attributes.map(\.name) == b.attributes.map(\.name) && a.attributes.map(\.value) == b.attributes.map(\.value)
    }

    /// Sets (replacing in place) or appends an attribute.
    public mutating func set(_ name: String, _ value: PluginValue) {
        if let index = attributes.firstIndex(where: { $0.name == name }) {
            attributes[index].value = value
        } else {
            attributes.append((name, value))
        }
    }

    public mutating func remove(_ name: String) -> Bool {
        guard let index = attributes.firstIndex(where: { $0.name == name }) else { return false }
        attributes.remove(at: index)
        return true
    }
}

/// What one augmentation call did.
public struct AugmentationOutcome: Equatable, Sendable {
    public var status: Int32
    /// The plugin's report_error message when status is not HH_OK.
    public var message: String
    /// The event with the plugin's edits when status is HH_OK; the event as it was otherwise.
    public var event: AugmentableEvent
}

/// An `augmentation` plugin. The event is exposed through hh_event_view_t and changed only through
/// hh_event_editor_t; edits are kept only when the plugin answers HH_OK.
public final class AugmentationPlugin: @unchecked Sendable {
    public let handle: PluginHandle

    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .augmentation, "AugmentationPlugin needs an augmentation plugin")
        self.handle = handle
    }

    /// Isolated: a failed worker answers false.
    public var processSynchronously: Bool {
        guard let instance = handle.instance else { return IsolatedCalls.flag(handle, .processSynchronously) }
        return instance.api(hh_augmentation_v1_t.self).pointee.process_synchronously(instance.handle)
    }

    public var isSupplementalDataReady: Bool {
        guard let instance = handle.instance else { return IsolatedCalls.flag(handle, .isSupplementalDataReady) }
        return instance.api(hh_augmentation_v1_t.self).pointee.is_supplemental_data_ready(instance.handle)
    }

    /// Runs the plugin on `event`. [thread-safe], as the header promises. Isolated: a failed
    /// worker leaves the event as it was (status HH_ERR_UNAVAILABLE, the cause as message).
    public func augment(_ event: AugmentableEvent) -> AugmentationOutcome {
        let started = Clock.monotonicNs()
        let outcome = call(event)
        RuntimeMetrics.augmentation(instance: handle.instanceID, nanoseconds: Clock.monotonicNs() &- started, failed: outcome.status != HH_OK)
        return outcome
    }

    private func call(_ event: AugmentableEvent) -> AugmentationOutcome {
        guard let instance = handle.instance else { return IsolatedCalls.augment(handle, event) }
        let api = instance.api(hh_augmentation_v1_t.self)
        let session = EventEditSession(event)
        defer { session.release() }
        let status = session.withView { view, editor in api.pointee.augment(instance.handle, view, editor) }
        if status == HH_OK { return AugmentationOutcome(status: status, message: "", event: session.working) }
        return AugmentationOutcome(status: status, message: instance.takeError(), event: event)
    }
}

/// The host side of one augment call: C copies of the event's strings for the view, the edits the
/// plugin makes through the editor. Strings handed out stay valid until `release`, even after an
/// edit replaces them, as the header promises ("valid until the augment call returns").
final class EventEditSession {
    private(set) var working: AugmentableEvent
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var cAttributes: [(name: hh_string_t, value: hh_value_t)] = []
    private let lock = NSLock()  // the view and editor are [any-thread] during the call

    /// The C copies are rebuilt only when the plugin reads after an edit: a plugin that only
    /// writes (the common case) costs no copies beyond the first.
    private var stale = false

    /// Nothing is copied up front: a plugin that reads attributes by name gets just those
    /// converted, and the full C copy is built only for reads by index.
    init(_ event: AugmentableEvent) {
        working = event
        stale = true
    }

    private func refresh() {
        if stale {
            rebuild()
            stale = false
        }
    }

    func release() {
        for buffer in buffers { buffer.deallocate() }
        buffers = []
    }

    private func copy(_ text: String) -> hh_string_t {
        var text = text
        return text.withUTF8 { bytes in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
            buffer.copyMemory(from: UnsafeRawBufferPointer(bytes))
            buffers.append(buffer)
            return hh_string_t(data: buffer.baseAddress!.assumingMemoryBound(to: CChar.self), length: bytes.count)
        }
    }

    private func rebuild() {
        cAttributes = working.attributes.map { attribute in (copy(attribute.name), cValue(attribute.value)) }
    }

    /// A C copy of one value; a string's bytes live until `release`.
    private func cValue(_ swiftValue: PluginValue) -> hh_value_t {
        var value = hh_value_t()
        switch swiftValue {
        case .null: value.type = HH_VALUE_NULL
        case .string(let s): value.type = HH_VALUE_STRING; value.of.string = copy(s)
        case .int(let i): value.type = HH_VALUE_INT64; value.of.int64 = i
        case .double(let d): value.type = HH_VALUE_DOUBLE; value.of.real = d
        case .bool(let b): value.type = HH_VALUE_BOOL; value.of.boolean = b
        case .timeMs(let t): value.type = HH_VALUE_TIME_MS; value.of.time_ms = t
        }
        return value
    }

    func withView(_ body: (UnsafePointer<hh_event_view_t>, UnsafePointer<hh_event_editor_t>) -> hh_status_t) -> hh_status_t {
        let me = Unmanaged.passUnretained(self).toOpaque()
        var view = hh_event_view_t(
            event_data: me, event_id: copy(working.id), type_code: working.typeCode, name: copy(working.name), time_ms: working.timeMs,
            attribute_count: { view in EventEditSession.from(view?.pointee.event_data).count },
            attribute_at: { view, index, name, value in EventEditSession.from(view?.pointee.event_data).attribute(at: index, name, value) },
            get_attribute: { view, name, value in EventEditSession.from(view?.pointee.event_data).attribute(named: name, value) })
        var editor = hh_event_editor_t(
            editor_data: me,
            set_attribute: { editor, name, value in EventEditSession.from(editor?.pointee.editor_data).set(name, value) },
            remove_attribute: { editor, name in EventEditSession.from(editor?.pointee.editor_data).remove(name) })
        return withExtendedLifetime(self) { body(&view, &editor) }
    }

    static func from(_ data: UnsafeMutableRawPointer?) -> EventEditSession {
        Unmanaged<EventEditSession>.fromOpaque(data!).takeUnretainedValue()
    }

    var count: Int { lock.withLock { working.attributes.count } }

    func attribute(at index: Int, _ name: UnsafeMutablePointer<hh_string_t>?, _ value: UnsafeMutablePointer<hh_value_t>?) -> hh_status_t {
        lock.withLock {
            refresh()
            guard index >= 0, index < cAttributes.count else { return HH_ERR_NOT_FOUND }
            name?.pointee = cAttributes[index].name
            value?.pointee = cAttributes[index].value
            return HH_OK
        }
    }

    func attribute(named name: hh_string_t, _ value: UnsafeMutablePointer<hh_value_t>?) -> hh_status_t {
        let key = swiftString(name)
        return lock.withLock {
            guard let attribute = working.attributes.first(where: { $0.name == key }) else { return HH_ERR_NOT_FOUND }
            value?.pointee = cValue(attribute.value)
            return HH_OK
        }
    }

    func set(_ name: hh_string_t, _ value: UnsafePointer<hh_value_t>?) -> hh_status_t {
        guard let value, name.length > 0, let key = validUTF8(name) else { return HH_ERR_INVALID_ARGUMENT }
        let converted: PluginValue
        switch value.pointee.type {
        case HH_VALUE_NULL: converted = .null
        case HH_VALUE_STRING:
            guard let text = validUTF8(value.pointee.of.string) else { return HH_ERR_INVALID_ARGUMENT }
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
        return lock.withLock {
            if working.attributes.count >= EventLimits.maxAttributes, !working.attributes.contains(where: { $0.name == key }) {
                return HH_ERR_INVALID_ARGUMENT
            }
            working.set(key, converted)
            stale = true
            return HH_OK
        }
    }

    func remove(_ name: hh_string_t) -> hh_status_t {
        let key = swiftString(name)
        return lock.withLock {
            guard working.remove(key) else { return HH_ERR_NOT_FOUND }
            stale = true
            return HH_OK
        }
    }
}

/// The text of an hh_string_t when it is valid UTF-8; nil otherwise.
func validUTF8(_ s: hh_string_t) -> String? {
    guard let data = s.data, s.length > 0 else { return s.length == 0 ? "" : nil }
    let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: s.length)
    // ASCII (most attribute names and values) is valid UTF-8 as it is: skip the general validator,
    // which cost about 1,000 instructions per call on the augmentation path.
    if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
    return String(validating: bytes, as: UTF8.self)
}
