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
        let hubDelivery = router.group("/v1/hub")
        hubDelivery.get("/status") { _, _ in
            guard let delivery = try host.delivery() else { throw APIError.engineOff("the Content Hub is off (hub: enabled: false)") }
            return HTTPAPI.json(try await HTTPAPI.blocking { delivery.status() })
        }
        hubDelivery.post("/sync") { _, _ in
            guard let delivery = try host.delivery() else { throw APIError.engineOff("the Content Hub is off (hub: enabled: false)") }
            do {
                return HTTPAPI.json(try await HTTPAPI.blocking { try delivery.sync() })
            } catch {
                throw APIError(.badGateway, "\(error)")
            }
        }
    }
}
