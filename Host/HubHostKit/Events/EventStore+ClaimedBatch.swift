import Foundation

extension EventStore {
    /// A claimed batch: its events in tracked (seq) order, their seqs, and the lease holding them
    /// (nil when nothing was claimed). Each event's id, name and attributes are ranges of one
    /// buffer, `text`, copied from the rows as SQLite holds them: a claim of a thousand rows makes
    /// no String (nor frees one) per row, and the sink messages are written straight from the
    /// stored attributes (CollectorJSON's stored form), never decoded.
    struct ClaimedBatch {
        /// One claimed event; its texts are ranges of the batch's `text`.
        struct ClaimedEvent {
            var id: Range<Int>
            var name: Range<Int>
            /// The attributes column as stored (AttributeJSON's text, or an older row's JSONEncoder form).
            var attributesJSON: Range<Int>
            var type: EventType
            var status: EventStatus
            var timestampMs: Int64
            var attempts: Int
            /// The W3C traceparent it was tracked under; nil for most events (no String is made then).
            var traceparent: String?
        }

        /// Every event's id, name and attributes JSON, back to back: valid UTF-8, as the store holds it.
        private(set) var text: [UInt8] = []
        private(set) var events: [ClaimedEvent] = []
        private(set) var seqs: [Int64] = []
        var lease: Int64?

        init() {}

        /// Room for `count` events of about `bytesPerEvent` bytes of text each.
        mutating func reserve(_ count: Int, bytesPerEvent: Int = 512) {
            events.reserveCapacity(count)
            seqs.reserveCapacity(count)
            text.reserveCapacity(count * bytesPerEvent)
        }

        /// Appends a row read from the store; its bytes are copied.
        mutating func append(
            seq: Int64, id: UnsafeBufferPointer<UInt8>, type: EventType, name: UnsafeBufferPointer<UInt8>, timestampMs: Int64,
            attributesJSON: UnsafeBufferPointer<UInt8>, status: EventStatus, attempts: Int, traceparent: String? = nil
        ) {
            func copy(_ bytes: UnsafeBufferPointer<UInt8>) -> Range<Int> {
                let start = text.count
                if Self.isASCII(bytes) || String(validating: bytes, as: UTF8.self) != nil {
                    text.append(contentsOf: bytes)
                } else {
                    // Bytes that are not UTF-8 (a damaged file) are repaired as a String read of the row repairs them.
                    text.append(contentsOf: String(decoding: bytes, as: UTF8.self).utf8)
                }
                return start..<text.count
            }
            events.append(
                ClaimedEvent(
                    id: copy(id), name: copy(name), attributesJSON: copy(attributesJSON), type: type, status: status, timestampMs: timestampMs,
                    attempts: attempts, traceparent: traceparent))
            seqs.append(seq)
        }

        /// Appends `event` as the store would hold it, its attributes column `attributesJSON`.
        mutating func append(seq: Int64, _ event: Event, attributesJSON: String) {
            var id = event.id
            var name = event.name
            var attributes = attributesJSON
            id.withUTF8 { id in
                name.withUTF8 { name in
                    attributes.withUTF8 { attributes in
                        append(
                            seq: seq, id: id, type: event.type, name: name, timestampMs: event.timestampMs, attributesJSON: attributes,
                            status: event.status, attempts: event.attempts, traceparent: event.traceparent)
                    }
                }
            }
        }

        /// Whether every byte is below 0x80, read eight at a time: every claimed row's text passes
        /// here, and the usual row is ASCII.
        static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            guard let base = bytes.baseAddress else { return true }
            let raw = UnsafeRawPointer(base)
            var seen: UInt64 = 0
            var at = 0
            while at + 8 <= bytes.count {
                seen |= raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)
                at += 8
            }
            while at < bytes.count {
                seen |= UInt64(base[at])
                at += 1
            }
            return seen & 0x8080_8080_8080_8080 == 0
        }

        func string(_ range: Range<Int>) -> String { String(decoding: text[range], as: UTF8.self) }

        /// The events' ids, in order.
        var ids: [String] { events.map { string($0.id) } }

        /// The event at `index` with its attributes decoded; throws when the stored text is not attributes.
        func event(at index: Int) throws -> Event {
            let claimed = events[index]
            return Event(
                id: string(claimed.id), type: claimed.type, name: string(claimed.name), timestampMs: claimed.timestampMs,
                attributes: try AttributeJSONReader.decodeOrThrow(string(claimed.attributesJSON)), status: claimed.status,
                attempts: claimed.attempts, traceparent: claimed.traceparent)
        }
    }
}
