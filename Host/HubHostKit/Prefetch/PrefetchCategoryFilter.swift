import Foundation
import GRDB

/// A filter with sort descriptors over categories (the PCD SDK's VocItemCategoryFilter). Its
/// named filters are combinations of these fields: allWithSort = no field; categoriesSelected =
/// selected true; categoriesSelectedWithContent = selected true + withContent; subCategories =
/// parent; SearchField = search; suggestions = suggested true (the categories the service suggests,
/// `suggested` in the catalog protocol). Beyond the PCD SDK: `source` (the categories the items of
/// one source are in) and `ids`.
public struct PrefetchCategoryFilter: Sendable, Equatable, Codable {
    /// Only the categories with these ids; empty: any id.
    public var ids: [String] = []
    /// Only categories the user selected (true) or did not select (false); nil: either (categoriesSelected is true).
    public var selected: Bool?
    /// Only categories the service suggests (true) or does not (false): the suggestions filter.
    public var suggested: Bool?
    /// Only categories whose parent is this id (subCategories).
    public var parent: String?
    /// Only categories whose name or id contains this text, ignoring ASCII case.
    public var search: String?
    /// Only categories with at least one item (not deleted) of this source.
    public var source: String?
    /// Only categories with at least one item that is not deleted.
    public var withContent = false
    /// The order of the result, first descriptor first; ties, and an empty list, are ordered by id.
    public var sort: [Sort] = []
    /// At most this many categories (after sorting); nil: all of them, 0 or less: none.
    public var limit: Int?

    /// A sort descriptor over the category fields ("name", "name:desc").
    public typealias Sort = PrefetchSortDescriptor<Field>

    /// The fields categories can be sorted by; the raw value is the name used on the command line and in query strings.
    public enum Field: String, Sendable, Codable, CaseIterable, PrefetchSortField {
        /// The category id.
        case id
        /// The display name, ignoring case.
        case name
        /// The parent category's id (nil, for top-level categories, sorts first when ascending).
        case parent
        /// Whether the user selected the category (false first when ascending).
        case selected
        /// Whether the service suggests the category (false first when ascending).
        case suggested
        /// The SQL the field orders by (`name` ignores case).
        public var column: String {
            switch self {
            case .id: return "id"
            case .name: return "name COLLATE NOCASE"
            case .parent: return "parent"
            case .selected: return "selected"
            case .suggested: return "suggested"
            }
        }
    }

    /// A filter from the given fields; every field left at its default matches all categories (allWithSort).
    public init(
        ids: [String] = [], selected: Bool? = nil, suggested: Bool? = nil, parent: String? = nil, search: String? = nil,
        source: String? = nil, withContent: Bool = false, sort: [Sort] = [], limit: Int? = nil
    ) {
        self.ids = ids
        self.selected = selected
        self.suggested = suggested
        self.parent = parent
        self.search = search
        self.source = source
        self.withContent = withContent
        self.sort = sort
        self.limit = limit
    }

    /// The PCD SDK's categoriesSelected.
    public static func selected(sort: [Sort] = []) -> Self { Self(selected: true, sort: sort) }
    /// The PCD SDK's categoriesSelectedWithContent.
    public static func selectedWithContent(sort: [Sort] = []) -> Self { Self(selected: true, withContent: true, sort: sort) }
    /// The PCD SDK's suggestions: the categories the service suggests.
    public static func suggestions(sort: [Sort] = []) -> Self { Self(suggested: true, sort: sort) }
    /// The PCD SDK's subCategories.
    public static func subCategories(of parent: String, sort: [Sort] = []) -> Self { Self(parent: parent, sort: sort) }

    /// The WHERE clause over `category` and its arguments (values are always bound, never spliced).
    var clause: (String, StatementArguments) {
        var parts: [String] = ["1"]
        var arguments: [any DatabaseValueConvertible] = []
        if !ids.isEmpty {
            parts.append("id IN (\(ids.map { _ in "?" }.joined(separator: ", ")))")
            arguments += ids
        }
        if let selected {
            parts.append("selected = ?")
            arguments.append(selected)
        }
        if let suggested {
            parts.append("suggested = ?")
            arguments.append(suggested)
        }
        if let parent {
            parts.append("parent = ?")
            arguments.append(parent)
        }
        if let search, !search.isEmpty {
            parts.append("(instr(lower(name), lower(?)) > 0 OR instr(lower(id), lower(?)) > 0)")
            arguments += [search, search]
        }
        let hasItem =
            "EXISTS (SELECT 1 FROM item_category l JOIN item i ON i.unique_id = l.item_id WHERE l.category_id = category.id AND i.state <> 'deleted'"
        if let source {
            parts.append(hasItem + " AND i.source_name = ?)")
            arguments.append(source)
        }
        if withContent { parts.append(hasItem + ")") }
        return (parts.joined(separator: " AND "), StatementArguments(arguments))
    }

    var orderBy: String { (sort.map(\.sql) + ["id"]).joined(separator: ", ") }
}

/// A sortable field of a filter: the column (or expression) it orders by.
public protocol PrefetchSortField: RawRepresentable, CaseIterable, Sendable, Codable, Equatable where RawValue == String {
    /// The SQL column or expression of the catalog table that the field orders by.
    var column: String { get }
}

/// One sort descriptor (the PCD SDK's NSSortDescriptor): a field, ascending unless `descending`.
/// Written "name" or "name:desc" on the command line and in query strings.
public struct PrefetchSortDescriptor<Field: PrefetchSortField>: Sendable, Equatable, Codable {
    /// The field to order by.
    public var field: Field
    /// Whether larger values come first (":desc"); false: ascending.
    public var descending: Bool
    /// Orders by `field`, ascending unless `descending`.
    public init(field: Field, descending: Bool = false) {
        self.field = field
        self.descending = descending
    }

    /// "name", "name:desc"...; nil when the field is not one of Field.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let first = parts.first, let field = Field(rawValue: first) else { return nil }
        if parts.count == 2 && !["asc", "desc"].contains(parts[1]) { return nil }
        self.init(field: field, descending: parts.count == 2 && parts[1] == "desc")
    }

    /// The descriptor as written on the command line and in query strings: "name", or "name:desc" when descending.
    public var text: String { field.rawValue + (descending ? ":desc" : "") }
    var sql: String { "\(field.column) \(descending ? "DESC" : "ASC")" }
}

extension PrefetchStore {
    func categories(where clause: String, arguments: StatementArguments, orderBy: String, limit: Int?) throws -> [PrefetchCategory] {
        try pool.read { db in
            var sql = "SELECT * FROM category WHERE \(clause) ORDER BY \(orderBy)"
            if let limit { sql += " LIMIT \(max(0, limit))" }
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map {
                PrefetchCategory(id: $0["id"], name: $0["name"], parent: $0["parent"], selected: $0["selected"], suggested: $0["suggested"])
            }
        }
    }
}

extension PrefetchEngine {
    /// The categories matching `filter`, in its order (the PCD SDK's getCategoriesWithFilter).
    public func categories(_ filter: PrefetchCategoryFilter) throws -> [PrefetchCategory] {
        let (clause, arguments) = filter.clause
        return try store.categories(where: clause, arguments: arguments, orderBy: filter.orderBy, limit: filter.limit)
    }
}
