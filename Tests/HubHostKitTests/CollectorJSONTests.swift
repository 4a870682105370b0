import Foundation
import XCTest

@testable import HubHostKit

/// CollectorJSON writes by hand what JSONSerialization (sorted keys) and ISO8601DateFormatter wrote
/// before it: the same bytes, so a collector sees no change.
final class CollectorJSONTests: XCTestCase {
    /// The event object as it was built before: a dictionary through JSONSerialization.
    private func reference(_ event: Event, nameField: String) throws -> Data {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        func iso(_ ms: Int64) -> String { formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)) }
        var attributes: [[String: String]] = []
        if !event.name.isEmpty { attributes.append(["name": nameField, "value": event.name]) }
        for attribute in event.attributes {
            let text: String
            switch attribute.value {
            case .timeMs(let ms): text = iso(ms)
            case .null: text = ""
            default: text = attribute.value.description
            }
            attributes.append(["name": attribute.name, "value": text])
        }
        let object: [String: Any] = [
            "eventTypeCode": String(event.type.code), "eventTimestamp": iso(event.timestampMs),
            "idempotencyKey": event.id, "attributes": attributes
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    func testTheBytesAreJSONSerializations() throws {
        let controls = String(decoding: (0..<32).map { UInt8($0) }, as: UTF8.self)
        let texts = ["", "plain", "with \"quotes\" and \\backslash\\", "a/b/c", controls, "é ñ 中文 🎉", "\u{7F}\u{80}", "line\nbreak\ttab"]
        for (n, text) in texts.enumerated() {
            let times: [Int64] = [0, 1_402_358_400_000, 1_402_358_400_001, 1_402_358_400_999, 1_700_000_000_123, 3_999_999_999_999, 86_399_999]
            for time in times {
                let event = Event(
                    id: "id/\(n)-\(text)", type: n % 2 == 0 ? .namedEvent : .sessionStarted, name: n == 0 ? "" : text,
                    timestampMs: time,
                    attributes: [
                        .init(text, .string(text)), .init("i", .int(-42)), .init("d", .double(3.25)), .init("b", .bool(true)),
                        .init("t", .timeMs(time)), .init("n", .null)
                    ])
                let mine = CollectorJSON.event(event, nameField: "Event/Name")
                XCTAssertEqual(
                    String(decoding: mine, as: UTF8.self), String(decoding: try reference(event, nameField: "Event/Name"), as: UTF8.self),
                    "text #\(n), time \(time)")
            }
        }
    }

    /// Times written digit by digit match the formatter's from 1970 to 2096 (its edges, a leap day
    /// and 2,000 times spread over it; the formatter takes a Double of seconds, exact to the
    /// millisecond that far), as text and appended; the range's far end is checked as text.
    func testTimesMatchTheFormatter() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        let times: [Int64] =
            [0, 1, 951_782_400_000, 3_999_999_999_999] + (0..<2_000).map { _ in Int64.random(in: 0...3_999_999_999_999, using: &generator) }
        for time in times {
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(time) / 1000))
            XCTAssertEqual(CollectorJSON.isoTime(time), expected, "\(time)")
            var bytes: [UInt8] = []
            CollectorJSON.isoTime(time, into: &bytes)
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self), expected, "\(time)")
        }
        XCTAssertEqual(CollectorJSON.isoTime(951_782_400_000), "2000-02-29T00:00:00.000Z")
        XCTAssertEqual(CollectorJSON.isoTime(SafeTime.validMs.upperBound), "9999-12-31T23:59:59.999Z")
    }
}
