import Foundation

/// A live set of items (seed 4.2 and 4.13: a set built from a filter, with listeners told before
/// and after each change): `watch(filter)` is an AsyncSequence of changes. The first element is the
/// set as it is (`initial`, every item added); then each change comes as `willChange` followed by
/// `didChange`, both with the ids added, updated (any field: state, progress, flags) and removed,
/// and the items after the change in the filter's order (the seed's objectsAfterChanges). The set
/// is re-read after every Prefetch* notification of this process (coalesced) and every
/// `pollInterval` seconds, so changes made by another process sharing the catalog (a CLI command
/// beside serve) show too.
public struct PrefetchSetChange: Codable, Sendable, Equatable {
    public enum Phase: String, Codable, Sendable { case initial, willChange, didChange }
    public var phase: Phase
    public var added: [String]
    public var updated: [String]
    public var removed: [String]
    public var items: [PrefetchItem]
}

extension PrefetchEngine {
    /// The live set of items matching `filter`; ends when the consumer stops iterating (or cancels).
    public func watch(_ filter: PrefetchItemFilter = PrefetchItemFilter(), pollInterval: Double = 2) -> AsyncStream<PrefetchSetChange> {
        let (stream, continuation) = AsyncStream<PrefetchSetChange>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let (pokes, poke) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let token = notifications.subscribe { note in
            if note.name.hasPrefix("Prefetch") { poke.yield() }
        }
        let interval = SafeTime.durationNs(min(max(pollInterval, 0.05), 3600))
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: interval)
                poke.yield()
            }
        }
        let reader = Task { [self] in
            var previous: [String: PrefetchItem]?
            poke.yield()
            for await _ in pokes {
                if Task.isCancelled { break }
                guard let items = try? await BlockingPool.run({ [self] in try self.items(filter) }) else { continue }
                let after = Dictionary(items.map { ($0.uniqueId, $0) }, uniquingKeysWith: { first, _ in first })
                guard let before = previous else {
                    continuation.yield(PrefetchSetChange(phase: .initial, added: items.map(\.uniqueId), updated: [], removed: [], items: items))
                    previous = after
                    continue
                }
                let added = items.filter { before[$0.uniqueId] == nil }.map(\.uniqueId)
                let updated = items.filter { item in before[item.uniqueId].map { $0 != item } ?? false }.map(\.uniqueId)
                let removed = before.keys.filter { after[$0] == nil }.sorted()
                previous = after
                guard !(added.isEmpty && updated.isEmpty && removed.isEmpty) else { continue }
                continuation.yield(PrefetchSetChange(phase: .willChange, added: added, updated: updated, removed: removed, items: items))
                continuation.yield(PrefetchSetChange(phase: .didChange, added: added, updated: updated, removed: removed, items: items))
            }
            continuation.finish()
        }
        let bus = notifications
        continuation.onTermination = { _ in
            bus.unsubscribe(token)
            ticker.cancel()
            reader.cancel()
            poke.finish()
        }
        return stream
    }
}
