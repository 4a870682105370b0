import Foundation

extension EventEngine {
    /// The event engine's background work as one service: every `events.flush_interval` (and at
    /// once when `cache_size` events wait) it takes back the holds of processes that died, delivers
    /// what is due and purges old posted events; at shutdown it flushes one last time. The engine
    /// wakes the service through `onDeliveryDue`, which the runtime clears at shutdown.
    public func deliveryService(onError: @escaping @Sendable (String, Error) -> Void) -> PeriodicService {
        let service = PeriodicService(
            name: "event delivery", every: settings.flushInterval,
            final: { [self] in _ = flush() }, onError: onError
        ) { [self] in
            _ = try expireStaleHolds()
            _ = flush()
            _ = try purge()
        }
        onDeliveryDue = { service.wake() }
        attachFlushService(service)
        return service
    }
}
