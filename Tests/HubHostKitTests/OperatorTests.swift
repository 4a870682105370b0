import Foundation
import PluginTestKit
import XCTest

/// The bundled trigger operators with the In-App Messaging seed's rules, each tested alone with
/// PluginTestKit; and `hubhost operators`.
final class OperatorTests: XCTestCase {
    private var standard: PluginHarness!
    private var extra: PluginHarness!

    override func setUpWithError() throws {
        standard = try PluginHarness(manifest: TestSupport.plugin("StandardOperators"), config: ["regex_step_budget": .int(20_000)])
        extra = try PluginHarness(manifest: TestSupport.plugin("ExtraOperators"))
    }

    override func tearDown() {
        standard.destroy()
        extra.destroy()
    }

    private func op(_ id: String) -> TriggerOperatorPlugin {
        TriggerOperatorPlugin(standard.plugin(id, kind: .triggerOperator) ?? extra.plugin(id, kind: .triggerOperator)!)
    }

    func testWireCodesAndNames() {
        let ids = ["equals", "is-not-equal", "greater-than", "less-than", "is-blank", "is-not-blank", "matches-regex", "does-not-match-regex"]
        XCTAssertEqual(ids.map { op($0).wireCode }, [1, 2, 3, 4, 5, 6, 7, 8])
        XCTAssertEqual(ids.map { op($0).operatorName }, ["EQUALS", "IS_NOT_EQUAL", "GREATER_THAN", "LESS_THAN", "IS_BLANK", "IS_NOT_BLANK",
                                                        "MATCHES_REGEX", "DOES_NOT_MATCH_REGEX"])
        XCTAssertEqual([op("starts-with"), op("in-list")].map(\.wireCode), [0, 0])
    }

    func testEqualityOfEveryTypeAndTimeTolerance() {
        let equals = op("equals"), notEqual = op("is-not-equal")
        XCTAssertTrue(equals.compare(event: .string("Gold"), trigger: .string("Gold")).result)
        XCTAssertFalse(equals.compare(event: .string("gold"), trigger: .string("Gold")).result, "case-sensitive")
        XCTAssertTrue(equals.compare(event: .int(5), trigger: .int(5)).result)
        XCTAssertTrue(equals.compare(event: .int(5), trigger: .double(5.0)).result, "int and double compare as numbers")
        XCTAssertTrue(equals.compare(event: .bool(true), trigger: .bool(true)).result)
        // The seed: 1001 and 500 ms are equal; 300 and 1400 are not.
        XCTAssertTrue(equals.compare(event: .timeMs(1001), trigger: .timeMs(500)).result)
        XCTAssertFalse(equals.compare(event: .timeMs(300), trigger: .timeMs(1400)).result)
        XCTAssertFalse(notEqual.compare(event: .timeMs(1001), trigger: .timeMs(500)).result)
        XCTAssertTrue(notEqual.compare(event: .timeMs(300), trigger: .timeMs(1400)).result)
        let mismatch = equals.compare(event: .string("5"), trigger: .int(5))
        XCTAssertEqual(mismatch.result, false)
        XCTAssertEqual(mismatch.status, 4)
        XCTAssertEqual(mismatch.reason, "EQUALS needs two values of the same type (event value string, trigger value int)")
        XCTAssertFalse(notEqual.compare(event: .bool(true), trigger: .string("true")).result, "a mismatch is false for IS_NOT_EQUAL too")
    }

