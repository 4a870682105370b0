import Foundation

/// One tracked event: type, name, time, typed attributes, user identifiers and the core values
/// (device, OS, app) that hubhost fills in from its configuration. Values the caller gives take
/// precedence over the values hubhost fills in.
public struct Event: Codable, Equatable, Sendable {
    /// One named, typed attribute of an event.
    public struct Attribute: Codable, Equatable, Sendable {
        /// The attribute's name, e.g. "Event Name".
        public var name: String
        /// The attribute's typed value (string, int, double, bool, time or null).
        public var value: PluginValue

        /// An attribute named `name` with `value`.
        public init(_ name: String, _ value: PluginValue) {
            self.name = name
            self.value = value
        }
    }

    /// hubhost's id for the event, also its idempotency key at the collector.
    public var id: String
    /// The event's type; its wire code is `type.code`.
    public var type: EventType
    /// The event's name ("PLAYER LOADED"); sent as the "Event Name" attribute.
    public var name: String
    /// When the event happened, in ms since 1970 (UTC).
    public var timestampMs: Int64
    /// The attributes in order; names are unique when set through `set` and `fill`.
    public var attributes: [Attribute]
    /// The delivery status (NOT_POSTED for a new event).
    public var status: EventStatus
    /// Delivery attempts so far.
    public var attempts: Int
    /// The W3C traceparent the event was tracked under (the `traceparent` of its POST /v1/events,
    /// or of hubhost's span for that request when tracing is on); nil when none. Kept with the
    /// event and sent on by its sink, so the consumer joins the trace.
    public var traceparent: String?

    /// An event to track; `id` defaults to a new unique id and `timestampMs` to now.
    public init(
        id: String = EventID.make(), type: EventType, name: String = "",
        timestampMs: Int64 = Clock.wallMs(), attributes: [Attribute] = [], status: EventStatus = .notPosted, attempts: Int = 0,
        traceparent: String? = nil
    ) {
        self.id = id
        self.type = type
        self.name = name
        self.timestampMs = timestampMs
        self.attributes = attributes
        self.status = status
        self.attempts = attempts
        self.traceparent = traceparent
    }

    /// The value of the first attribute named `name`, or nil.
    public subscript(attribute name: String) -> PluginValue? {
        attributes.first { $0.name == name }?.value
    }

    /// Sets an attribute, replacing one of the same name in place.
    public mutating func set(_ name: String, _ value: PluginValue) {
        if let index = attributes.firstIndex(where: { $0.name == name }) {
            attributes[index].value = value
        } else {
            attributes.append(Attribute(name, value))
        }
    }

    /// Sets an attribute only when the caller did not give one: hubhost's values never override the caller's.
    public mutating func fill(_ name: String, _ value: PluginValue) {
        if self[attribute: name] == nil { attributes.append(Attribute(name, value)) }
    }

    /// The event as a plugin sees it, sharing this event's attributes: the edit session copies
    /// them (with room for the plugin's own) at its first edit, and only then.
    var augmentable: AugmentableEvent {
        AugmentableEvent(id: id, typeCode: Int32(type.code), name: name, timeMs: timestampMs, list: attributes)
    }
}

extension PluginValue: Codable {
    enum CodingKeys: String, CodingKey { case type, value }

    /// Decodes `{"type": "string"|"int"|"double"|"bool"|"time"|"null", "value": ...}`; throws
    /// DecodingError for an unknown type.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "null": self = .null
        case "string": self = .string(try container.decode(String.self, forKey: .value))
        case "int": self = .int(try container.decode(Int64.self, forKey: .value))
        case "double": self = .double(try container.decode(Double.self, forKey: .value))
        case "bool": self = .bool(try container.decode(Bool.self, forKey: .value))
        case "time": self = .timeMs(try container.decode(Int64.self, forKey: .value))
        case let other:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container,
                debugDescription: "unknown value type '\(other)' (expected string, int, double, bool, time or null)")
        }
    }

    /// Encodes as `{"type": ..., "value": ...}` (no `value` for null).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(typeName, forKey: .type)
        switch self {
        case .null: break
        case .string(let s): try container.encode(s, forKey: .value)
        case .int(let i): try container.encode(i, forKey: .value)
        case .double(let d): try container.encode(d, forKey: .value)
        case .bool(let b): try container.encode(b, forKey: .value)
        case .timeMs(let t): try container.encode(t, forKey: .value)
        }
    }
}
