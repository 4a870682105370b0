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
    public var attributes: [(name: String, value: PluginValue)]

    /// An event with these fields; `timeMs` in milliseconds since 1970.
    public init(id: String, typeCode: Int32, name: String, timeMs: Int64, attributes: [(name: String, value: PluginValue)] = []) {
        self.id = id
        self.typeCode = typeCode
        self.name = name
        self.timeMs = timeMs
        self.attributes = attributes
    }

    /// The value of the first attribute named exactly `name`; nil when there is none.
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

    /// Removes the first attribute named exactly `name`; false when there was none.
    public mutating func remove(_ name: String) -> Bool {
        guard let index = attributes.firstIndex(where: { $0.name == name }) else { return false }
        attributes.remove(at: index)
        return true
    }
}
