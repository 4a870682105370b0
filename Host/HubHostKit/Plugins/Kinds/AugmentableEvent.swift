/// The part of an event an augmentation plugin sees and may change: its id, type code, name, time
/// and typed attributes, in order. The event engine converts its events to and from this.
public struct AugmentableEvent: Equatable, Sendable {
    /// The host's id for the event, for log messages.
    public var id: String
    /// The event's Universal Behavior type code (e.g. 17 for a named event).
    public var typeCode: Int32
    /// The event's name; may be empty.
    public var name: String
    /// When the event happened, in milliseconds since 1970.
    public var timeMs: Int64
    /// The event's attributes, in order; names are exact and case-sensitive.
    public var attributes: [(name: String, value: PluginValue)] {
        get { list.map { ($0.name, $0.value) } }
        set { list = newValue.map { Event.Attribute($0.name, $0.value) } }
    }

    /// The attributes as the event engine keeps them: an event handed to a plugin shares the
    /// engine's storage, and the plugin's edits come back in it, with no conversion either way
    /// (converting each event to pairs and back was a tenth of the host's cost of a call).
    var list: [Event.Attribute]

    /// An event with these fields; `timeMs` in milliseconds since 1970.
    public init(id: String, typeCode: Int32, name: String, timeMs: Int64, attributes: [(name: String, value: PluginValue)] = []) {
        self.init(id: id, typeCode: typeCode, name: name, timeMs: timeMs, list: attributes.map { Event.Attribute($0.name, $0.value) })
    }

    init(id: String, typeCode: Int32, name: String, timeMs: Int64, list: [Event.Attribute]) {
        self.id = id
        self.typeCode = typeCode
        self.name = name
        self.timeMs = timeMs
        self.list = list
    }

    /// The value of the first attribute named exactly `name`; nil when there is none.
    public subscript(attribute name: String) -> PluginValue? {
        list.first { $0.name == name }?.value
    }

    public static func == (a: AugmentableEvent, b: AugmentableEvent) -> Bool {
        a.id == b.id && a.typeCode == b.typeCode && a.name == b.name && a.timeMs == b.timeMs && a.list == b.list
    }

    /// Sets (replacing in place) or appends an attribute.
    public mutating func set(_ name: String, _ value: PluginValue) {
        if let index = list.firstIndex(where: { $0.name == name }) {
            list[index].value = value
        } else {
            list.append(Event.Attribute(name, value))
        }
    }

    /// Removes the first attribute named exactly `name`; false when there was none.
    public mutating func remove(_ name: String) -> Bool {
        guard let index = list.firstIndex(where: { $0.name == name }) else { return false }
        list.remove(at: index)
        return true
    }
}
