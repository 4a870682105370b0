import Foundation

extension MobileIdentityManager {
    /// How often a merge left unfinished in the journal (by a crash or a failure) is tried again.
    public static let journalRetryInterval: Double = 60

    /// The identity manager's background work: a pending merge finished at start, then retried
    /// every `journalRetryInterval` seconds until it completes.
    public func journalService(onError: @escaping @Sendable (String, Error) -> Void) -> PeriodicService {
        PeriodicService(
            name: "identity journal", every: Self.journalRetryInterval, first: { [self] in _ = try resumePendingMerge() },
            onError: onError
        ) { [self] in _ = try resumePendingMerge() }
    }
}
