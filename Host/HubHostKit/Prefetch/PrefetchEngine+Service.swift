import Foundation

extension PrefetchEngine {
    /// How often the prefetch engine takes a round: registration with its backoff, catalog syncs
    /// when due, the policy, and the download queue.
    public static let roundInterval: Double = 1

    /// The prefetch engine's background work as one service.
    public func roundService(onError: @escaping @Sendable (String, Error) -> Void) -> PeriodicService {
        PeriodicService(name: "prefetch", every: Self.roundInterval, onError: onError) { [self] in try round() }
    }
}
