import Foundation
import HubHostKit
import Hummingbird

/// The plugin host's own routes: what is loaded, the host's status, and a reload of plugins.yaml.
///
///   GET  /v1/plugins         every configured instance: state, generation, library and its hash
///   GET  /v1/status          manifest, data directory, logging in force, problems, advertiser ID,
///                            location, serve's pid and generation (HostStatus: `hubhost status`)
///   POST /v1/admin/reload    read plugins.yaml again and apply the difference (as SIGHUP does);
///                            200 with the ReloadReport, or 409 `reload_refused` listing the problems
enum AdminRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let admin = router.group("/v1/admin")
        router.get("/v1/plugins") { _, _ in
            HTTPAPI.json(PluginInstanceList(host.registry, manifest: host.manifest.file))
        }
        router.get("/v1/status") { _, _ in
            // Asks the advertiser-ID and location plugins: blocking, so on the BlockingPool.
            HTTPAPI.json(try await HTTPAPI.blocking { HostStatus(host) })
        }
        admin.post("/reload") { _, _ in
            let report = try await HTTPAPI.blocking { host.reload() }
            guard report.outcome != .refused else {
                throw APIError(.conflict, report.problems.joined(separator: "\n"), code: "reload_refused")
            }
            return HTTPAPI.json(report)
        }
    }
}
