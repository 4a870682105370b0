import Foundation

/// A Content Hub item's URI: `zbimdb://hub/<id>`, `zbimdb://channel/<id>`, `zbimdb://article/<id>`
/// (ids are bundle paths such as `news/sports/final-score`). The ZBiM SDK's deep links arrive as
/// such a URI after the app's custom scheme was replaced by `zbimdb://`.
public struct ContentURI: Codable, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// What kind of item a URI names: the part after `zbimdb://`, as in `zbimdb://<kind>/<id>`.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// A hub, e.g. `zbimdb://hub/news`.
        case hub
        /// A channel, e.g. `zbimdb://channel/news/sports`.
        case channel
        /// An article, e.g. `zbimdb://article/news/sports/final-score`.
        case article
    }

    /// The URI scheme of Content Hub items: `zbimdb` (matched in any case when parsed).
    public static let scheme = "zbimdb"

    /// Whether the URI names a hub, a channel or an article.
    public var kind: Kind
    /// The item's bundle id, percent-decoded, without a query, fragment or trailing `/`, e.g. `news/sports/final-score`.
    public var id: String

    /// The URI of the `kind` item whose bundle id is `id` (unchecked: the item need not exist).
    public init(_ kind: Kind, _ id: String) {
        self.kind = kind
        self.id = id
    }

    /// Parses `zbimdb://kind/id`; nil for anything else.
    public init?(_ text: String) {
        let prefix = ContentURI.scheme + "://"
        guard text.lowercased().hasPrefix(prefix) else { return nil }
        let rest = text.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), let kind = Kind(rawValue: String(rest[..<slash]).lowercased()) else { return nil }
        var id = String(rest[rest.index(after: slash)...])
        if let end = id.firstIndex(where: { $0 == "?" || $0 == "#" }) { id = String(id[..<end]) }
        while id.hasSuffix("/") { id.removeLast() }
        guard !id.isEmpty, let decoded = id.removingPercentEncoding else { return nil }
        self.init(kind, decoded)
    }

    public var description: String { "\(ContentURI.scheme)://\(kind.rawValue)/\(id)" }
}
