import Foundation

/// getItemWithContentIds:sourceName: (as in the PCD SDK): the items of a source by their contentIds;
/// those not in the local catalog are asked of the catalog service (`prefetch/items`), at most
/// 3 attempts `lookup_retry_delay` apart (10 s, the PCD SDK's) when the service cannot be reached,
/// and join the catalog as Discovered. The answer lists what was not found (the PCD SDK's error).
extension PrefetchEngine {
    /// What `lookup` found.
    public struct LookupResult: Codable, Sendable, Equatable {
        /// The source's items with the contentIds asked for, from the catalog or newly discovered.
        public var items: [PrefetchItem]
        /// contentIds neither in the catalog nor known to the service.
        public var missing: [String]
    }

    /// The most contentIds one look-up may name.
    static let maxLookup = 500
    /// The PCD SDK's attempts for a metadata look-up.
    static let lookupAttempts = 3

    /// The items of `source` with `contentIds`, asking the catalog service for those not stored.
    /// Blocks (it may sleep between attempts): call it off the concurrency pool. Throws
    /// PrefetchError.invalid for 0 or more than 500 ids, or the last error when every attempt failed.
    public func lookup(contentIds: [String], source: String) throws -> LookupResult {
        let wanted = Array(Set(contentIds)).sorted()
        guard !wanted.isEmpty, wanted.count <= Self.maxLookup else { throw PrefetchError.invalid("name 1 to \(Self.maxLookup) contentIds") }
        func local() throws -> [PrefetchItem] {
            try items(PrefetchItemFilter(contentIds: wanted, source: source))
        }
        var found = try local()
        var unknown = wanted.filter { id in !found.contains { $0.contentId == id } }
        if !unknown.isEmpty, let catalog, let registration = try store.meta("registration_id") {
            let device = try deviceID()
            var answer: CatalogProtocol.LookupAnswer?
            var lastError: Error?
            for attempt in 1...Self.lookupAttempts {
                do {
                    answer = try catalog.lookup(deviceID: device, registration: registration, source: source, contentIds: unknown)
                    break
                } catch {
                    lastError = error
                    if attempt < Self.lookupAttempts { Thread.sleep(forTimeInterval: settings.lookupRetryDelay) }
                }
            }
            guard let answer else { throw lastError ?? PrefetchError.service("the look-up failed") }
            // Only what was asked for, of the source asked for.
            let entries = answer.items.filter { $0.source == source && unknown.contains($0.contentId) }
            for entry in entries {
                do { try CatalogProtocol.checkItem(entry) } catch { throw PrefetchError.service("\(error)") }
            }
            let changes = try apply(CatalogProtocol.CatalogDelta(cursor: nil, items: entries), cursor: nil)
            for (item, previous) in changes.transitions { announceState(item, previous: previous) }
            if !changes.discovered.isEmpty {
                notifications.post(PrefetchNotificationName.itemsDiscovered, ["ids": .array(changes.discovered.map(JSONValue.string))])
            }
            found = try local()
            unknown = wanted.filter { id in !found.contains { $0.contentId == id } }
        }
        return LookupResult(items: found, missing: unknown)
    }
}
