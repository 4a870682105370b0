import Foundation

/// An event as the CLI and the HTTP API print it: its id, status and every attribute.
package struct EventView: Encodable, Equatable, Sendable {
    package var id: String
    package var type: String
    package var typeCode: Int
    package var name: String
    package var timestamp: String
    package var timestampMs: Int64
    package var status: String
    package var attempts: Int
    package var attributes: [String: JSONValue]
    package var lastError: String?
    /// The W3C traceparent it was tracked under (its POST's), which its sink sends on; nil when none.
    package var traceparent: String?

    package init(_ event: Event, lastError: String? = nil) {
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

    package init(_ stored: StoredEvent) {
        self.init(stored.event, lastError: stored.lastError)
    }
}
