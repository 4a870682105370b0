import Foundation

/// getItemWithContentIds:sourceName: (seed 4.3.2.2): the items of a source by their contentIds;
/// those not in the local catalog are asked of the catalog service (`prefetch/items`), at most
/// 3 attempts `lookup_retry_delay` apart (10 s, the seed's) when the service cannot be reached,
/// and join the catalog as Discovered. The answer lists what was not found (the seed's error).
extension PrefetchEngine {
    public struct LookupResult: Codable, Sendable, Equatable {
        public var items: [PrefetchItem]
        /// contentIds neither in the catalog nor known to the service.
        public var missing: [String]
    }

    /// The most contentIds one look-up may name.
    static let maxLookup = 500
    /// The seed's attempts for a metadata look-up.
    static let lookupAttempts = 3

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
