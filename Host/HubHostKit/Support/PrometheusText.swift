import Foundation

/// Reading Prometheus text exposition (what `GET /metrics` answers) back: each sample by series,
/// and a histogram's quantile between two samples. `hubhost top` reads serve's own metrics this way.
package enum PrometheusText {
    /// A series' key: its name and its labels sorted, `name{a=x,b=y}` (as `samples` makes them).
    package static func key(_ name: String, _ labels: [String: String]) -> String {
        name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
    }

    /// Every sample line (`name{label="value",...} number`) by `key`; comments and lines that do
    /// not parse are skipped, and at most a million lines are read. Label values with an escaped
    /// quote are not ones hubhost writes (instance ids are letters, digits, '-', '_', '.'): such a
    /// line is skipped.
    package static func samples(_ text: String) -> [String: Double] {
        var found: [String: Double] = [:]
        for line in text.split(separator: "\n").prefix(1_000_000) where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            guard let open = series.firstIndex(of: "{") else {
                found[String(series) + "{}"] = value
                continue
            }
            guard series.hasSuffix("}"), !series.contains("\\\"") else { continue }
            var labels: [String: String] = [:]
            for pair in series[series.index(after: open)..<series.index(before: series.endIndex)].split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[1].hasPrefix("\""), parts[1].hasSuffix("\""), parts[1].count >= 2 else { continue }
                labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
            }
            found[key(String(series[..<open]), labels)] = value
        }
        return found
    }

    /// The `quantile` (0 to 1) of histogram `name`'s observations for `instance` between two
    /// samples: the upper bound of the first bucket (its cumulative counts summed over the other
    /// labels, such as `kind`) that holds that share of the observations made in between. Nil when
    /// there were none; infinity when the share lies past the last finite bound.
    package static func quantile(
        _ quantile: Double, of name: String, instance: String, before: [String: Double], after: [String: Double]
    ) -> Double? {
        let prefix = name + "_bucket{"
        let own = Substring("instance=\(instance)")
        var byBound: [Double: Double] = [:]
        for (series, count) in after where series.hasPrefix(prefix) {
            let labels = series.dropFirst(prefix.count).dropLast().split(separator: ",")
            guard labels.contains(own), let le = labels.first(where: { $0.hasPrefix("le=") })?.dropFirst(3),
                let bound = le == "+Inf" ? Double.infinity : Double(le)
            else { continue }
            byBound[bound, default: 0] += max(count - (before[series] ?? 0), 0)
        }
        guard let total = byBound[.infinity], total > 0 else { return nil }
        let wanted = min(max(quantile, 0), 1) * total
        return byBound.keys.sorted().first { byBound[$0, default: 0] >= wanted }
    }
}
