import Foundation

/// The machinery every live set shares (items, categories, sources; seed 4.2 and 4.13): a set is
/// re-read after every Prefetch* notification of this process (coalesced: a burst of changes is
/// one re-read) and every `pollInterval` seconds, so changes another process makes to the shared
/// catalog (a CLI command beside serve) show too. The first element is the set as it is (every
/// object added); then each change comes as `willChange` then `didChange` with the keys added,
/// updated (any field) and removed and the objects after the change in the filter's order.
public enum PrefetchSetPhase: String, Codable, Sendable { case initial, willChange, didChange }

enum PrefetchLiveSet {
    /// One difference between two readings of a set.
    struct Diff<Object> {
        var phase: PrefetchSetPhase
        var added: [String]
        var updated: [String]
        var removed: [String]
        var objects: [Object]
    }

    /// The stream of a set read by `read`, each object known by `key`; `make` builds the public change.
    static func stream<Object: Equatable & Sendable, Change: Sendable>(
        notifications: HostNotifications, pollInterval: Double, key: @escaping @Sendable (Object) -> String,
        read: @escaping @Sendable () throws -> [Object], make: @escaping @Sendable (Diff<Object>) -> Change
    ) -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream<Change>.makeStream(bufferingPolicy: .bufferingNewest(256))
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
        let reader = Task {
            var previous: [String: Object]?
            poke.yield()
            for await _ in pokes {
                if Task.isCancelled { break }
                guard let objects = try? await BlockingPool.run(read) else { continue }
                let after = Dictionary(objects.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
                guard let before = previous else {
                    continuation.yield(make(Diff(phase: .initial, added: objects.map(key), updated: [], removed: [], objects: objects)))
                    previous = after
                    continue
                }
                let added = objects.filter { before[key($0)] == nil }.map(key)
                let updated = objects.filter { object in before[key(object)].map { $0 != object } ?? false }.map(key)
                let removed = before.keys.filter { after[$0] == nil }.sorted()
                previous = after
                guard !(added.isEmpty && updated.isEmpty && removed.isEmpty) else { continue }
                continuation.yield(make(Diff(phase: .willChange, added: added, updated: updated, removed: removed, objects: objects)))
                continuation.yield(make(Diff(phase: .didChange, added: added, updated: updated, removed: removed, objects: objects)))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            notifications.unsubscribe(token)
            ticker.cancel()
            reader.cancel()
            poke.finish()
        }
        return stream
    }
}
