import XCTest

@testable import HubHostKit
@testable import HubHostTools

/// `EventInput.parseCommonShape` (the bytes read directly) against `EventInput.parseGeneral`
/// (JSONSerialization): whatever the common-shape reader reads, the general reader reads to the
/// same events; whatever the general reader refuses, the common-shape reader leaves to it.
final class EventInputCommonShapeTests: XCTestCase {
    /// Both readers on `text`; `fast` says whether the common-shape reader should read it itself.
    private func assertAgree(_ text: String, fast expected: Bool? = nil, file: StaticString = #filePath, line: UInt = #line) {
        let data = Data(text.utf8)
        let fast = EventInput.parseCommonShape(data)
        if let expected { XCTAssertEqual(fast != nil, expected, "common-shape reader on \(text)", file: file, line: line) }
        guard let fast else { return }
        let general: [Event]
        do {
            general = try EventInput.parseGeneral(data)
        } catch {
            XCTFail("the common-shape reader read what the general reader refuses (\(error)): \(text)", file: file, line: line)
            return
        }
        XCTAssertEqual(fast.count, general.count, text, file: file, line: line)
        for (mine, theirs) in zip(fast, general) {
            XCTAssertEqual(mine.type, theirs.type, text, file: file, line: line)
            XCTAssertEqual(mine.name, theirs.name, text, file: file, line: line)
            XCTAssertEqual(mine.attributes, theirs.attributes, text, file: file, line: line)
            XCTAssertEqual(mine.status, theirs.status, text, file: file, line: line)
            // An id or timestamp not given is made anew by each reader (a new id, now).
            if mine.id != theirs.id {
                XCTAssertFalse(
                    text.contains("\"\(mine.id)\"") || text.contains("\"\(theirs.id)\""), "id given but not kept: \(text)", file: file, line: line)
            }
            if mine.timestampMs != theirs.timestampMs {  // each reader's "now", a millisecond apart at most
                XCTAssertFalse(
                    text.contains(String(mine.timestampMs)) || text.contains(String(theirs.timestampMs)),
                    "timestamp given but not kept: \(text)", file: file, line: line)
                XCTAssertLessThan(abs(mine.timestampMs - theirs.timestampMs), 60_000, text, file: file, line: line)
            }
        }
    }

