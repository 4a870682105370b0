import Foundation
import XCTest

@testable import HubHostKit

/// The hand-written reader of the attributes column gives what JSONDecoder gives: on the text
/// AttributeJSON writes, on what JSONEncoder wrote into older stores, and on any valid JSON of the
/// same shape; what it does not recognise goes to JSONDecoder, errors included.
final class AttributeJSONReaderTests: XCTestCase {
    private func codable(_ text: String) throws -> [Event.Attribute] {
        try JSONDecoder().decode([Event.Attribute].self, from: Data(text.utf8))
    }

    private let samples: [Event.Attribute] = {
        let controls = String(decoding: (1..<32).map { UInt8($0) }, as: UTF8.self)
        return [
            .init("s", .string("quote \" backslash \\ slash / é 中文 😀 \u{7F}")), .init("controls", .string(controls)),
            .init("i", .int(-42)), .init("min", .int(Int64.min)), .init("max", .int(Int64.max)), .init("zero", .int(0)),
            .init("d", .double(0.1)), .init("tiny", .double(1e-300)), .init("big", .double(-1.7976931348623157e+308)), .init("whole", .double(3)),
            .init("b", .bool(true)), .init("f", .bool(false)), .init("t", .timeMs(1_402_358_400_000)), .init("n", .null),
            .init("", .string("")), .init("Mobile User Id", .string("user-7"))
        ]
    }()

    func testTheFastPathReadsWhatAttributeJSONWrites() throws {
        let text = AttributeJSON.encode(samples)
        let fast = try XCTUnwrap(AttributeJSONReader.decode(text), "the store's own format takes the fast path")
        XCTAssertEqual(fast, try codable(text))
        XCTAssertEqual(fast, samples)
        XCTAssertEqual(AttributeJSONReader.decode("[]"), [])
    }

    func testTheFastPathReadsWhatJSONEncoderWroteInOlderStores() throws {
        for formatting: JSONEncoder.OutputFormatting in [[], [.sortedKeys], [.prettyPrinted], [.withoutEscapingSlashes]] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = formatting
            let text = String(decoding: try encoder.encode(samples), as: UTF8.self)
            XCTAssertEqual(try XCTUnwrap(AttributeJSONReader.decode(text), "\(formatting)"), try codable(text), "\(formatting)")
        }
    }

    func testOtherValidShapesMatchJSONDecoder() throws {
        let texts = [
            #"[{"value":{"value":"x","type":"string"},"name":"reversed keys"}]"#,
            #" [ { "name" : "spaced" , "value" : { "type" : "int" , "value" : 7 } } ] "#,
            #"[{"name":"\u00e9\ud83d\ude00\n\/","value":{"type":"string","value":"\u0041\t"}}]"#,
            #"[{"name":"exp","value":{"type":"double","value":1.5e3}},{"name":"neg0","value":{"type":"double","value":-0.0}}]"#,
            #"[{"name":"null with a value","value":{"type":"null","value":5}}]"#
        ]
        for text in texts {
            XCTAssertEqual(try XCTUnwrap(AttributeJSONReader.decode(text), text), try codable(text), text)
        }
    }

    func testWhatItDoesNotRecogniseGoesToJSONDecoder() throws {
        // Not taken by the fast path; decodeOrThrow then answers as JSONDecoder does.
        let unknownType = #"[{"name":"x","value":{"type":"colour","value":"red"}}]"#
        let intWithFraction = #"[{"name":"x","value":{"type":"int","value":3.5}}]"#
        let broken = #"[{"name":"x","value":{"type":"int","value":3}"#
        let loneSurrogate = #"[{"name":"\udc00","value":{"type":"null"}}]"#
        let extraKey = #"[{"name":"x","other":1,"value":{"type":"null"}}]"#
        for text in [unknownType, intWithFraction, broken, loneSurrogate, extraKey, "", "{}", "[1]", "[{}]", #"[{"name":"a"}]"#] {
            XCTAssertNil(AttributeJSONReader.decode(text), text)
            switch (Result { try AttributeJSONReader.decodeOrThrow(text) }, Result { try codable(text) }) {
            case (.success(let mine), .success(let theirs)): XCTAssertEqual(mine, theirs, text)
            case (.failure, .failure): break
            case (let mine, let theirs): XCTFail("\(text): \(mine) but JSONDecoder gives \(theirs)")
            }
        }
    }

    func testTheStoreReadsBackEveryAttributeAsTracked() throws {
        let path = try TestSupport.temporaryFolder(self) + "/events.sqlite"
        let store = try EventStore.open(path: path).store
        let event = Event(type: .namedEvent, name: "ALL TYPES", attributes: samples)
        try store.insert([event])
        XCTAssertEqual(try store.claimDeliverable(limit: 10, nowMs: Clock.wallMs(), leaseUntilMs: Clock.wallMs() + 60_000).first?.attributes, samples)
    }
}
