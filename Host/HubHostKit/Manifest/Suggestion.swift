/// "Did you mean" suggestions for misspelled keys and values.
enum Suggestion {
    /// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo.
    /// Linear in `word`'s length: the edit distance is at least the difference of the lengths, so a
    /// word much longer than every candidate (a hostile multi-megabyte key) is never compared.
    static func closest(to word: String, in candidates: [String]) -> String? {
        let length = word.count
        let allowed = max(1, length / 3)
        guard candidates.contains(where: { abs($0.count - length) <= allowed }) else { return nil }
        let lowered = word.lowercased()
        var best: (candidate: String, distance: Int)?
        for candidate in candidates where abs(candidate.count - length) <= allowed {
            let distance = editDistance(lowered, candidate.lowercased())
            if distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        guard let best else { return nil }
        // Allow about one typo per three characters, at least one.
        return best.distance <= allowed ? best.candidate : nil
    }

    /// `text` as it may be quoted in a message: at most `limit` characters, with the full size said
    /// when it was cut (a hostile key must not make a multi-megabyte error message).
    static func clip(_ text: String, to limit: Int = 64) -> String {
        guard text.count > limit else { return text }
        return "\(text.prefix(limit))... (\(text.utf8.count) bytes)"
    }

    /// ` (did you mean 'x'?)` or an empty string.
    static func hint(for word: String, in candidates: [String]) -> String {
        closest(to: word, in: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Edit distance where swapping two neighbouring letters counts as one typo ("nmae" -> "name"),
    /// as do an insertion, a deletion and a substitution (optimal string alignment distance).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