    func testTheUsualBodiesAreReadDirectly() {
        // The body `bench ingest` sends, and the README's example without the typed attribute.
        assertAgree(#"{"type":"named_event","name":"PLAYER LOADED","attributes":{"Level":3,"Mode":"arcade","Score":12.5}}"#, fast: true)
        assertAgree(
            #" {"type": "named_event", "name": "PLAYER LOADED", "timestamp": 1402358400000, "id": "e-1","#
                + #"  "attributes": {"Premium": true, "Mode": "arcade", "Level": -3, "Score": 12.0, "Gone": null}} "#, fast: true)
        assertAgree("[\n{\"type\":\"app_start\"},\t{\"name\":\"B\",\"attributes\":{}}\r\n]", fast: true)
        assertAgree(#"{"type":"APP-START","name":"x"}"#, fast: true)
        assertAgree("{}", fast: true)
    }

    func testWhatTheGeneralReaderMustReadIsLeftToIt() {
        for text in [
            #"{"name":"caf\u00e9"}"#, "{\"name\":\"é\"}", #"{"name":"a\"b"}"#,  // escapes, non-ASCII
            #"{"type":17}"#, #"{"timestamp":"2014-06-10T00:00:00.000Z"}"#, #"{"timestamp":1.5}"#,  // other forms
            #"{"attributes":{"n":1e3}}"#, #"{"attributes":{"n":-0}}"#, #"{"attributes":{"n":007}}"#,
            #"{"attributes":{"n":1234567890123456789}}"#, #"{"attributes":{"t":{"type":"int","value":5}}}"#,
            #"{"attributes":{"l":[1]}}"#, #"{"events":[{"name":"a"}]}"#,
            #"{"type":"purchase_successful","purchase":{"amount":5,"currency_code":"USD"}}"#,
            #"{"name":"a","name":"b"}"#, #"{"attributes":{"a":1,"a":2}}"#,  // a key twice
            #"{"attributes":{"a":1,"b":2,"a":3}}"#, #"{"attributes":{"\u00e9":1,"e\u0301":2}}"#, #"{"type":"named_event","type":"named_event"}"#,
            #"{"bogus":1}"#, "[]", "[1]", "\"text\"", "", "{", #"{"name":"a"} x"#, #"{"name":"a",}"#,  // refusals
            #"{"type":"nope"}"#, #"{"timestamp":253402300800000}"#, #"{"timestamp":-1}"#,
            "{\"id\":\"\(String(repeating: "i", count: 129))\"}"
        ] {
            assertAgree(text, fast: false)
        }
    }

    /// 3,000 generated inputs from a fixed seed: keys and values of every kind (known and unknown
    /// keys, good and bad values, numbers in every form, escapes, non-ASCII), whitespace between
    /// tokens, lists, trailing bytes. Both readers must agree on each.
    func testGeneratedInputsAgree() {
        var random = SplitMix(seed: 0x5EED_C0DE)
        let typeValues = [#""named_event""#, #""app-start""#, #""APP_START""#, "17", #""nope""#, "null", #""purchase_successful""#, #""custom""#]
        let textValues = [
            #""PLAYER LOADED""#, #""""#, #""caf\u00e9""#, "\"é\"", "null", "3", #""tab\there""#, "\"\(String(repeating: "n", count: 300))\""
        ]
        let idValues = [#""abc""#, #""""#, "\"\(String(repeating: "i", count: 129))\"", "\"\(String(repeating: "i", count: 128))\"", #""x\"y""#, "5"]
        let timestampValues = [
            "1402358400000", "-1", "0", "253402300799999", "253402300800000", "1.5", "1e12", #""2014-06-10T00:00:00.000Z""#,
            "9223372036854775807", "-0", "00", #""1402358400000""#
        ]
        let attributeNames = ["Level", "Mode", "a", "B", "é", "x y", "Level", "", "a\\u0062"]
        let attributeValues = [
            "3", "-3", "0", "12.5", "12.0", "-0.5", "123456789.012345", "-0", "1e3", "1234567890.123456", "1E-2", "007", "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808", "123456789012345678", "1234567890123456789", "0.1000000000000000055511151231257827",
            "true", "false", "null", #""arcade""#, #""""#, #""a\nb""#, "\"ü\"", "[1]", #"{"type":"int","value":5}"#, "-", "1.", "tru",
            #""unterminated"#
        ]
        func space() -> String { ["", "", " ", "\n", "\t", "  \r\n"][random.below(6)] }
        func attributes() -> String {
            let count = random.below(5)
            let pairs = (0..<count).map { _ in
                "\"\(random.pick(attributeNames, good: 4))\"\(space()):\(space())\(random.pick(attributeValues, good: 7))"
            }
            return "{\(space())" + pairs.joined(separator: "\(space()),\(space())") + "\(space())}"
        }
        func event() -> String {
            var pairs: [String] = []
            for key in ["type", "name", "id", "timestamp", "attributes", "purchase", "bogus"].shuffled(using: &random) where random.below(3) > 0 {
                let value: String
                switch key {
                case "type": value = random.pick(typeValues, good: 3)
                case "name": value = random.pick(textValues, good: 2)
                case "id": value = random.pick(idValues, good: 2)
                case "timestamp": value = random.pick(timestampValues, good: 4)
                case "attributes": value = random.below(8) == 0 ? "[]" : attributes()
                case "purchase":
                    guard random.below(4) == 0 else { continue }
                    value = #"{"amount":5,"currency_code":"USD"}"#
                default:
                    guard random.below(6) == 0 else { continue }
                    value = "1"
                }
                pairs.append("\"\(key)\"\(space()):\(space())\(value)")
            }
            if random.below(20) == 0, let first = pairs.first { pairs.append(first) }  // a key twice
            return "{\(space())" + pairs.joined(separator: "\(space()),\(space())") + "\(space())}"
        }
        var read = 0
        for _ in 0..<3_000 {
            var text: String
            switch random.below(6) {
            case 0: text = "[" + (0..<random.below(4)).map { _ in event() }.joined(separator: ",\(space())") + "]"
            case 1: text = #"{"events":["# + event() + "]}"
            default: text = event()
            }
            text = space() + text + space()
            if random.below(30) == 0 { text += "x" }
            if random.below(30) == 0 { text = String(text.dropLast(max(1, random.below(4)))) }
            if EventInput.parseCommonShape(Data(text.utf8)) != nil { read += 1 }
            assertAgree(text)
        }
        // Both branches were taken often enough for the comparison to mean something.
        XCTAssertGreaterThan(read, 150, "the common-shape reader read too few of the generated inputs")
        XCTAssertLessThan(read, 2_850, "the common-shape reader gave up on too few of the generated inputs")
    }

    /// An event type is read from its name (the default first), a dashed or upper-case spelling,
    /// or its code; anything else is no type.
    func testEventTypesAreReadFromNamesSpellingsAndCodes() {
        for type in EventType.allCases {
            XCTAssertEqual(EventType(text: type.rawValue), type)
            XCTAssertEqual(EventType(text: type.rawValue.uppercased().replacingOccurrences(of: "_", with: "-")), type)
        }
        XCTAssertEqual(EventType(text: "17"), .namedEvent)
        XCTAssertEqual(EventType(text: "13"), .sessionStarted)
        for text in ["", "named_event ", "named", "named__event", "18", "1e1"] { XCTAssertNil(EventType(text: text), text) }
    }
}

/// The draws the generated inputs need, over HubHostTools' seeded SplitMix (a failure reproduces).
extension SplitMix {
    fileprivate mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    /// Half the time one of the first `good` entries (values the common-shape reader reads), so
    /// that both readers' branches are taken often.
    fileprivate mutating func pick(_ list: [String], good: Int? = nil) -> String {
        if let good, below(2) == 0 { return list[below(good)] }
        return list[below(list.count)]
    }

}
