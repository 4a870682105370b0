import Foundation

/// A live set of items (the PCD SDK's object sets: a set built from a filter, with listeners told before
/// and after each change): `watch(filter)` is an AsyncSequence of changes. The first element is the
/// set as it is (`initial`, every item added); then each change comes as `willChange` followed by
/// `didChange`, both with the ids added, updated (any field: state, progress, flags) and removed,
/// and the items after the change in the filter's order (the PCD SDK's objectsAfterChanges). How the
/// set is kept up to date: PrefetchLiveSet.
public struct PrefetchSetChange: Codable, Sendable, Equatable {
    /// The phase of a change (PrefetchSetPhase).
    public typealias Phase = PrefetchSetPhase
    /// `initial` for the first element, then `willChange` and `didChange` for each change.
    public var phase: Phase
    /// The ids that joined the set (every id for `initial`).
    public var added: [String]
    /// The ids still in the set whose objects changed.
    public var updated: [String]
    /// The ids that left the set.
    public var removed: [String]
    /// The items in the set after the change, in the filter's order.
    public var items: [PrefetchItem]
}

extension PrefetchEngine {
    /// The live set of items matching `filter`; ends when the consumer stops iterating (or cancels).
    public func watch(_ filter: PrefetchItemFilter = PrefetchItemFilter(), pollInterval: Double = 2) -> AsyncStream<PrefetchSetChange> {
        PrefetchLiveSet.stream(
            sets: liveSets, filterKey: PrefetchLiveSet.filterKey(filter), notifications: notifications, pollInterval: pollInterval,
            key: { $0.uniqueId },
            read: { [self] in try self.items(filter) },
            make: { PrefetchSetChange(phase: $0.phase, added: $0.added, updated: $0.updated, removed: $0.removed, items: $0.objects) })
    }
}
