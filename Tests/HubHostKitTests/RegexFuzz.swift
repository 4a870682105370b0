import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// (e) MATCHES_REGEX and DOES_NOT_MATCH_REGEX of the StandardOperators plugin through
/// PluginHarness, with random patterns and subjects: no trap, no hang (the plugin's step budget),
/// and never "true" from both.
final class RegexFuzz: FuzzTarget {
    let harness: PluginHarness
    let matches: TriggerOperatorPlugin
    let doesNotMatch: TriggerOperatorPlugin
    static let tokens = [
        "a", "b", "ab", "é", "🎉", ".", "*", "+", "?", "*?", "+?", "??", "*+", "++", "{2}", "{2,5}", "{0,}", "{1000}",
        "{0,1000}", "{1001}", "{99999999999}", "{2,1}", "{", "}", "(", ")", "(?:", "(?i)", "(?m)", "(?s)", "(?x)", "(?-i)",
        "(?i:", "(?<n>", "(?<n>a)\\k<n>", "(?=", "(?!", "(?<=", "(?<!", "(?>", "[", "]", "[^", "[a-z]", "[z-a]", "[[:alpha:]]",
        "[\\w-]", "[a&&b]", "-", "\\", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "\\A", "\\z", "\\Z", "\\R",
        "\\1", "\\9", "\\p{L}", "\\P{Lu}", "\\x{41}", "\\x{110000}", "\\x41", "\\u0041", "\\uD800", "\\N{LATIN SMALL LETTER A}",
        "\\Q", "\\E", "\\Qa.b\\E", "\\n", "\\t", "\\0", "\\cA", "\\e", "|", "||", "^", "$", "\\$", "\\.", "\u{0}", "\n",
        "#", " ", "\\G", "\\X", "(a|aa)*", "(a*)*", "((a+)+)+", "(a{1000}){1000}", "((a{100}){100}){100}"
    ]
    static let subjectPieces = [
        "a", "aa", "b", "ab", "é", "e\u{301}", "🎉", "\n", "\r\n", " ", "A", "1", "_", "-", ".", "]", "ß", "ẞ", "σ", "ς", "\u{0}"
    ]
    var compared = 0, differential = 0, icuValid = 0, unsupported = 0
    var mismatches: [String] = []

    override init(name: String, work: String) throws {
        harness = try PluginHarness(manifest: TestSupport.plugin("StandardOperators"), config: ["regex_step_budget": .int(200_000)])
        matches = TriggerOperatorPlugin(harness.plugin("matches-regex", kind: .triggerOperator)!)
        doesNotMatch = TriggerOperatorPlugin(harness.plugin("does-not-match-regex", kind: .triggerOperator)!)
        try super.init(name: name, work: work)
    }

    override func finish() {
        harness.destroy()
        print(
            "fuzz regex: \(compared) comparisons, \(unsupported) refused as unsupported or over the budget, \(differential) checked against NSRegularExpression (\(icuValid) patterns it accepts), \(mismatches.count) disagreements"
        )
        for mismatch in mismatches.prefix(30) { print("fuzz regex disagreement: \(mismatch)") }
    }

    /// A pattern ICU accepts (mostly): atoms, classes, groups and quantifiers, nested.
    func wellFormed(_ random: inout FuzzRandom, depth: Int = 0) -> String {
        var pattern = ""
        for _ in 0..<random.int(1...4) {
            var atom: String
            switch random.int(0...9) {
            case 0, 1, 2: atom = random.pick(["a", "b", "é", "ß", "σ", "🎉", "\\.", "-", "_", " ", "1", "A"])
            case 3:
                atom = random.pick([
                    ".", "\\d", "\\w", "\\s", "\\W", "\\S", "\\D", "[ab]", "[^a]", "[a-cé]", "[\\w-]", "[.]", "\\x{E9}", "\\u00DF", "\\n", "\\R"
                ])
            case 4: atom = random.pick(["^", "$", "\\b", "\\B", "\\A", "\\z", "\\Z"])
            case 5 where depth < 3: atom = "(" + wellFormed(&random, depth: depth + 1) + ")"
            case 6 where depth < 3: atom = "(?:" + wellFormed(&random, depth: depth + 1) + "|" + wellFormed(&random, depth: depth + 1) + ")"
            case 7 where depth < 3:
                atom = random.pick(["(?i)", "(?i:", "(?s:", "(?m:", "(?<g>"]) + wellFormed(&random, depth: depth + 1) + (random.chance(20) ? "" : ")")
            default: atom = random.pick(["a", "b", "ab"])
            }
            if atom.hasPrefix("(?i)") || atom.hasPrefix("(?") && !atom.hasSuffix(")") { atom += ")" }
            if random.chance(40), !["^", "$", "\\b", "\\B", "\\A", "\\z", "\\Z"].contains(atom) {
                atom += random.pick(["*", "+", "?", "*?", "+?", "{2}", "{0,3}", "{1,}", "{3,5}?"])
            }
            pattern += atom
        }
        return random.chance(10) ? pattern + "|" + wellFormed(&random, depth: depth + 1) : pattern
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        let pattern = random.chance(50) ? wellFormed(&random) : (0..<random.int(1...12)).map { _ in random.pick(Self.tokens) }.joined()
        let length = random.chance(5) ? random.pick([1000, 10_000]) : random.int(0...16)
        let subject = (0..<length).map { _ in random.pick(Self.subjectPieces) }.joined()
        return try! JSONSerialization.data(withJSONObject: [pattern, subject])
    }

    override func check(_ input: Data, index: Int) -> String? {
        guard let pair = try? JSONSerialization.jsonObject(with: input) as? [String], pair.count == 2 else { return "bad case" }
        let (pattern, subject) = (pair[0], pair[1])
        let yes = matches.compare(event: .string(subject), trigger: .string(pattern))
        let no = doesNotMatch.compare(event: .string(subject), trigger: .string(pattern))
        compared += 1
        if yes.result && no.result { return "both MATCHES_REGEX and DOES_NOT_MATCH_REGEX are true for /\(pattern)/ on \(subject.debugDescription)" }
        if yes.status != 0 || no.status != 0 {
            unsupported += 1
            if yes.result || no.result {
                return "a refused pattern answered true: /\(pattern)/ (\(yes.status) \(yes.reason); \(no.status) \(no.reason))"
            }
            return nil
        }
        // Both answered: they are each other's negation, and agree with ICU on short subjects.
        if yes.result == no.result {
            return "MATCHES_REGEX and DOES_NOT_MATCH_REGEX both \(yes.result) for /\(pattern)/ on \(subject.debugDescription)"
        }
        if subject.count <= 16, pattern.count <= 60 {
            differential += 1
            let compiled = try? NSRegularExpression(pattern: pattern)
            if compiled != nil { icuValid += 1 }
            let icu = compiled.map { $0.firstMatch(in: subject, range: NSRange(subject.startIndex..., in: subject)) != nil } ?? false
            if icu != yes.result {
                mismatches.append("/\(pattern)/ on \(subject.debugDescription): hubhost \(yes.result), NSRegularExpression \(icu)")
            }
        }
        return nil
    }
}
