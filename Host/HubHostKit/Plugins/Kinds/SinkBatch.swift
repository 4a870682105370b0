import Foundation

/// A batch of sink messages laid out for sending: `body` is the HTTP collector's request body as it
/// is posted (`{"events":[...]}`), each event's JSON object a span of it, and `fields` holds each
/// event's idempotency key and user ids back to back. A plugin's hh_sink_event_t views point into
/// these two blocks, so building, posting or handing over a batch allocates per batch, never per
/// event: a Data per message and the copies into a body and a block were most of the host's work
/// per delivered event.
package struct SinkBatch: Sendable, Equatable {
    /// Where one event's parts are.
    package struct Entry: Sendable, Equatable {
        /// Its collector JSON object, in `body`.
        package var json: Range<Int>
        /// Its idempotency key and user ids, in `fields`.
        package var idempotencyKey: Range<Int>
        package var mobileUserID: Range<Int>
        package var anonymousID: Range<Int>
        package var typeCode: Int32
        package var timeMs: Int64
    }

    /// `{"events":[e0,e1,...]}`, whole at every moment.
    package private(set) var body: [UInt8] = Array(#"{"events":[]}"#.utf8)
    package private(set) var fields: [UInt8] = []
    package private(set) var entries: [Entry] = []
    /// The W3C traceparent of each event that has one, by its index (most have none: then this
    /// stays empty and costs nothing). Sinks send it on (HTTP header, Kafka and NATS message header).
    package private(set) var traceparents: [Int: String] = [:]

    package init() {}

    /// The batch of `events`, in order.
    package init(_ events: [SinkEvent]) {
        reserve(events.count, bytesPerEvent: events.first.map { $0.json.count + 64 } ?? 0)
        for event in events { append(event) }
    }

    package var count: Int { entries.count }
    package var isEmpty: Bool { entries.isEmpty }

    /// Room for `count` events of about `bytesPerEvent` bytes of JSON each.
    package mutating func reserve(_ count: Int, bytesPerEvent: Int) {
        entries.reserveCapacity(count)
        body.reserveCapacity(body.count + count * (bytesPerEvent + 1))
        fields.reserveCapacity(count * 48)
    }

    package mutating func append(_ event: SinkEvent) {
        _ = append(idempotencyKey: event.idempotencyKey, typeCode: event.typeCode, timeMs: event.timeMs) { body in
            body.append(contentsOf: event.json)
            return (event.mobileUserID, event.anonymousID)
        }
    }

    /// Appends one event whose JSON object `writeJSON` appends to the body it is given, answering
    /// the event's user ids; when it answers nil, the batch is left as it was and this returns false.
    package mutating func append(
        idempotencyKey: String, typeCode: Int32, timeMs: Int64,
        writeJSON: (inout [UInt8]) -> (mobileUserID: String, anonymousID: String)?
    ) -> Bool {
        var key = idempotencyKey
        return key.withUTF8 { append(idempotencyKey: $0, typeCode: typeCode, timeMs: timeMs, writeJSON: writeJSON) }
    }

    /// The same with the key as UTF-8 bytes.
    mutating func append(
        idempotencyKey: UnsafeBufferPointer<UInt8>, typeCode: Int32, timeMs: Int64,
        writeJSON: (inout [UInt8]) -> (mobileUserID: String, anonymousID: String)?
    ) -> Bool {
        body.removeLast(2)  // "]}"
        let mark = body.count
        if !entries.isEmpty { body.append(UInt8(ascii: ",")) }
        let start = body.count
        guard let users = writeJSON(&body) else {
            body.removeSubrange(mark...)
            body.append(contentsOf: "]}".utf8)
            return false
        }
        let json = start..<body.count
        body.append(UInt8(ascii: "]"))
        body.append(UInt8(ascii: "}"))
        // Through the UTF-8 buffer: a user id is usually a small String (up to 15 bytes, kept
        // inline), whose UTF-8 view was appended byte by byte.
        func field(_ text: String) -> Range<Int> {
            let start = fields.count
            var text = text
            text.withUTF8 { fields.append(contentsOf: $0) }
            return start..<fields.count
        }
        let keyStart = fields.count
        fields.append(contentsOf: idempotencyKey)
        entries.append(
            Entry(
                json: json, idempotencyKey: keyStart..<fields.count, mobileUserID: field(users.mobileUserID),
                anonymousID: field(users.anonymousID), typeCode: typeCode, timeMs: timeMs))
        return true
    }

    /// Gives event `index` `traceparent`; an index outside the batch changes nothing.
    package mutating func setTraceparent(_ traceparent: String, at index: Int) {
        guard entries.indices.contains(index) else { return }
        traceparents[index] = traceparent
    }

    /// Gives the event appended last `traceparent` (nothing for nil).
    package mutating func setTraceparentOfLast(_ traceparent: String?) {
        guard let traceparent, !entries.isEmpty else { return }
        traceparents[entries.count - 1] = traceparent
    }

    /// The traceparent of the first event that has one: the parent of the batch's delivery span,
    /// and the header of a sink that sends the batch as one request.
    package var firstTraceparent: String? {
        traceparents.isEmpty ? nil : traceparents.min { $0.key < $1.key }?.value
    }

    /// The batch as separate messages, for a sink that takes them one by one.
    package var events: [SinkEvent] {
        entries.map { entry in
            SinkEvent(
                idempotencyKey: text(entry.idempotencyKey), typeCode: entry.typeCode, timeMs: entry.timeMs, json: Data(body[entry.json]),
                mobileUserID: text(entry.mobileUserID), anonymousID: text(entry.anonymousID))
        }
    }

    private func text(_ range: Range<Int>) -> String { String(decoding: fields[range], as: UTF8.self) }
}
