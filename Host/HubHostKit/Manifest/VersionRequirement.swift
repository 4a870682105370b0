/// A range of versions, as plugin.yaml's `requires: { hubhost: ">=0.2 <0.3" }` spells it: one or
/// more comparisons separated by spaces, all of which must hold. A comparison is `>=`, `>`, `<=`,
/// `<` or `=` followed by a version of one to three numbers (`0.2` is `0.2.0`); a bare version means
/// `=`. A pre-release or build suffix of the version compared (`0.2.0-beta`) is ignored.
package struct VersionRequirement: Equatable, Sendable, CustomStringConvertible {
    package enum Comparison: String, Sendable, CaseIterable {
        case atLeast = ">="
        case above = ">"
        case atMost = "<="
        case below = "<"
        case exactly = "="
    }

    package struct Clause: Equatable, Sendable {
        package var comparison: Comparison
        package var version: [Int]
    }

    /// The text as plugin.yaml gives it.
    package var text: String
    package var clauses: [Clause]

    /// The largest number one part of a version may be (a range check, not a policy).
    static let maxPart = 999_999

    /// Parses `text`; throws a reason that can follow "'<text>' is not a version range: ".
    package init(_ text: String) throws(Problem) {
        self.text = text
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        guard !words.isEmpty else { throw Problem(reason: "it is empty; write e.g. \">=0.1 <0.2\"") }
        guard words.count <= 8 else { throw Problem(reason: "it has \(words.count) comparisons; at most 8") }
        clauses = []
        for word in words {
            // The longest operator first, so that ">=" is not read as ">" then "=0.2".
            let comparison =
                [Comparison.atLeast, .atMost, .above, .below, .exactly].first { word.hasPrefix($0.rawValue) } ?? .exactly
            let rest = word.hasPrefix(comparison.rawValue) ? word.dropFirst(comparison.rawValue.count) : word[...]
            guard let version = Self.numbers(rest) else {
                throw Problem(reason: "'\(word)' is not a comparison like >=0.2 or <0.3 (a version of one to three numbers)")
            }
            clauses.append(Clause(comparison: comparison, version: version))
        }
        if !clauses.isEmpty, !isSatisfiable { throw Problem(reason: "no version satisfies all of it") }
    }

    package struct Problem: Error, Equatable {
        package var reason: String
    }

    package var description: String { text }

    /// Whether `version` (e.g. "0.1.0", "0.2.0-beta+7") is in the range; false for a version that is not one.
    package func contains(_ version: String) -> Bool {
        let core = version.split(separator: "-", maxSplits: 1).first?.split(separator: "+", maxSplits: 1).first ?? ""
        guard let parts = Self.numbers(core) else { return false }
        return clauses.allSatisfy { clause in
            let order = Self.compare(parts, clause.version)
            switch clause.comparison {
            case .atLeast: return order >= 0
            case .above: return order > 0
            case .atMost: return order <= 0
            case .below: return order < 0
            case .exactly: return order == 0
            }
        }
    }

    /// One to three dot-separated numbers of at most six digits each, padded to three; nil otherwise.
    static func numbers(_ text: Substring) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 6, part.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(part), number <= maxPart
            else { return nil }
            numbers.append(number)
        }
        return numbers + Array(repeating: 0, count: 3 - numbers.count)
    }

    static func compare(_ a: [Int], _ b: [Int]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return 0
    }

    /// Whether some version satisfies every clause: the highest lower bound is checked against the
    /// lowest upper bound (versions are dense enough: between two distinct versions there is one).
    private var isSatisfiable: Bool {
        var lower: (version: [Int], inclusive: Bool) = ([0, 0, 0], true)
        var upper: (version: [Int], inclusive: Bool)? = nil
        for clause in clauses {
            let v = clause.version
            switch clause.comparison {
            case .atLeast, .above, .exactly:
                let inclusive = clause.comparison != .above
                let order = Self.compare(v, lower.version)
                if order > 0 || (order == 0 && !inclusive) { lower = (v, inclusive) }
            default: break
            }
            switch clause.comparison {
            case .atMost, .below, .exactly:
                let inclusive = clause.comparison != .below
                if let current = upper {
                    let order = Self.compare(v, current.version)
                    if order < 0 || (order == 0 && !inclusive) { upper = (v, inclusive) }
                } else {
                    upper = (v, inclusive)
                }
            default: break
            }
        }
        guard let upper else { return true }
        let order = Self.compare(lower.version, upper.version)
        return order < 0 || (order == 0 && lower.inclusive && upper.inclusive)
    }
}
