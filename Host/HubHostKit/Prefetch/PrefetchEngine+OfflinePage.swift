import Foundation

extension PrefetchEngine {
    /// Applies one catalog page (a JSON document of the catalog service protocol) as if the
    /// service had sent it, without a registration and without moving the sync cursor: for tools
    /// that build a catalog offline (`hubhost bench prefetch` seeds its 100,000 items this way).
    /// Every item is checked as in a sync; a page with one invalid item is refused whole.
    @discardableResult
    public func applyCatalogPage(_ json: Data) throws -> SyncReport {
        let delta: CatalogProtocol.CatalogDelta
        do { delta = try JSONDecoder().decode(CatalogProtocol.CatalogDelta.self, from: json) } catch {
            throw PrefetchError.invalid("not a catalog page: \(error)")
        }
        for item in delta.items ?? [] {
            do { try CatalogProtocol.checkItem(item) } catch { throw PrefetchError.invalid("\(error)") }
        }
        let changes = try apply(delta, cursor: nil)
        for (item, previous) in changes.transitions { announceState(item, previous: previous) }
        if !changes.discovered.isEmpty {
            notifications.post(PrefetchNotificationName.itemsDiscovered, ["ids": .array(changes.discovered.map(JSONValue.string))])
        }
        var report = SyncReport(pages: 1, discovered: changes.discovered, updated: changes.updated, evicted: changes.evicted, cursor: "")
        for merge in changes.merges { report.merged[merge.imported.uniqueId] = merge.item.uniqueId }
        return report
    }
}
