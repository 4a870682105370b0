import Foundation
import GRDB
import Logging
import XCTest

@testable import HubHostKit

/// A claimed event's sink message is written straight from its stored row (CollectorJSON's stored
/// form): the same bytes and user ids as the decoded event's message, for every kind of value and
/// escape; an older row's form goes through the decoded event; a row whose attributes cannot be read
/// is rejected alone, and every other event still goes out.
final class StoredSinkMessageTests: XCTestCase {
    /// Texts that take each path of the copy: plain ASCII, UTF-8, and each character that must be
    /// escaped or is escaped in one form and not the other ("/").
    private static let texts = [
        "", "plain", "Mobile User Id", "Device Id", "a/b", "q\"uote", "back\\slash", "line\nbreak\ttab\r", "\u{01}\u{1F}\u{7F}",
        "é ñ 中文 🎉", "/", "\u{2028}", "user-7"
    ]

    private func value(_ random: inout FuzzRandom) -> PluginValue {
        switch Int.random(in: 0..<9, using: &random) {
        case 0: return .null
        case 1: return .int(Int64.random(in: Int64.min...Int64.max, using: &random))
        case 2: return .int([0, -1, Int64.min, Int64.max][Int.random(in: 0..<4, using: &random)])
        case 3:
            return .double(
                [0, -0.0, 3.25, 1e-7, 1.7976931348623157e308, -2.5e-308, 0.1 + 0.2, .nan, .infinity][Int.random(in: 0..<9, using: &random)])
        case 4: return .bool(Bool.random(using: &random))
        case 5: return .timeMs(Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &random))
        default: return .string(Self.texts[Int.random(in: 0..<Self.texts.count, using: &random)])
        }
    }

    /// The claimed batch of `events` as stored with `attributesJSON` (each event's own stored form by default).
    private func claimed(_ events: [Event], attributesJSON: [String]? = nil) -> EventStore.ClaimedBatch {
        var batch = EventStore.ClaimedBatch()
        for (index, event) in events.enumerated() {
            batch.append(seq: Int64(index + 1), event, attributesJSON: attributesJSON?[index] ?? AttributeJSON.encode(event.attributes))
        }
        return batch
    }

    func testStoredRowsWriteTheDecodedEventsBytesAndUserIDs() throws {
        var random = FuzzRandom(seed: 27)  // the same events on every run
        let events = (0..<2_000).map { n in
            let attributes = (0..<Int.random(in: 0..<7, using: &random)).map { _ in
                Event.Attribute(Self.texts[Int.random(in: 0..<Self.texts.count, using: &random)], value(&random))
            }
            return Event(
                id: "id/\(n)", type: n % 3 == 0 ? .sessionStarted : .namedEvent, name: n % 5 == 0 ? "" : Self.texts[n % Self.texts.count],
                timestampMs: 1_700_000_000_000 + Int64(n), attributes: attributes)
        }
        for start in stride(from: 0, to: events.count, by: 500) {
            let batch = claimed(Array(events[start..<start + 500]))
            // Every row takes the stored form (none falls back to the decoded event).
            for index in batch.events.indices {
                var out: [UInt8] = []
                XCTAssertNotNil(CollectorJSON.appendEvent(index, of: batch, nameField: "Event/Name", to: &out), "event \(start + index)")
            }
            let messages = PreparedSinkMessages.build(batch, nameField: "Event/Name")
            XCTAssertTrue(messages.unreadable.isEmpty)
            // What the store hands back decoded (a double that is not finite is stored as null).
            let expected = try batch.events.indices.map { EventDelivery.sinkEvent(try batch.event(at: $0), nameField: "Event/Name") }
            for (index, (message, wanted)) in zip(messages.batch.events, expected).enumerated() {
                XCTAssertEqual(String(decoding: message.json, as: UTF8.self), String(decoding: wanted.json, as: UTF8.self), "event \(start + index)")
                XCTAssertEqual(message, wanted, "event \(start + index)")
            }
            XCTAssertEqual(messages.batch.count, expected.count)
            // The body is the collector's, byte for byte.
            XCTAssertEqual(messages.batch.body, Array(HTTPCollectorSink.body(expected.map(\.json))))
        }
    }

    /// The rows that grow the most when written out fit the memory sized for them, and still give
    /// the decoded event's bytes: every byte a control character (6 bytes each once escaped), and
    /// the values stored shortest against written longest (a time of 0 or past the year 9999, a
    /// double stored as `1`, a null), in the name field, the name, the id and the attributes.
    func testRowsThatGrowTheMostWhenWrittenFitTheirBound() throws {
        let control = String(repeating: "\u{01}", count: 40)
        let times: [Int64] = [0, 1, -1, Int64.max, Int64.min, 253_402_300_800_000, -62_135_596_800_001]
        let attributes =
            times.enumerated().map { Event.Attribute(String($0.offset), .timeMs($0.element)) }
            + [.init("", .null), .init(control, .string(control)), .init("d", .double(1)), .init("/", .string("/"))]
        let events = times.map { time in
            Event(id: control, type: .namedEvent, name: control, timestampMs: time, attributes: attributes)
        }
        var forms = events.map { AttributeJSON.encode($0.attributes) }
        forms[0] = forms[0].replacingOccurrences(of: #""type":"double","value":1.0"#, with: #""type":"double","value":1"#)
        XCTAssertTrue(forms[0].contains(#""value":1}"#), "the double is stored as its shortest token")
        let batch = claimed(events, attributesJSON: forms)
        let messages = PreparedSinkMessages.build(batch, nameField: control)
        XCTAssertTrue(messages.unreadable.isEmpty)
        for index in batch.events.indices {
            var out: [UInt8] = []
            XCTAssertNotNil(CollectorJSON.appendEvent(index, of: batch, nameField: control, to: &out), "event \(index)")
            let wanted = EventDelivery.sinkEvent(try batch.event(at: index), nameField: control)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(decoding: wanted.json, as: UTF8.self), "event \(index)")
            XCTAssertEqual(messages.batch.events[index], wanted, "event \(index)")
        }
    }

    /// Rows written by JSONEncoder (keys in its order), with whitespace, or with a number the copy
    /// does not read: the message is the decoded event's.
    func testOtherFormsOfTheColumnGoThroughTheDecodedEvent() throws {
        let event = Event(
            id: "e1", type: .namedEvent, name: "PLAY", timestampMs: 1_700_000_000_000,
            attributes: [.init("Mobile User Id", .string("u/1")), .init("Level", .int(3)), .init("At", .timeMs(5))])
        let forms = [
            String(decoding: try JSONEncoder().encode(event.attributes), as: UTF8.self),
            " " + AttributeJSON.encode(event.attributes),
            AttributeJSON.encode(event.attributes).replacingOccurrences(of: #""value":3"#, with: #""value":3.0"#)
        ]
        let expected = EventDelivery.sinkEvent(event, nameField: "Event Name")
        let batch = claimed(Array(repeating: event, count: forms.count), attributesJSON: forms)
        var out: [UInt8] = []
        XCTAssertNil(CollectorJSON.appendEvent(1, of: batch, nameField: "Event Name", to: &out), "whitespace is not the stored form")
        XCTAssertEqual(out, [], "nothing is left of a form that was not read")
        let messages = PreparedSinkMessages.build(batch, nameField: "Event Name")
        XCTAssertEqual(messages.batch.events, Array(repeating: expected, count: forms.count))
    }

    /// A row's type and status are found from their bytes: every case, and nothing else.
    func testTypesAndStatusesAreFoundByTheirBytes() {
        func find<T>(_ table: RawTextTable<T>, _ text: String) -> T? {
            var text = text
            return text.withUTF8 { table.value($0) }
        }
        for type in EventType.allCases { XCTAssertEqual(find(EventStore.storedTypes, type.rawValue), type) }
        for status in EventStatus.allCases { XCTAssertEqual(find(EventStore.storedStatuses, status.rawValue), status) }
        for text in ["", "named_even", "named_eventx", "NAMED_EVENT", "NOT_POSTE", "not_posted"] {
            XCTAssertNil(find(EventStore.storedTypes, text), text)
            XCTAssertNil(find(EventStore.storedStatuses, text), text)
        }
    }

    /// One byte of 0x80 or more anywhere (the word-at-a-time part, the tail) makes a text non-ASCII.
    func testASCIICheckFindsAHighByteAtEveryPosition() {
        for count in 0..<20 {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: count)
            XCTAssertTrue(plain.withUnsafeBufferPointer(EventStore.ClaimedBatch.isASCII), "\(count)")
            for position in 0..<count {
                var high = plain
                high[position] = 0x80
                XCTAssertFalse(high.withUnsafeBufferPointer(EventStore.ClaimedBatch.isASCII), "\(count), \(position)")
            }
        }
    }

    /// Bytes that are not UTF-8 in a row are repaired as a String read of the row repairs them.
    func testTextThatIsNotUTF8IsRepaired() throws {
        var batch = EventStore.ClaimedBatch()
        let name: [UInt8] = Array("caf".utf8) + [0xE9]  // Latin-1 é: not UTF-8
        let attributes = Array(#"[{"name":"k","value":{"type":"string","value":"x"#.utf8) + [0xFF] + Array(#""}}]"#.utf8)
        let id = Array("id-1".utf8)
        id.withUnsafeBufferPointer { id in
            name.withUnsafeBufferPointer { name in
                attributes.withUnsafeBufferPointer { attributes in
                    batch.append(
                        seq: 1, id: id, type: .namedEvent, name: name, timestampMs: 0, attributesJSON: attributes, status: .notPosted,
                        attempts: 0)
                }
            }
        }
        let decoded = Event(
            id: "id-1", type: .namedEvent, name: "caf\u{FFFD}", timestampMs: 0, attributes: [.init("k", .string("x\u{FFFD}"))])
        XCTAssertEqual(try batch.event(at: 0), decoded)
        XCTAssertEqual(
            PreparedSinkMessages.build(batch, nameField: "Event Name").batch.events, [EventDelivery.sinkEvent(decoded, nameField: "Event Name")])
    }

    /// The sink answers for the events it gets, the unreadable one is rejected in its place: each
    /// outcome lands on its own event (the sink rejects the event after the unreadable one).
    func testAnUnreadableRowIsRejectedAloneAndTheOthersGoOut() throws {
        let path = try TestSupport.temporaryFolder(self) + "/events.sqlite"
        let store = try EventStore.open(path: path).store
        let events = (0..<5).map { Event(type: .namedEvent, name: "E\($0)", timestampMs: 1_700_000_000_000 + Int64($0)) }
        try store.insert(events)
        try store.pool.write { db in
            try db.execute(sql: "UPDATE events SET attributes = 'not json' WHERE id = ?", arguments: [events[2].id])
        }
        let refused = events[3].id
        let sink = DeliveryPipelineTests.RecordingSink { _, given in
            .answered(given.map { $0.idempotencyKey == refused ? .rejected(reason: "the sink refuses it") : .delivered })
        }
        let settings = EventSettings(values: ["retry_base_delay": .double(60), "max_num_retries": .int(3), "post_timeout": .double(30)])
        let delivery = EventDelivery(settings: settings, store: store, sink: sink, logger: Logger(label: "stored-message-test"))
        let report = delivery.flush()
        XCTAssertEqual(report.posted, 3, "\(report)")
        XCTAssertEqual(report.failed, 2, "\(report)")
        XCTAssertEqual(sink.batches.flatMap { $0 }, events.map(\.id).filter { $0 != events[2].id })
        XCTAssertEqual(try store.count(status: .successfullyPosted), 3)
        func row(_ id: String) throws -> Row? {
            try store.pool.read { db in try Row.fetchOne(db, sql: "SELECT status, last_error FROM events WHERE id = ?", arguments: [id]) }
        }
        let unreadable = try row(events[2].id)
        XCTAssertEqual(unreadable?["status"], EventStatus.failedPost.rawValue)
        XCTAssertTrue((unreadable?["last_error"] as String?)?.contains("cannot be read") == true, "\(String(describing: unreadable))")
        let rejected = try row(refused)
        XCTAssertEqual(rejected?["status"], EventStatus.failedPost.rawValue)
        XCTAssertEqual(rejected?["last_error"], "the sink refuses it")
    }
}
