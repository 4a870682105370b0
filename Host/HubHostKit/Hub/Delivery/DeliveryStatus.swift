import Foundation

/// What `hubhost hub status` shows: the hub state, the active bundle and content delivery (the
/// provider instance, the service's settings as last fetched, the last sync). Works offline.
public struct DeliveryStatus: Codable, Equatable, Sendable {
    public struct ActiveBundle: Codable, Equatable, Sendable {
        public var version: String
        public var created: String
        public var contentSource: String
        public var sha256: String?
        public var path: String
    }

    public var state: HubState
    public var activeBundle: ActiveBundle?
    /// The content_provider instance in use, or nil with `providerProblem` saying why.
    public var provider: String?
    public var providerProblem: String?
    /// hub.db_service_url, when set.
    public var serviceURL: String?
    /// The service's settings document as last fetched, or the defaults (`settingsFetchedMs` nil).
    public var settings: DeliverySettings
    public var settingsFetchedMs: Int64?
    public var lastSync: DeliveryRecord.SyncOutcome?
    public var lastSuccessMs: Int64?
}

extension ContentDelivery {
    public func status() -> DeliveryStatus {
        let record = lastRecord
        let bundle = hub.activeBundle.map { bundle in
            DeliveryStatus.ActiveBundle(
                version: bundle.metadata.version, created: bundle.metadata.created,
                contentSource: bundle.metadata.contentSource, sha256: activeBundleSHA256, path: bundle.path)
        }
        return DeliveryStatus(
            state: hub.state, activeBundle: bundle, provider: providerInstance, providerProblem: providerProblem,
            serviceURL: hub.settings.dbServiceURL, settings: record.settings ?? DeliverySettings(),
            settingsFetchedMs: record.settingsFetchedMs, lastSync: record.lastSync, lastSuccessMs: record.lastSuccessMs)
    }
}
