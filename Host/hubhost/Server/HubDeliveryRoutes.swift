import Foundation
import HubHostKit
import Hummingbird

/// Content delivery in `hubhost serve`: the sync route and the start-up / recurring syncs.
///
///   POST /v1/hub/sync     sync now: 200 with the SyncReport, 502 with {"error"} when it failed
///                         (the previous bundle stays active), 404 when the hub is off
///   GET  /v1/hub/status   what `hubhost hub status --json` prints: state, active bundle, provider,
///                         the service's delivery settings as last fetched, the last sync
enum HubDeliveryRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        router.get("/v1/hub/status") { _, _ in
            guard let delivery = try host.delivery() else { return HTTPAPI.failure(.notFound, "the Content Hub is off (hub: enabled: false)") }
            return HTTPAPI.json(try await HTTPAPI.blocking { delivery.status() })
        }
        router.post("/v1/hub/sync") { _, _ in
            guard let delivery = try host.delivery() else { return HTTPAPI.failure(.notFound, "the Content Hub is off (hub: enabled: false)") }
            do {
                return HTTPAPI.json(try await HTTPAPI.blocking { try delivery.sync() })
            } catch {
                return HTTPAPI.failure(.badGateway, "\(error)")
            }
        }
    }

    /// Runs until cancelled: the initial download when the service's mode is immediate, then a
    /// re-sync whenever the service's recurring refreshInterval has passed.
    static func run(host: HubHost) async {
        guard let delivery = try? host.delivery() else { return }
        _ = try? await HTTPAPI.blocking { delivery.serveStartUp() }
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: 1_000_000_000)
            if Task.isCancelled { break }
            if delivery.isRecurringSyncDue { _ = try? await HTTPAPI.blocking { try delivery.sync() } }
        }
    }
}
