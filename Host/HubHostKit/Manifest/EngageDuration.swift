import Foundation

/// Durations in manifests: plain seconds (`90`, `1.5`) or the Engage expiration-string form
/// (`15 sec`, `1 day 15m`, `15m1d0seconds`, `65minutes`, `1d 7h 23m 15s`), from the Engage SDK's
/// EngageExpirationParser. Numbers and units may be run together or spaced; units are summed.
package enum EngageDuration {
    /// Unit spellings, each with its length in seconds. Matching is case-insensitive.
    static let units: [(names: [String], seconds: Double)] = [
        (["ms", "millisecond", "milliseconds", "msec", "msecs"], 0.001),
        (["s", "sec", "secs", "second", "seconds"], 1),
        (["m", "min", "mins", "minute", "minutes"], 60),
        (["h", "hr", "hrs", "hour", "hours"], 3600),
        (["d", "day", "days"], 86_400),
        (["w", "wk", "wks", "week", "weeks"], 604_800)
    ]

    /// The duration in seconds, or an explanation of what is wrong.
    package static func parse(_ text: String) -> Result<Double, DurationError> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return .failure(.init(text: text, reason: "it is empty")) }
        if let plain = Double(trimmed) {
            guard plain.isFinite else { return .failure(.init(text: text, reason: "it is not a finite number")) }
            guard plain >= 0 else { return .failure(.init(text: text, reason: "a duration cannot be negative")) }
            return plain <= SafeTime.maxDurationSeconds ? .success(plain) : .failure(.init(text: text, reason: tooLong))
        }
        var total = 0.0
        var index = trimmed.startIndex
        var sawTerm = false
        func skipSpaces() {
            while index < trimmed.endIndex, trimmed[index] == " " || trimmed[index] == "," { index = trimmed.index(after: index) }
        }
        while true {
            skipSpaces()
            if index == trimmed.endIndex { break }
            let numberStart = index
            while index < trimmed.endIndex, trimmed[index].isNumber || trimmed[index] == "." { index = trimmed.index(after: index) }
            guard let number = Double(trimmed[numberStart..<index]) else {
                return .failure(.init(text: text, reason: "expected a number at '\(trimmed[numberStart...])'"))
            }
            skipSpaces()
            let unitStart = index
            while index < trimmed.endIndex, trimmed[index].isLetter { index = trimmed.index(after: index) }
            let unit = trimmed[unitStart..<index].lowercased()
            guard !unit.isEmpty else {
                return .failure(
                    .init(
                        text: text,
                        reason:
                            "the number \(trimmed[numberStart..<unitStart].trimmingCharacters(in: .whitespaces)) has no unit (use s, m, h, d or w)"))
            }
            guard let seconds = units.first(where: { $0.names.contains(unit) })?.seconds else {
                let all = units.flatMap(\.names)
                return .failure(.init(text: text, reason: "unknown unit '\(unit)'\(Suggestion.hint(for: unit, in: all))"))
            }
            total += number * seconds
            sawTerm = true
        }
        guard sawTerm else { return .failure(.init(text: text, reason: "no duration found")) }
        return total.isFinite && total <= SafeTime.maxDurationSeconds ? .success(total) : .failure(.init(text: text, reason: tooLong))
    }

    static let tooLong = "the longest duration is 100 years (\(Int(SafeTime.maxDurationSeconds)) seconds)"

    /// A duration in seconds as the shortest readable text, e.g. `1d 15m`.
    package static func format(_ seconds: Double) -> String {
        if seconds == 0 { return "0s" }
        var rest = seconds
        var parts: [String] = []
        for (unit, size) in [("d", 86_400.0), ("h", 3600.0), ("m", 60.0)] where rest >= size {
            let count = (rest / size).rounded(.down)
            parts.append("\(Int(count))\(unit)")
            rest -= count * size
        }
        if rest > 0 {
            parts.append(rest == rest.rounded() ? "\(Int(rest))s" : "\(rest)s")
        }
        return parts.joined(separator: " ")
    }
}

package struct DurationError: Error, Equatable, CustomStringConvertible {
    package var text: String
    package var reason: String
    package var description: String { "'\(text)' is not a duration: \(reason)" }
}
