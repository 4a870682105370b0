import Foundation

/// A live set of items (seed 4.2 and 4.13: a set built from a filter, with listeners told before
/// and after each change): `watch(filter)` is an AsyncSequence of changes. The first element is the
/// set as it is (`initial`, every item added); then each change comes as `willChange` followed by
/// `didChange`, both with the ids added, updated (any field: state, progress, flags) and removed,
/// and the items after the change in the filter's order (the seed's objectsAfterChanges). How the
/// set is kept up to date: PrefetchLiveSet.
public struct PrefetchSetChange: Codable, Sendable, Equatable {
    public typealias Phase = PrefetchSetPhase
    public var phase: Phase
    public var added: [String]
    public var updated: [String]
    public var removed: [String]
    public var items: [PrefetchItem]
}

extension PrefetchEngine {
    /// The live set of items matching `filter`; ends when the consumer stops iterating (or cancels).
    public func watch(_ filter: PrefetchItemFilter = PrefetchItemFilter(), pollInterval: Double = 2) -> AsyncStream<PrefetchSetChange> {
        PrefetchLiveSet.stream(sets: liveSets, filterKey: PrefetchLiveSet.filterKey(filter), notifications: notifications, pollInterval: pollInterval, key: { $0.uniqueId },
                               read: { [self] in try self.items(filter) },
                               make: { PrefetchSetChange(phase: $0.phase, added: $0.added, updated: $0.updated, removed: $0.removed, items: $0.objects) })
    }
}
