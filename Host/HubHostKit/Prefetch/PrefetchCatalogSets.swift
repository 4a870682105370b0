import Foundation
import GRDB

/// Live sets of categories and sources (the PCD SDK's getCategoriesWithFilter /
/// getSourcesWithFilter with a VocObjSetChangeListener), kept up to date as item sets are
/// (PrefetchLiveSet), and the user's toggles that change them: a category is selected or not, a
/// source subscribed or not (the PCD SDK: "the SDK allows sources to be toggled on or off"). The
/// catalog service's values only seed new rows (see sync): after that they are the user's.
public struct PrefetchCategorySetChange: Codable, Sendable, Equatable {
    /// `initial` for the first element, then `willChange` and `didChange` for each change.
    public var phase: PrefetchSetPhase
    /// The ids that joined the set (every id for `initial`).
    public var added: [String]
    /// The ids still in the set whose objects changed.
    public var updated: [String]
    /// The ids that left the set.
    public var removed: [String]
    /// The categories in the set after the change, in the filter's order.
    public var categories: [PrefetchCategory]
}

/// One element of a live set of sources: the set as it is, or one change to it.
public struct PrefetchSourceSetChange: Codable, Sendable, Equatable {
    /// `initial` for the first element, then `willChange` and `didChange` for each change.
    public var phase: PrefetchSetPhase
    /// The names that joined the set (every name for `initial`).
    public var added: [String]
    /// The names still in the set whose sources changed.
    public var updated: [String]
    /// The names that left the set.
    public var removed: [String]
    /// The sources in the set after the change, in the filter's order.
    public var sources: [PrefetchSource]
}

extension PrefetchEngine {
    /// The live set of categories matching `filter` (keyed by id).
    public func watchCategories(_ filter: PrefetchCategoryFilter = PrefetchCategoryFilter(), pollInterval: Double = 2) -> AsyncStream<
        PrefetchCategorySetChange
    > {
        PrefetchLiveSet.stream(
            sets: liveSets, filterKey: PrefetchLiveSet.filterKey(filter), notifications: notifications, pollInterval: pollInterval, key: { $0.id },
            read: { [self] in try self.categories(filter) },
            make: { PrefetchCategorySetChange(phase: $0.phase, added: $0.added, updated: $0.updated, removed: $0.removed, categories: $0.objects) })
    }

    /// The live set of sources matching `filter` (keyed by name).
    public func watchSources(_ filter: PrefetchSourceFilter = PrefetchSourceFilter(), pollInterval: Double = 2) -> AsyncStream<
        PrefetchSourceSetChange
    > {
        PrefetchLiveSet.stream(
            sets: liveSets, filterKey: PrefetchLiveSet.filterKey(filter), notifications: notifications, pollInterval: pollInterval, key: { $0.name },
            read: { [self] in try self.sources(filter) },
            make: { PrefetchSourceSetChange(phase: $0.phase, added: $0.added, updated: $0.updated, removed: $0.removed, sources: $0.objects) })
    }

    /// Selects or deselects categories; one answer per id (refused for an unknown id). Announced
    /// with PrefetchCatalogChanged after the commit.
    public func setSelected(_ ids: [String], _ value: Bool) throws -> [Answer] {
        try toggle(table: "category", key: "id", column: "selected", ids, value, payloadKey: "categories")
    }

    /// Subscribes to or unsubscribes from sources (by name); one answer per name.
    public func setSubscribed(_ names: [String], _ value: Bool) throws -> [Answer] {
        try toggle(table: "source", key: "name", column: "subscribed", names, value, payloadKey: "sources")
    }

    private func toggle(table: String, key: String, column: String, _ ids: [String], _ value: Bool, payloadKey: String) throws -> [Answer] {
        var changed: [String] = []
        let answers: [Answer] = try store.pool.write { db in
            try ids.map { id in
                guard let current = try Bool.fetchOne(db, sql: "SELECT \(column) FROM \(table) WHERE \(key) = ?", arguments: [id]) else {
                    return Answer(id: id, accepted: false, reason: "no \(table) '\(id)' in the catalog", state: nil)
                }
                if current == value { return Answer(id: id, accepted: true, reason: "nothing to change", state: nil) }
                try db.execute(sql: "UPDATE \(table) SET \(column) = ? WHERE \(key) = ?", arguments: [value, id])
                changed.append(id)
                return Answer(id: id, accepted: true, reason: nil, state: nil)
            }
        }
        if !changed.isEmpty {
            notifications.post(PrefetchNotificationName.catalogChanged, [payloadKey: .array(changed.map(JSONValue.string)), column: .bool(value)])
        }
        return answers
    }
}