    /// Every operator against a pair of values of every type: which types each accepts (the others
    /// are a type mismatch: false with a reason) and what it answers for a smaller and a larger value.
    func testOperatorMatrixForEveryType() {
        let pairs: [(type: String, small: PluginValue, large: PluginValue)] = [
            ("string", .string("apple"), .string("banana")), ("int", .int(1), .int(2)), ("double", .double(1.5), .double(2.5)),
            ("bool", .bool(false), .bool(true)), ("time", .timeMs(0), .timeMs(5000)),
        ]
        let accepts: [String: Set<String>] = [
            "equals": ["string", "int", "double", "bool", "time"], "is-not-equal": ["string", "int", "double", "bool", "time"],
            "greater-than": ["int", "double", "time"], "less-than": ["int", "double", "time"],
            "is-blank": ["string"], "is-not-blank": ["string"], "matches-regex": ["string"], "does-not-match-regex": ["string"],
        ]
        for (id, types) in accepts.sorted(by: { $0.key < $1.key }) {
            let operatorPlugin = op(id)
            for pair in pairs {
                let same = operatorPlugin.compare(event: pair.small, trigger: pair.small)
                let lower = operatorPlugin.compare(event: pair.small, trigger: pair.large)
                if !types.contains(pair.type) {
                    XCTAssertEqual([same.status, lower.status], [4, 4], "\(id) on \(pair.type) must be a type mismatch")
                    XCTAssertEqual([same.result, lower.result], [false, false], "\(id) on \(pair.type)")
                    continue
                }
                XCTAssertEqual(same.status, 0, "\(id) on \(pair.type): \(same.reason)")
                switch id {
                case "equals": XCTAssertEqual([same.result, lower.result], [true, false], "\(id) \(pair.type)")
                case "is-not-equal": XCTAssertEqual([same.result, lower.result], [false, true], "\(id) \(pair.type)")
                case "greater-than": XCTAssertEqual([same.result, lower.result, operatorPlugin.compare(event: pair.large, trigger: pair.small).result],
                                                    [false, false, true], "\(id) \(pair.type)")
                case "less-than": XCTAssertEqual([same.result, lower.result], [false, true], "\(id) \(pair.type)")
                case "is-blank": XCTAssertEqual(same.result, false)
                case "is-not-blank": XCTAssertEqual(same.result, true)
                case "matches-regex": XCTAssertEqual([same.result, lower.result], [true, false], "apple matches /apple/, not /banana/")
                default: XCTAssertEqual([same.result, lower.result], [false, true], "\(id) \(pair.type)")
                }
            }
        }
        // The seed's examples: 300 vs 600 ms EQUALS is true; 300 vs 1400 is false.
        XCTAssertTrue(op("equals").compare(event: .timeMs(300), trigger: .timeMs(600)).result)
        XCTAssertFalse(op("equals").compare(event: .timeMs(300), trigger: .timeMs(1400)).result)
    }

    func testOrderingOnlyForArithmeticTypes() {
        let greater = op("greater-than"), less = op("less-than")
        XCTAssertTrue(greater.compare(event: .int(10), trigger: .int(5)).result)
        XCTAssertFalse(greater.compare(event: .int(5), trigger: .int(5)).result)
        XCTAssertTrue(less.compare(event: .double(1.5), trigger: .int(2)).result)
        XCTAssertFalse(greater.compare(event: .timeMs(1900), trigger: .timeMs(1000)).result, "within the 1000 ms tolerance")
        XCTAssertTrue(greater.compare(event: .timeMs(2100), trigger: .timeMs(1000)).result)
        XCTAssertTrue(less.compare(event: .timeMs(0), trigger: .timeMs(1001)).result)
        for (event, trigger) in [(PluginValue.string("b"), PluginValue.string("a")), (.bool(true), .bool(false)), (.int(1), .timeMs(0))] {
            let answer = greater.compare(event: event, trigger: trigger)
            XCTAssertFalse(answer.result, "\(event) > \(trigger)")
            XCTAssertEqual(answer.status, 4)
        }
        XCTAssertFalse(greater.compare(event: .double(.nan), trigger: .int(1)).result)
    }

    func testBlankOnlyForStrings() {
        let blank = op("is-blank"), notBlank = op("is-not-blank")
        XCTAssertTrue(blank.compare(event: .string(""), trigger: .null).result)
        XCTAssertTrue(blank.compare(event: .string(" \t\n"), trigger: .string("ignored")).result)
        XCTAssertFalse(blank.compare(event: .string(" x "), trigger: .null).result)
        XCTAssertTrue(notBlank.compare(event: .string("x"), trigger: .null).result)
        XCTAssertEqual(blank.compare(event: .int(0), trigger: .null).status, 4)
    }

