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
        XCTAssertEqual(
            ids.map { op($0).operatorName },
            [
                "EQUALS", "IS_NOT_EQUAL", "GREATER_THAN", "LESS_THAN", "IS_BLANK", "IS_NOT_BLANK",
                "MATCHES_REGEX", "DOES_NOT_MATCH_REGEX"
            ])
        XCTAssertEqual([op("starts-with"), op("in-list")].map(\.wireCode), [0, 0])
    }

    func testEqualityOfEveryTypeAndTimeTolerance() {
        let equals = op("equals")
        let notEqual = op("is-not-equal")
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
            ("bool", .bool(false), .bool(true)), ("time", .timeMs(0), .timeMs(5000))
        ]
        let accepts: [String: Set<String>] = [
            "equals": ["string", "int", "double", "bool", "time"], "is-not-equal": ["string", "int", "double", "bool", "time"],
            "greater-than": ["int", "double", "time"], "less-than": ["int", "double", "time"],
            "is-blank": ["string"], "is-not-blank": ["string"], "matches-regex": ["string"], "does-not-match-regex": ["string"]
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
                case "greater-than":
                    XCTAssertEqual(
                        [same.result, lower.result, operatorPlugin.compare(event: pair.large, trigger: pair.small).result],
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
        let greater = op("greater-than")
        let less = op("less-than")
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
        let blank = op("is-blank")
        let notBlank = op("is-not-blank")
        XCTAssertTrue(blank.compare(event: .string(""), trigger: .null).result)
        XCTAssertTrue(blank.compare(event: .string(" \t\n"), trigger: .string("ignored")).result)
        XCTAssertFalse(blank.compare(event: .string(" x "), trigger: .null).result)
        XCTAssertTrue(notBlank.compare(event: .string("x"), trigger: .null).result)
        XCTAssertEqual(blank.compare(event: .int(0), trigger: .null).status, 4)
    }

    func testRegexFeaturesAndTheBound() {
        let matches = op("matches-regex")
        let notMatches = op("does-not-match-regex")
        let cases: [(String, String, Bool)] = [
            ("^ORD-[0-9]{4}$", "ORD-2024", true), ("^ORD-[0-9]{4}$", "ORD-20245", false), ("sale", "Summer sale!", true),
            ("^(gold|silver)$", "silver", true), ("^(gold|silver)$", "bronze", false), ("\\d+\\.\\d\\d", "price 12.50", true),
            ("^[^@\\s]+@[^@\\s]+\\.\\w+$", "a@b.io", true), ("^[^@\\s]+@[^@\\s]+\\.\\w+$", "a b@c.io", false), ("colou?r", "color", true),
            ("^a.c$", "abc", true), ("^$", "", true), ("x*", "", true), ("^(ab)+$", "ababab", true), ("^(ab)+$", "ababa", false),
            ("[a-c]{2,3}z", "xxbcaz", true), ("h\\.t", "hat", false)
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
        XCTAssertFalse(
            notMatches.compare(event: .string(String(repeating: "a", count: 5000)), trigger: .string("(a|aa|aaa)*b")).result,
            "a blown bound is false for DOES_NOT_MATCH_REGEX too")
        XCTAssertEqual(matches.compare(event: .int(1), trigger: .string("1")).status, 4)
    }

    /// The regex operators against the reference In-App Messaging SDK's matching, case by case where
    /// the seed is silent. The reference: rakutentech/ios-inappmessaging
    /// Sources/RInAppMessaging/Utilities/MatchingUtility.swift (`NSRegularExpression(pattern:)`,
    /// `matches(in:range:)` non-empty, a pattern that throws answers false, DOES_NOT_MATCH_REGEX is
    /// its negation) and its MatchingUtilitySpec; NSRegularExpression is ICU. Android
    /// (ValueMatchingUtil.kt, `String.matches(Regex)`) matches the whole string instead: hubhost
    /// follows iOS, whose tests pin partial matching. Each expectation below was checked against
    /// NSRegularExpression.
    private func assertRegex(_ pattern: String, _ text: String, _ expected: Bool, _ why: String, file: StaticString = #filePath, line: UInt = #line) {
        let yes = op("matches-regex").compare(event: .string(text), trigger: .string(pattern))
        let no = op("does-not-match-regex").compare(event: .string(text), trigger: .string(pattern))
        XCTAssertEqual(yes.status, 0, "/\(pattern)/ on '\(text)': \(yes.reason)", file: file, line: line)
        XCTAssertEqual(yes.result, expected, "MATCHES_REGEX /\(pattern)/ on '\(text)': \(why)", file: file, line: line)
        XCTAssertEqual(no.result, !expected, "DOES_NOT_MATCH_REGEX /\(pattern)/ on '\(text)': \(why)", file: file, line: line)
    }

    /// Searched anywhere, as the reference's own tests: "^a" matches "abb", not "b" nor "".
    func testRegexSearchesAnywhereAsTheReference() {
        assertRegex("^a", "abb", true, "MatchingUtilitySpec: a match of part of the value")
        assertRegex("^a", "b", false, "MatchingUtilitySpec")
        assertRegex("^a", "", false, "MatchingUtilitySpec: an empty value")
        assertRegex("b", "abc", true, "a part is enough (Android's whole-string match would say false)")
        assertRegex("^b$", "abc", false, "anchors ask for the whole value")
    }

    /// An empty pattern: NSRegularExpression refuses it (the reference's tests: "" matches nothing,
    /// and DOES_NOT_MATCH_REGEX with "" is true). Before: it matched every value.
    func testRegexEmptyPatternMatchesNothing() {
        assertRegex("", "a", false, "the reference refuses an empty pattern")
        assertRegex("", "", false, "MatchingUtilitySpec: both values empty")
    }

    /// A pattern the regex library refuses matches nothing: MATCHES_REGEX false and
    /// DOES_NOT_MATCH_REGEX true (the reference catches the error and answers false, then negates).
    /// Before: a failure, false for both. The same rules as ICU decide what is invalid.
    func testRegexInvalidPatternMatchesNothing() {
        for pattern in [
            "(unclosed", "a)", "[z-a]", "x{", "{", "}", "a**", "*a", "a{2}{3}", "a{2,1}", "\\", "\\x", "\\u004", "(?z)a",
            "(?<n>a)(?<n>b)", "\\1", "[abc", "\\b*"
        ] {
            assertRegex(pattern, "x", false, "ICU refuses /\(pattern)/")
        }
        // The user learns why from the log (a warning; the answer itself is not a failure).
        XCTAssertTrue(
            standard.logged.contains {
                $0.severity == .warning
                    && $0.message == "MATCHES_REGEX: invalid pattern, which matches nothing: missing ) to close a group"
            },
            "\(standard.logged.map(\.message))")
        // Valid in ICU although other libraries refuse them.
        assertRegex("]", "]", true, "a lone ] is a literal")
        assertRegex("[]a]", "]", true, "a ] first in a class is a literal")
        assertRegex("\\q", "q", true, "an unknown escaped letter is the letter")
    }

    /// Case-sensitive unless the pattern says otherwise: ICU's inline flags work ((?i), (?i:...)),
    /// with Unicode simple case folding. Before: (?i) was an invalid pattern.
    func testRegexCaseSensitivityAndInlineFlags() {
        assertRegex("sale", "SUMMER SALE", false, "case-sensitive by default")
        assertRegex("(?i)sale", "SUMMER SALE", true, "(?i)")
        assertRegex("(?i:s)ALE", "sALE", true, "(?i:...)")
        assertRegex("(?i:s)ale", "SALE", false, "(?i:...) ends with its group")
        assertRegex("(?i)stra\\u00DFe", "STRA\u{1E9E}E", true, "ß and ẞ fold together")
        assertRegex("(?i)\u{03C3}", "\u{03C2}", true, "σ and ς fold together")
        assertRegex("(?i)[^k]", "K", false, "a negated class folds before it negates")
        assertRegex("(?m)^b", "a\nb", true, "(?m): ^ after a line break")
        assertRegex("(?s)a.b", "a\nb", true, "(?s): . matches a line break")
        assertRegex("(?x) a b # comment", "ab", true, "(?x): free spacing")
    }

    /// Characters, not bytes: `.` and classes take one Unicode character. Before: one byte of UTF-8.
    func testRegexMatchesCharactersNotBytes() {
        assertRegex("^a.c$", "a\u{E9}c", true, ". is one character (é is two bytes)")
        assertRegex("^[\u{E9}]$", "\u{E9}", true, "a class holds a character")
        assertRegex("^.$", "\u{1F600}", true, "an emoji is one character")
        assertRegex("^[\\x{1F600}-\\x{1F64F}]$", "\u{1F601}", true, "\\x{...} ranges")
    }

    /// ICU's Unicode classes: \w, \d, \s and \b know other scripts. Before: ASCII only.
    func testRegexUnicodeClasses() {
        assertRegex("^\\w+$", "\u{30B7}\u{30E7}\u{30C3}\u{30D7}", true, "katakana are word characters")
        assertRegex("^\\w+$", "caf\u{E9}", true, "é is a word character")
        assertRegex("\\w", "\u{3001}", false, "、 is punctuation")
        assertRegex("^\\d$", "\u{0663}", true, "Arabic-Indic three is a digit")
        assertRegex("^\\s$", "\u{00A0}", true, "no-break space is white space")
    }

    /// The Unicode tables of the regex engine are what scripts/regex-tables.swift prints from this
    /// toolchain's Unicode data: the generator is kept beside the tables it made, and still makes them.
    func testTheRegexUnicodeTablesAreWhatTheirGeneratorPrints() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let built = try TestSupport.run(
            "/usr/bin/env", ["swiftc", "-O", TestSupport.repository + "/scripts/regex-tables.swift", "-o", folder + "/regex-tables"], timeout: 300)
        XCTAssertEqual(built.status, 0, built.stderr)
        let printed = try TestSupport.run(folder + "/regex-tables", [], timeout: 120)
        XCTAssertEqual(printed.status, 0, printed.stderr)
        let header = try String(contentsOfFile: TestSupport.repository + "/Plugins/StandardOperators/bounded_regex_tables.h", encoding: .utf8)
        // Compared as the tables' names and numbers: the header is the output after clang-format.
        func tables(_ text: String) -> [String] {
            let start = text.range(of: "static const")?.lowerBound ?? text.endIndex
            return text[start...].split(whereSeparator: { " \n,{}=;[]".contains($0) }).map(String.init).filter { $0 != "#endif" }
        }
        let expected = tables(printed.stdout)
        XCTAssertGreaterThan(expected.count, 2_500, "four tables: 802 + 72 + 10 ranges, 206 runs")
        XCTAssertEqual(tables(header), expected, "run scripts/regex-tables.swift as its first lines say")
    }

    /// Anchors and word boundaries as ICU. Before: $ only at the very end, \b a literal b, \A \z
    /// \Z literal letters, `.` stopped only at \n.
    func testRegexAnchorsAndLineTerminators() {
        assertRegex("c$", "abc\n", true, "$ before a final line break")
        assertRegex("c$", "abc\r\n", true, "$ before a final CR LF")
        assertRegex("c$", "abc\n\n", false, "not before two")
        assertRegex("c\\z", "abc\n", false, "\\z is the very end")
        assertRegex("\\Ab", "ab", false, "\\A is the start")
        assertRegex("\\bsale\\b", "on sale now", true, "\\b is a word boundary")
        assertRegex("\\bsale\\b", "wholesale", false, "\\b is a word boundary")
        assertRegex("a.b", "a\rb", false, ". stops at every line terminator, \\r too")
        assertRegex("^\\R$", "\r\n", true, "\\R is a line break, CR LF as one")
    }

    /// More ICU syntax that was refused or misread before: non-capturing and named groups,
    /// comments, \Q...\E, lazy quantifiers, escapes, counts over 1000.
    func testRegexMoreSyntax() {
        assertRegex("^(?:ab)+$", "abab", true, "(?:...)")
        assertRegex("^(?<code>[A-Z]{3})-\\d+$", "ORD-12", true, "(?<name>...)")
        assertRegex("a(?#note)b", "ab", true, "(?#...)")
        assertRegex("\\Qa.b\\E", "a.b", true, "\\Q...\\E quotes")
        assertRegex("\\Qa.b\\E", "axb", false, "\\Q...\\E quotes")
        assertRegex("^a+?$", "aaa", true, "a lazy quantifier answers as the greedy one")
        assertRegex("^\\x41\\u0042\\x{43}\\0104$", "ABCD", true, "hex and octal escapes")
        assertRegex("^a{1001}$", String(repeating: "a", count: 1001), true, "counts over 1000")
    }

    /// Valid in the reference, but not linear (or not implemented) here: a failure, false for both
    /// operators, with the reason. Before: some were invalid, some misread (a\1 as a literal 1).
    func testRegexUnsupportedConstructsAnswerFalseWithAReason() {
        for pattern in ["(a)\\1", "(?=a)a", "(?<=a)b", "(?>a)", "a*+", "\\p{L}", "[[a]b]", "[a&&b]"] {
            for id in ["matches-regex", "does-not-match-regex"] {
                let answer = op(id).compare(event: .string("aa"), trigger: .string(pattern))
                XCTAssertEqual(answer.status, 3, "\(id) /\(pattern)/: \(answer.reason)")
                XCTAssertFalse(answer.result, "\(id) /\(pattern)/")
                XCTAssertTrue(answer.reason.contains("not supported"), answer.reason)
            }
        }
        // Still bounded: the program size too.
        XCTAssertEqual(op("matches-regex").compare(event: .string("a"), trigger: .string("a{30000}")).status, 3)
    }

    /// Values that are not strings: false for both operators, as the reference (its bool, int and
    /// double comparisons answer false for the regex operators).
    func testRegexOnOtherTypesIsFalseForBoth() {
        for value in [PluginValue.int(1), .double(1.5), .bool(true), .timeMs(1000)] {
            for id in ["matches-regex", "does-not-match-regex"] {
                let answer = op(id).compare(event: value, trigger: .string(".*"))
                XCTAssertFalse(answer.result, "\(id) on \(value)")
                XCTAssertEqual(answer.status, 4)
            }
        }
    }

    func testExtraOperators() {
        let startsWith = op("starts-with")
        let inList = op("in-list")
        XCTAssertTrue(startsWith.compare(event: .string("ORD-1"), trigger: .string("ORD-")).result)
        XCTAssertFalse(startsWith.compare(event: .string("OR"), trigger: .string("ORD-")).result)
        XCTAssertTrue(inList.compare(event: .string("silver"), trigger: .string("gold, silver ,bronze")).result)
        XCTAssertTrue(inList.compare(event: .int(3), trigger: .string("1,2,3")).result)
        XCTAssertFalse(inList.compare(event: .string("plat"), trigger: .string("gold,silver")).result)
        XCTAssertEqual(inList.compare(event: .double(1), trigger: .string("1")).status, 4)
    }

    func testOperatorsCommand() throws {
        let list = try TestSupport.hubhost(["operators", "list", "--json"])
        XCTAssertEqual(list.status, 0, list.stderr)
        let rows = try list.json(as: [[String: Any]].self)
        XCTAssertEqual(
            rows.compactMap { $0["name"] as? String },
            [
                "EQUALS", "IS_NOT_EQUAL", "GREATER_THAN", "LESS_THAN", "IS_BLANK", "IS_NOT_BLANK", "MATCHES_REGEX",
                "DOES_NOT_MATCH_REGEX", "STARTS_WITH", "IN_LIST"
            ])
        func test(_ arguments: [String]) throws -> (String, String) {
            let result = try TestSupport.hubhost(["operators", "test"] + arguments)
            return (result.stdout.trimmingCharacters(in: .whitespacesAndNewlines), result.stderr)
        }
        XCTAssertEqual(try test(["GREATER_THAN", "--type", "int", "--trigger", "5", "--event", "10"]).0, "true")
        XCTAssertEqual(try test(["3", "--type", "2", "--trigger", "5", "--event", "4"]).0, "false")
        let mismatch = try test(["EQUALS", "--type", "int", "--trigger", "5", "--event", "5", "--event-type", "string"])
        XCTAssertEqual(mismatch.0, "false")
        XCTAssertTrue(mismatch.1.contains("HH_ERR_TYPE_MISMATCH"), mismatch.1)
        XCTAssertEqual(try test(["starts_with", "--type", "string", "--trigger", "ab", "--event", "abc"]).0, "true")
        let unknown = try TestSupport.hubhost(["operators", "test", "NOPE", "--type", "int", "--trigger", "1", "--event", "1"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("no operator 'NOPE'"), unknown.stderr)
    }
}
