import Foundation

extension CampaignEngine {
    /// How often the ping service looks whether a ping is due; the campaign service's
    /// nextPingMillis decides when one is.
    public static let pingCheckInterval: Double = 5

    /// The campaign engine's background work: a sync (configuration, then ping) at start and
    /// whenever a ping is due or a reload changed the endpoints; nothing while `campaigns:` names
    /// no config or ping URL (nothing to ask).
    package func pingService(settings: CampaignSettings, onError: @escaping @Sendable (String, Error) -> Void) -> PeriodicService {
        endpoints.withLock { $0 = (settings.configURL, settings.pingURL, false) }
        let http = HTTPFetcher()
        let service = PeriodicService(
            name: "campaign pings", every: Self.pingCheckInterval,
            first: { [self] in
                let (configURL, pingURL, _) = endpoints.withLock { $0 }
                guard configURL != nil || pingURL != nil else { return }
                try syncOrBackOff(configURL: configURL, pingURL: pingURL, http: http)
            }, onError: onError
        ) { [self] in
            let (configURL, pingURL, changed) = endpoints.withLock { state in
                defer { state.changed = false }
                return state
            }
            guard configURL != nil || pingURL != nil, changed || isPingDue() else { return }
            try syncOrBackOff(configURL: configURL, pingURL: pingURL, http: http)
        }
        lock.withLock { pings = service }
        return service
    }

    /// A sync; a failed one moves the next try on by the backoff (`pingFailed`) and is rethrown.
    private func syncOrBackOff(configURL: String?, pingURL: String?, http: HTTPFetcher) throws {
        do {
            _ = try sync(configURL: configURL, pingURL: pingURL, http: http)
        } catch {
            pingFailed()
            throw error
        }
    }

    /// Applies a reload's `campaigns:` section, whose changes are live keys only (`HubHost.reload`
    /// checks): messages are matched with the new context_rule from now on, and new endpoints are
    /// asked at once.
    package func applyLiveSettings(_ new: CampaignSettings) {
        contextRule = new.contextRule
        frequencyCaps = new.frequencyCaps
        let moved = endpoints.withLock { state in
            guard state.configURL != new.configURL || state.pingURL != new.pingURL else { return false }
            state = (new.configURL, new.pingURL, true)
            return true
        }
        if moved { lock.withLock { pings }?.wake() }
    }
}
