/// How the Content Hub tailors what it shows (the ZBiM SDK's "User Tags & Content Tailoring"): an
/// item's score is the sum of the active user's usage counts of the item's tags. Present picks the
/// hub with the best score (ties, and a user with no tags, fall back to bundle order); articles in a
/// channel are ordered by score, ties by bundle order.
package enum Tailoring {
    /// The tag counts that stand for a tags override: each given tag counts once.
    package static func counts(forOverride tags: [String]) -> [String: Int] {
        Dictionary(tags.map { ($0, 1) }, uniquingKeysWith: { first, _ in first })
    }

    package static func score(_ tags: [String], _ counts: [String: Int]) -> Int {
        var total = 0
        for tag in tags { total += counts[tag] ?? 0 }
        return total
    }

    /// The hub that best matches `counts`; the first hub in bundle order when nothing matches.
    /// nil only for a bundle with no hubs.
    package static func selectHub(_ hubs: [ContentBundle.Hub], counts: [String: Int]) -> ContentBundle.Hub? {
        var best: (hub: ContentBundle.Hub, score: Int)?
        for hub in hubs {  // bundle order: a later hub must score strictly higher to win
            let score = score(hub.tags, counts)
            if best == nil || score > best!.score { best = (hub, score) }
        }
        return best?.hub
    }

    /// `articles` ordered by score, highest first; equal scores keep bundle order.
    package static func order(_ articles: [ContentBundle.Article], counts: [String: Int]) -> [ContentBundle.Article] {
        guard !counts.isEmpty else { return articles }
        return articles.enumerated()
            .map { (index: $0.offset, score: score($0.element.tags, counts), article: $0.element) }
            .sorted { $0.score != $1.score ? $0.score > $1.score : $0.index < $1.index }
            .map(\.article)
    }
}
