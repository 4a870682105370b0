import Foundation
import HubHostKit
import Hummingbird

/// The plugin host's own routes: what is loaded, and a reload of plugins.yaml.
///
///   GET  /v1/plugins         every configured instance: state, generation, library and its hash
///   POST /v1/admin/reload    read plugins.yaml again and apply the difference (as SIGHUP does);
///                            200 with the ReloadReport, or 409 `reload_refused` listing the problems
enum AdminRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let admin = router.group("/v1/admin")
        router.get("/v1/plugins") { _, _ in
            HTTPAPI.json(PluginInstanceList(host.registry, manifest: host.manifest.file))
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
