import Foundation

/// An event as the CLI and the HTTP API print it: its id, status and every attribute.
public struct EventView: Encodable, Equatable, Sendable {
    public var id: String
    public var type: String
    public var typeCode: Int
    public var name: String
    public var timestamp: String
    public var timestampMs: Int64
    public var status: String
    public var attempts: Int
    public var attributes: [String: JSONValue]
    public var lastError: String?
    /// The W3C traceparent it was tracked under (its POST's), which its sink sends on; nil when none.
    public var traceparent: String?

    public init(_ event: Event, lastError: String? = nil) {
        id = event.id
        type = event.type.rawValue
        typeCode = event.type.code
        name = event.name
        timestampMs = event.timestampMs
        timestamp = UTCTimestamp.text(ms: event.timestampMs)  // any stored Int64 prints
        status = event.status.rawValue
        attempts = event.attempts
        attributes = Dictionary(event.attributes.map { ($0.name, $0.value.json) }, uniquingKeysWith: { _, b in b })
        self.lastError = lastError
        traceparent = event.traceparent
    }

    public init(_ stored: StoredEvent) {
        self.init(stored.event, lastError: stored.lastError)
    }
}
