import Foundation
import GRDB

/// A filter with sort descriptors over items (the PCD SDK's VocItemFilter): its named filters
/// are combinations of these fields (itemsDownloaded = states [cached]; itemsDownloadedNotViewed =
/// states [cached] + notViewed; itemsWithContentIds:sourceName: = contentIds + source; ...). The
/// SDK's video filters (VocItemVideoFilter, "a subset of Item") are the same with types
/// ["video"]: videosDownloadedOrDownloadingWithCategory = types [video] + states [cached,
/// downloading] + category. Deleted items are listed only when `states` names `deleted`.
public struct PrefetchItemFilter: Sendable, Equatable, Codable {
    /// Only items in these states; empty: every state but `deleted`.
    public var states: [PrefetchItemState] = []
    /// Only items in the category with this id.
    public var category: String?
    /// Only the items with these content ids (ids within their source: combine with `source`); empty: any.
    public var contentIds: [String] = []
    /// Only the items of the source with this name.
    public var source: String?
    /// Only saved (true) or unsaved (false) items; nil: either.
    public var saved: Bool?
    /// Only items never consumed (`viewed` false); false: viewed or not.
    public var notViewed = false
    /// Only items of these types (the catalog's `type`, e.g. "video"); empty: any.
    public var types: [String] = []
    /// The order of the result, first descriptor first; ties, and an empty list, are ordered by discovery time, then unique id.
    public var sort: [Sort] = []
    /// At most this many items (after sorting); nil: all of them, 0 or less: none.
    public var limit: Int?

    /// One sort descriptor over items: a field, ascending unless `descending`; written "title" or "size:desc".
    public struct Sort: Sendable, Equatable, Codable {
        /// The field to order by.
        public var field: Field
        /// Whether larger values come first (":desc"); false: ascending.
        public var descending: Bool
        /// Orders by `field`, ascending unless `descending`.
        public init(field: Field, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }

        /// "title", "size:desc"...; nil when the field is not one of Field.
        public init?(_ text: String) {
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            guard let field = Field(rawValue: parts[0]) else { return nil }
            if parts.count == 2 && !["asc", "desc"].contains(parts[1]) { return nil }
            self.init(field: field, descending: parts.count == 2 && parts[1] == "desc")
        }
    }

    /// Sortable fields, each an indexed or plain column of the catalog.
    public enum Field: String, Sendable, Codable, CaseIterable {
        /// The title, ignoring case.
        case title
        /// When the item joined the catalog (`discoveredMs`).
        case discovered
        /// When the item last changed (`updatedMs`).
        case updated
        /// The item's size in bytes, as the catalog gives it.
        case size
        /// The state's name (`cached`, `deleted`, ...), alphabetically.
        case state
        /// When the item expires (`expiryMs`); items without an expiry come first when ascending.
        case expiry
        /// The content's id within its source.
        case contentId = "content_id"
        var column: String {
            switch self {
            case .title: return "title COLLATE NOCASE"
            case .discovered: return "discovered_ms"
            case .updated: return "updated_ms"
            case .size: return "size"
            case .state: return "state"
            case .expiry: return "expiry_ms"
            case .contentId: return "content_id"
            }
        }
    }

    /// A filter from the given fields; every field left at its default matches all items that are not deleted.
    public init(
        states: [PrefetchItemState] = [], category: String? = nil, contentIds: [String] = [], source: String? = nil,
        saved: Bool? = nil, notViewed: Bool = false, types: [String] = [], sort: [Sort] = [], limit: Int? = nil
    ) {
        self.states = states
        self.category = category
        self.contentIds = contentIds
        self.source = source
        self.saved = saved
        self.notViewed = notViewed
        self.types = types
        self.sort = sort
        self.limit = limit
    }

    /// The WHERE clause and its arguments (values are always bound, never spliced).
    var clause: (String, StatementArguments) {
        var parts: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if states.isEmpty {
            parts.append("state <> 'deleted'")
        } else {
            parts.append("state IN (\(states.map { _ in "?" }.joined(separator: ", ")))")
            arguments += states.map(\.rawValue)
        }
        if let category {
            parts.append("unique_id IN (SELECT item_id FROM item_category WHERE category_id = ?)")
            arguments.append(category)
        }
        if !contentIds.isEmpty {
            parts.append("content_id IN (\(contentIds.map { _ in "?" }.joined(separator: ", ")))")
            arguments += contentIds
        }
        if let source {
            parts.append("source_name = ?")
            arguments.append(source)
        }
        if let saved {
            parts.append("saved = ?")
            arguments.append(saved)
        }
        if notViewed { parts.append("viewed = 0") }
        if !types.isEmpty {
            parts.append("type IN (\(types.map { _ in "?" }.joined(separator: ", ")))")
            arguments += types
        }
        return (parts.joined(separator: " AND "), StatementArguments(arguments))
    }

    var orderBy: String {
        (sort.map { "\($0.field.column) \($0.descending ? "DESC" : "ASC")" } + ["discovered_ms", "unique_id"]).joined(separator: ", ")
    }
}

extension PrefetchEngine {
    /// The items matching `filter`, in its order (the PCD SDK's getItemsWithFilter).
    public func items(_ filter: PrefetchItemFilter = PrefetchItemFilter()) throws -> [PrefetchItem] {
        let (clause, arguments) = filter.clause
        return try store.items(where: clause, arguments: arguments, orderBy: filter.orderBy, limit: filter.limit.map { max(0, $0) })
    }
}
