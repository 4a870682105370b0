import Foundation

/// What `hubhost hub status` shows: the hub state, the active bundle and content delivery (the
/// provider instance, the service's settings as last fetched, the last sync). Works offline.
package struct DeliveryStatus: Codable, Equatable, Sendable {
    package struct ActiveBundle: Codable, Equatable, Sendable {
        package var version: String
        package var created: String
        package var contentSource: String
        package var sha256: String?
        package var path: String
    }

    package var state: HubState
    package var activeBundle: ActiveBundle?
    /// The content_provider instance in use, or nil with `providerProblem` saying why.
    package var provider: String?
    package var providerProblem: String?
    /// hub.db_service_url, when set.
    package var serviceURL: String?
    /// The service's settings document as last fetched, or the defaults (`settingsFetchedMs` nil).
    package var settings: DeliverySettings
    package var settingsFetchedMs: Int64?
    package var lastSync: DeliveryRecord.SyncOutcome?
    package var lastSuccessMs: Int64?
}

extension ContentDelivery {
    package func status() -> DeliveryStatus {
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
