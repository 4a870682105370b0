import Foundation
import Synchronization

/// The machinery every live set shares (items, categories, sources): a set is
/// re-read after every Prefetch* notification of this process (coalesced: a burst of changes is
/// one re-read) and every `pollInterval` seconds, so changes another process makes to the shared
/// catalog (a CLI command beside serve) show too. The first element is the set as it is (every
/// object added); then each change comes as `willChange` then `didChange` with the keys added,
/// updated (any field) and removed and the objects after the change in the filter's order.
///
/// Listeners of the same set (same kind, filter and poll interval) share one reading per change
/// (PrefetchLiveSetGroup): one re-read and one diff, fanned out to each of them, so a change costs
/// one re-read per distinct filter, not one per listener.
public enum PrefetchSetPhase: String, Codable, Sendable {
    /// The first element of a stream: the set as it is, every object in it listed as added.
    case initial
    /// A change, announced first: the keys added, updated (any field) and removed, and the set after the change.
    case willChange
    /// The same change again, right after its `willChange` (the two calls of the PCD SDK's change listener).
    case didChange
}

enum PrefetchLiveSet {
    /// One difference between two readings of a set.
    struct Diff<Object>: Sendable where Object: Sendable {
        var phase: PrefetchSetPhase
        var added: [String]
        var updated: [String]
        var removed: [String]
        var objects: [Object]
    }

    /// What tells two sets apart: the filter as JSON with sorted keys (equal filters, equal keys).
    static func filterKey<Filter: Encodable>(_ filter: Filter) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(filter)).map { String(decoding: $0, as: UTF8.self) } ?? UUID().uuidString
    }

    /// The stream of a set read by `read`, each object known by `key`; `make` builds the public
    /// change. The set is shared (`sets`) with every other listener of the same `filterKey`.
    static func stream<Object: Equatable & Sendable, Change: Sendable>(
        sets: PrefetchLiveSets, filterKey: String,
        notifications: HostNotifications, pollInterval: Double, key: @escaping @Sendable (Object) -> String,
        read: @escaping @Sendable () throws -> [Object], make: @escaping @Sendable (Diff<Object>) -> Change
    ) -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream<Change>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let interval = min(max(pollInterval, 0.05), 3600)
        let groupKey = "\(Object.self) \(interval) \(filterKey)"
        let id = sets.join(groupKey, continuation) {
            PrefetchLiveSetGroup(notifications: notifications, pollInterval: interval, key: key, read: read, make: make)
        }
        continuation.onTermination = { _ in sets.leave(groupKey, id: id, of: PrefetchLiveSetGroup<Object, Change>.self) }
        return stream
    }
}

/// The shared live sets of one engine, by set: a set's group starts with its first listener and
/// stops when its last one leaves (joining and leaving under one lock, so a listener never joins a
/// group that is stopping).
/// Sendable: the groups and the last listener id live in a Mutex.
final class PrefetchLiveSets: Sendable {
    private let state = Mutex<(groups: [String: any AnyObject & Sendable], nextID: UInt64)>(([:], 0))

    func join<Object, Change>(
        _ key: String, _ continuation: AsyncStream<Change>.Continuation,
        create: () -> PrefetchLiveSetGroup<Object, Change>
    ) -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            let group: PrefetchLiveSetGroup<Object, Change>
            if let existing = state.groups[key] as? PrefetchLiveSetGroup<Object, Change> {
                group = existing
            } else {
                group = create()
                state.groups[key] = group
            }
            group.add(state.nextID, continuation)
            return state.nextID
        }
    }

    func leave<Object, Change>(_ key: String, id: UInt64, of type: PrefetchLiveSetGroup<Object, Change>.Type) {
        state.withLock { state in
            guard let group = state.groups[key] as? PrefetchLiveSetGroup<Object, Change> else { return }
            if group.remove(id) {
                state.groups[key] = nil
                group.stop()
            }
        }
    }

    /// How many sets are being kept (one per distinct filter listened to).
    var count: Int { state.withLock { $0.groups.count } }
}