    func testRegexFeaturesAndTheBound() {
        let matches = op("matches-regex"), notMatches = op("does-not-match-regex")
        let cases: [(String, String, Bool)] = [
            ("^ORD-[0-9]{4}$", "ORD-2024", true), ("^ORD-[0-9]{4}$", "ORD-20245", false), ("sale", "Summer sale!", true),
            ("^(gold|silver)$", "silver", true), ("^(gold|silver)$", "bronze", false), ("\\d+\\.\\d\\d", "price 12.50", true),
            ("^[^@\\s]+@[^@\\s]+\\.\\w+$", "a@b.io", true), ("^[^@\\s]+@[^@\\s]+\\.\\w+$", "a b@c.io", false), ("colou?r", "color", true),
            ("^a.c$", "abc", true), ("^$", "", true), ("x*", "", true), ("^(ab)+$", "ababab", true), ("^(ab)+$", "ababa", false),
            ("[a-c]{2,3}z", "xxbcaz", true), ("h\\.t", "hat", false),
        ]
        for (pattern, text, expected) in cases {
            XCTAssertEqual(matches.compare(event: .string(text), trigger: .string(pattern)).result, expected, "/\(pattern)/ on '\(text)'")
            XCTAssertEqual(notMatches.compare(event: .string(text), trigger: .string(pattern)).result, !expected, "not /\(pattern)/ on '\(text)'")
        }
        // A pattern that stalls backtracking engines is linear here...
        let evil = String(repeating: "a", count: 30) + "!"
        XCTAssertFalse(matches.compare(event: .string(evil), trigger: .string("^(a+)+$")).result)
        // ...and a long input against a large pattern blows the step budget (20,000 here): false, with why.
        let blown = matches.compare(event: .string(String(repeating: "a", count: 5000)), trigger: .string("(a|aa|aaa)*b"))
        XCTAssertFalse(blown.result)
        XCTAssertEqual(blown.status, 6)
        XCTAssertEqual(blown.reason, "MATCHES_REGEX: matching took more than 20000 steps; answering false")
        XCTAssertFalse(notMatches.compare(event: .string(String(repeating: "a", count: 5000)), trigger: .string("(a|aa|aaa)*b")).result,
                       "a blown bound is false for DOES_NOT_MATCH_REGEX too")
        let invalid = matches.compare(event: .string("x"), trigger: .string("(unclosed"))
        XCTAssertEqual(invalid.status, 1)
        XCTAssertEqual(invalid.reason, "MATCHES_REGEX: invalid pattern: missing ) to close a group")
        XCTAssertEqual(matches.compare(event: .int(1), trigger: .string("1")).status, 4)
    }

    func testExtraOperators() {
        let startsWith = op("starts-with"), inList = op("in-list")
        XCTAssertTrue(startsWith.compare(event: .string("ORD-1"), trigger: .string("ORD-")).result)
        XCTAssertFalse(startsWith.compare(event: .string("OR"), trigger: .string("ORD-")).result)
        XCTAssertTrue(inList.compare(event: .string("silver"), trigger: .string("gold, silver ,bronze")).result)
        XCTAssertTrue(inList.compare(event: .int(3), trigger: .string("1,2,3")).result)
        XCTAssertFalse(inList.compare(event: .string("plat"), trigger: .string("gold,silver")).result)
        XCTAssertEqual(inList.compare(event: .double(1), trigger: .string("1")).status, 4)
    }

    func testOperatorsCommand() throws {
        let list = try TestSupport.run(TestSupport.hubhostExecutable, ["operators", "list", "--json"], currentDirectory: TestSupport.repository)
        XCTAssertEqual(list.status, 0, list.stderr)
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(rows.compactMap { $0["name"] as? String },
                       ["EQUALS", "IS_NOT_EQUAL", "GREATER_THAN", "LESS_THAN", "IS_BLANK", "IS_NOT_BLANK", "MATCHES_REGEX",
                        "DOES_NOT_MATCH_REGEX", "STARTS_WITH", "IN_LIST"])
        func test(_ arguments: [String]) throws -> (String, String) {
            let result = try TestSupport.run(TestSupport.hubhostExecutable, ["operators", "test"] + arguments, currentDirectory: TestSupport.repository)
            return (result.stdout.trimmingCharacters(in: .whitespacesAndNewlines), result.stderr)
        }
        XCTAssertEqual(try test(["GREATER_THAN", "--type", "int", "--trigger", "5", "--event", "10"]).0, "true")
        XCTAssertEqual(try test(["3", "--type", "2", "--trigger", "5", "--event", "4"]).0, "false")
        let mismatch = try test(["EQUALS", "--type", "int", "--trigger", "5", "--event", "5", "--event-type", "string"])
        XCTAssertEqual(mismatch.0, "false")
        XCTAssertTrue(mismatch.1.contains("HH_ERR_TYPE_MISMATCH"), mismatch.1)
        XCTAssertEqual(try test(["starts_with", "--type", "string", "--trigger", "ab", "--event", "abc"]).0, "true")
        let unknown = try TestSupport.run(TestSupport.hubhostExecutable, ["operators", "test", "NOPE", "--type", "int", "--trigger", "1", "--event", "1"],
                                          currentDirectory: TestSupport.repository)
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("no operator 'NOPE'"), unknown.stderr)
    }
}
