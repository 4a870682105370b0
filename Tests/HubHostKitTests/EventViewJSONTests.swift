import Foundation
import XCTest

@testable import HubHostKit

/// EventView.json(events:) writes by hand what JSONEncoder with `.sortedKeys` writes for the
/// events' views (`POST /v1/events`' answer): the same bytes, so a client sees no change.
final class EventViewJSONTests: XCTestCase {
    private static func encoded(_ events: [Event]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(events.map { EventView($0) }), as: UTF8.self)
    }

    func testTheBytesAreJSONEncoders() throws {
        let controls = String(decoding: (0..<32).map { UInt8($0) }, as: UTF8.self)
        let texts = ["", "plain", "with \"quotes\" and \\backslash\\", "a/b/c", controls, "é ñ 中文 🎉", "\u{7F}\u{80}", "line\nbreak\ttab"]
        let numbers: [PluginValue] = [
            .int(0), .int(-42), .int(Int64.max), .int(Int64.min), .int(8_999_999_999_999_999), .double(3.25), .double(-0.1),
            .double(0.1 + 0.2), .double(1e300), .double(1e-7), .double(2.5e15), .timeMs(1_402_358_400_000), .bool(true), .bool(false), .null
        ]
        var events: [Event] = []
        for (n, text) in texts.enumerated() {
            var attributes: [Event.Attribute] = [.init(text, .string(text)), .init("Z last", .int(1)), .init("a first", .string("x"))]
            for (k, number) in numbers.enumerated() { attributes.append(.init("value \(k)", number)) }
            var event = Event(
                id: "id/\(n)-\(text)", type: n % 2 == 0 ? .namedEvent : .purchaseSuccessful, name: text,
                timestampMs: 1_402_358_400_000 + Int64(n), attributes: attributes, status: .notPosted, attempts: n)
            if n % 2 == 1 { event.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\(n % 10)" }
            // Written from the event itself, as POST /v1/events answers: JSONEncoder's bytes for its view.
            XCTAssertEqual(String(decoding: EventView.json(events: [event]), as: UTF8.self), try Self.encoded([event]), "text #\(n)")
            events.append(event)
        }
        XCTAssertEqual(String(decoding: EventView.json(events: events), as: UTF8.self), try Self.encoded(events))
        XCTAssertEqual(String(decoding: EventView.json(events: []), as: UTF8.self), "[]")
    }

    /// Attributes written from an event come out sorted by name, and of two with one name the
    /// later, as the view's dictionary writes them; several events are one array.
    func testAnEventsAttributesAreSortedAndTheLaterOfOneNameKept() throws {
        let attributes: [Event.Attribute] = [
            .init("b", .int(1)), .init("a", .string("first")), .init("é", .bool(true)), .init("a", .string("second")), .init("B", .null),
            .init("", .double(0.5)), .init("b", .int(2)), .init("a", .string("third"))
        ]
        let events = (0..<3).map { n in
            Event(
                id: "e\(n)", type: .namedEvent, name: "n", timestampMs: 1_000 * Int64(n), attributes: n == 1 ? [] : attributes,
                status: .notPosted, attempts: 0)
        }
        let written = String(decoding: EventView.json(events: events), as: UTF8.self)
        XCTAssertEqual(written, try Self.encoded(events))
        XCTAssertTrue(written.hasPrefix(#"[{"attempts":0,"attributes":{"":0.5,"B":null,"a":"third","b":2,"é":true},"id":"e0""#), written)
        XCTAssertTrue(written.contains(#""attributes":{},"id":"e1""#), written)
    }

    /// The events that grow the most when written fit the memory sized for them (`jsonByteBound`)
    /// and give JSONEncoder's bytes for their views: every text byte a control character (6 bytes
    /// once escaped), the longest numbers, times outside 0000-9999 (the formatter's longer text), a
    /// traceparent; a number that is not finite is written as null (where JSONEncoder fails).
    func testTheEventsThatGrowTheMostFitTheirBound() throws {
        let control = String(repeating: "\u{01}", count: 50)
        let numbers: [PluginValue] = [
            .double(-1.7976931348623157e308), .double(-2.2250738585072014e-308), .int(Int64.min), .timeMs(Int64.min), .double(.nan), .null
        ]
        let events = [Int64.min, Int64.max, -62_167_219_200_001, 0].enumerated().map { n, time in
            var event = Event(
                id: control, type: .namedEvent, name: control, timestampMs: time,
                attributes: [.init(control, .string(control))] + numbers.enumerated().map { .init("\($0.offset)", $0.element) },
                status: .notPosted, attempts: Int.max)
            event.traceparent = control
            return event
        }
        for count in 0...events.count {
            let some = Array(events.prefix(count))
            let written = EventView.json(events: some)
            XCTAssertLessThanOrEqual(written.count, EventView.jsonByteBound(events: some))
            // JSONEncoder cannot write the NaN: its view is compared with the NaN as null.
            let withNull = some.map { event in
                var event = event
                event.attributes = event.attributes.map { attribute in
                    if case .double(let d) = attribute.value, d.isNaN { return .init(attribute.name, .null) }
                    return attribute
                }
                return event
            }
            XCTAssertEqual(String(decoding: written, as: UTF8.self), try Self.encoded(withNull))
        }
    }
}
