import Foundation

/// A Content Hub item's URI: `zbimdb://hub/<id>`, `zbimdb://channel/<id>`, `zbimdb://article/<id>`
/// (ids are bundle paths such as `news/sports/final-score`). The ZBiM SDK's deep links arrive as
/// such a URI after the app's custom scheme was replaced by `zbimdb://`.
public struct ContentURI: Codable, Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Codable, Sendable, CaseIterable { case hub, channel, article }

    public static let scheme = "zbimdb"

    public var kind: Kind
    public var id: String

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
