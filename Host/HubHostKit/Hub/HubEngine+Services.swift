import Foundation

extension HubEngine {
    /// How often the content bundle's local notifications are checked for being due.
    public static let notificationCheckInterval: Double = 1

    /// The Content Hub's background work: its local notifications announced as they come due, and,
    /// when a content provider delivers bundles (`delivery`), the immediate download at start-up
    /// and the recurring re-syncs.
    public func services(delivery: ContentDelivery?, onError: @escaping @Sendable (String, Error) -> Void) -> [PeriodicService] {
        var services = [
            PeriodicService(name: "local notifications", every: Self.notificationCheckInterval, onError: onError) { [self] in
                try localNotifications.announceDue()
            }
        ]
        if let delivery {
            services.append(
                PeriodicService(
                    name: "content delivery", every: ContentDelivery.syncCheckInterval,
                    first: { delivery.serveStartUp() }, onError: onError
                ) {
                    if delivery.isRecurringSyncDue { _ = try delivery.sync() }
                })
        }
        return services
    }
}

extension ContentDelivery {
    /// How often the delivery service looks whether a recurring sync is due.
    public static let syncCheckInterval: Double = 1
}
