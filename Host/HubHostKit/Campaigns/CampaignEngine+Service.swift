import Foundation

extension CampaignEngine {
    /// How often the ping service looks whether a ping is due; the campaign service's
    /// nextPingMillis decides when one is.
    public static let pingCheckInterval: Double = 5

    /// The campaign engine's background work: a sync (configuration, then ping) at start and
    /// whenever a ping is due. nil when `campaigns:` names no config or ping URL (nothing to ask).
    public func pingService(settings: CampaignSettings, onError: @escaping @Sendable (String, Error) -> Void) -> PeriodicService? {
        guard settings.configURL != nil || settings.pingURL != nil else { return nil }
        let http = HTTPFetcher()
        let configURL = settings.configURL
        let pingURL = settings.pingURL
        return PeriodicService(
            name: "campaign pings", every: Self.pingCheckInterval,
            first: { [self] in
                _ = try sync(configURL: configURL, pingURL: pingURL, http: http)
            }, onError: onError
        ) { [self] in
            guard isPingDue() else { return }
            _ = try sync(configURL: configURL, pingURL: pingURL, http: http)
        }
    }
}
