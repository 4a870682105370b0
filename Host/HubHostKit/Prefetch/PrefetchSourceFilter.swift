import Foundation
import GRDB

/// A filter with sort descriptors over sources (the PCD SDK's VocSourceFilter, which has only
/// allWithSort; hubhost adds the fields a source list needs): `subscribed`, `names`, `search`
/// (name or display name), `category` (the sources of the items of one category) and
/// `withContent` (at least one item that is not deleted).
public struct PrefetchSourceFilter: Sendable, Equatable, Codable {
    /// Only the sources with these names; empty: any name.
    public var names: [String] = []
    /// Only sources the user subscribed to (true) or did not (false); nil: either.
    public var subscribed: Bool?
    /// Only sources whose name or display name contains this text, ignoring ASCII case; nil or empty: any.
    public var search: String?
    /// Only sources with at least one item (not deleted) in the category with this id.
    public var category: String?
    /// Only sources with at least one item that is not deleted.
    public var withContent = false
    /// The order of the result, first descriptor first; ties, and an empty list, are ordered by name.
    public var sort: [Sort] = []
    /// At most this many sources (after sorting); nil: all of them, 0 or less: none.
    public var limit: Int?

    /// A sort descriptor over the source fields ("display_name", "name:desc").
    public typealias Sort = PrefetchSortDescriptor<Field>

    /// The fields sources can be sorted by; the raw value is the name used on the command line and in query strings.
    public enum Field: String, Sendable, Codable, CaseIterable, PrefetchSortField {
        /// The source name items refer to.
        case name
        /// Whether the user subscribed to the source (false first when ascending).
        case subscribed
        /// The name to show, ignoring case.
        case displayName = "display_name"
        /// The SQL the field orders by (`display_name` ignores case).
        public var column: String {
            switch self {
            case .name: return "name"
            case .displayName: return "display_name COLLATE NOCASE"
            case .subscribed: return "subscribed"
            }
        }
    }

    /// A filter from the given fields; every field left at its default matches all sources (allWithSort).
    public init(
        names: [String] = [], subscribed: Bool? = nil, search: String? = nil, category: String? = nil,
        withContent: Bool = false, sort: [Sort] = [], limit: Int? = nil
    ) {
        self.names = names
        self.subscribed = subscribed
        self.search = search
        self.category = category
        self.withContent = withContent
        self.sort = sort
        self.limit = limit
    }

    /// The subscribed sources (the set an app shows as "my channels").
    public static func subscribed(sort: [Sort] = []) -> Self { Self(subscribed: true, sort: sort) }

    var clause: (String, StatementArguments) {
        var parts: [String] = ["1"]
        var arguments: [any DatabaseValueConvertible] = []
        if !names.isEmpty {
            parts.append("name IN (\(names.map { _ in "?" }.joined(separator: ", ")))")
            arguments += names
        }
        if let subscribed {
            parts.append("subscribed = ?")
            arguments.append(subscribed)
        }
        if let search, !search.isEmpty {
            parts.append("(instr(lower(name), lower(?)) > 0 OR instr(lower(display_name), lower(?)) > 0)")
            arguments += [search, search]
        }
        if let category {
            parts.append(
                """
                EXISTS (SELECT 1 FROM item i JOIN item_category l ON l.item_id = i.unique_id
                        WHERE i.source_name = source.name AND l.category_id = ? AND i.state <> 'deleted')
                """)
            arguments.append(category)
        }
        if withContent { parts.append("EXISTS (SELECT 1 FROM item i WHERE i.source_name = source.name AND i.state <> 'deleted')") }
        return (parts.joined(separator: " AND "), StatementArguments(arguments))
    }

    var orderBy: String { (sort.map(\.sql) + ["name"]).joined(separator: ", ") }
}

extension PrefetchStore {
    func sources(where clause: String, arguments: StatementArguments, orderBy: String, limit: Int?) throws -> [PrefetchSource] {
        try pool.read { db in
            var sql = "SELECT * FROM source WHERE \(clause) ORDER BY \(orderBy)"
            if let limit { sql += " LIMIT \(max(0, limit))" }
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map {
                PrefetchSource(name: $0["name"], displayName: $0["display_name"], subscribed: $0["subscribed"])
            }
        }
    }
}

extension PrefetchEngine {
    /// The sources matching `filter`, in its order (the PCD SDK's getSourcesWithFilter).
    public func sources(_ filter: PrefetchSourceFilter) throws -> [PrefetchSource] {
        let (clause, arguments) = filter.clause
        return try store.sources(where: clause, arguments: arguments, orderBy: filter.orderBy, limit: filter.limit)
    }
}
