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