/// One live set and its listeners: one reader re-reads the set (on the BlockingPool) after each
/// poke, diffs the reading against the one before and gives every listener the same
/// willChange/didChange; a listener that joins gets `initial` from the first reading made after it
/// joined (so it starts from the set as it is then, and from there sees every later change).
/// Sendable: the listeners and the reader task live in a Mutex; the rest are `let`s of Sendable types.
final class PrefetchLiveSetGroup<Object: Equatable & Sendable, Change: Sendable>: Sendable {
    private struct Listener {
        var continuation: AsyncStream<Change>.Continuation
        /// Has had its `initial`: gets the diffs of later readings.
        var started: Bool
    }

    private struct State {
        var listeners: [UInt64: Listener] = [:]
        /// Set once in init (the task needs `self`), cancelled by `stop`.
        var reader: Task<Void, Never>?
    }
    private let state = Mutex(State())
    private let poke: AsyncStream<Void>.Continuation
    private let notifications: HostNotifications
    private let token: UUID
    private let ticker: Task<Void, Never>

    init(
        notifications: HostNotifications, pollInterval: Double, key: @escaping @Sendable (Object) -> String,
        read: @escaping @Sendable () throws -> [Object], make: @escaping @Sendable (PrefetchLiveSet.Diff<Object>) -> Change
    ) {
        let (pokes, poke) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.poke = poke
        self.notifications = notifications
        token = notifications.subscribe { note in
            if note.name.hasPrefix("Prefetch") { poke.yield() }
        }
        let interval = SafeTime.durationNs(pollInterval)
        ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: interval)
                poke.yield()
            }
        }
        let reader = Task { [weak self] in
            var previous: [String: Object]?
            for await _ in pokes {
                if Task.isCancelled { break }
                // The listeners waiting for their initial before this reading starts get it from this reading.
                guard let waiting = self?.waitingIDs() else { break }
                let before = previous
                guard
                    let reading = try? await BlockingPool.run({ () -> ([String: Object], [Object], PrefetchLiveSet.Diff<Object>?) in
                        let objects = try read()
                        let after = Dictionary(objects.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
                        guard let before else { return (after, objects, nil) }
                        let added = objects.filter { before[key($0)] == nil }.map(key)
                        let updated = objects.filter { object in before[key(object)].map { $0 != object } ?? false }.map(key)
                        let removed = before.keys.filter { after[$0] == nil }.sorted()
                        guard !(added.isEmpty && updated.isEmpty && removed.isEmpty) else { return (after, objects, nil) }
                        return (
                            after, objects,
                            PrefetchLiveSet.Diff(phase: .willChange, added: added, updated: updated, removed: removed, objects: objects)
                        )
                    })
                else { continue }
                previous = reading.0
                guard let self else { break }
                let (changed, starting) = self.state.withLock {
                    state -> ([AsyncStream<Change>.Continuation], [AsyncStream<Change>.Continuation]) in
                    let changed = state.listeners.values.filter(\.started).map(\.continuation)
                    var starting: [AsyncStream<Change>.Continuation] = []
                    for id in waiting {
                        guard var listener = state.listeners[id] else { continue }
                        listener.started = true
                        state.listeners[id] = listener
                        starting.append(listener.continuation)
                    }
                    return (changed, starting)
                }
                if var diff = reading.2, !changed.isEmpty {
                    let will = make(diff)
                    diff.phase = .didChange
                    let did = make(diff)
                    for continuation in changed {
                        continuation.yield(will)
                        continuation.yield(did)
                    }
                }
                if !starting.isEmpty {
                    let initial = make(PrefetchLiveSet.Diff(phase: .initial, added: reading.1.map(key), updated: [], removed: [], objects: reading.1))
                    for continuation in starting { continuation.yield(initial) }
                }
            }
        }
        state.withLock { $0.reader = reader }
    }

    /// The listeners still waiting for their initial.
    private func waitingIDs() -> [UInt64] {
        state.withLock { $0.listeners.filter { !$0.value.started }.map(\.key) }
    }

    /// A new listener: it waits for the next reading, which this asks for.
    func add(_ id: UInt64, _ continuation: AsyncStream<Change>.Continuation) {
        state.withLock { $0.listeners[id] = Listener(continuation: continuation, started: false) }
        poke.yield()
    }

    /// Forgets a listener; true when it was the last one.
    func remove(_ id: UInt64) -> Bool {
        state.withLock { state in
            state.listeners[id] = nil
            return state.listeners.isEmpty
        }
    }

    func stop() {
        notifications.unsubscribe(token)
        ticker.cancel()
        state.withLock { $0.reader }?.cancel()
        poke.finish()
    }
}
