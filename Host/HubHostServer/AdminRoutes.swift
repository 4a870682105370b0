import Foundation
import HubHostKit
import Hummingbird

/// The plugin host's own routes: what is loaded, and a reload of plugins.yaml.
///
///   GET  /v1/plugins         every configured instance: state, generation, library and its hash
///   POST /v1/admin/reload    read plugins.yaml again and apply the difference (as SIGHUP does);
///                            200 with the ReloadReport, or 409 `reload_refused` listing the problems
enum AdminRoutes {
    struct PluginList: Encodable {
        struct Plugin: Encodable {
            var id: String
            var kind: String
            var stuck: Bool
        }

        struct Instance: Encodable {
            var id: String
            var state: String
            var reason: String?
            var generation: Int
            var library: String?
            var libraryHash: String?
            var isolation: String
            var plugins: [Plugin]
            /// The plugin's id and version (plugin.yaml), the ABI its library declares, its kinds.
            var plugin: String?
            var version: String?
            var abi: String?
            var kinds: [String]
            var enabled: Bool
            /// For isolation: process: this serve's worker, "running (pid N)", restarting or given up.
            var worker: String?
            var workerCrashes: Int?
        }

        var generation: Int
        var instances: [Instance]
        /// The plugins.yaml this serve runs (so a client can tell it is asking the right one).
        var manifest: String
    }

    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let admin = router.group("/v1/admin")
        router.get("/v1/plugins") { _, _ in
            let registry = host.registry
            let instances = registry.entries.map { entry in
                var reason: String?
                if case .failed(let error) = entry.state { reason = "\(error)" }
                if case .disabled = entry.state { reason = PluginLoadError.disabled.description }
                let manifest = entry.configuration.plugin
                return PluginList.Instance(
                    id: entry.id, state: entry.state.name, reason: reason, generation: entry.generation, library: entry.libraryPath,
                    libraryHash: entry.libraryHash, isolation: entry.runsIn,
                    plugins: entry.plugins.map { PluginList.Plugin(id: $0.pluginID, kind: $0.kind.rawValue, stuck: $0.calls.isStuck) },
                    plugin: manifest?.id, version: manifest?.version, abi: entry.binaryABI?.description ?? manifest?.abi,
                    kinds: manifest?.kinds.map(\.rawValue) ?? [], enabled: entry.configuration.enabled,
                    worker: entry.worker?.stateDescription, workerCrashes: entry.worker?.totalCrashes)
            }
            return HTTPAPI.json(PluginList(generation: registry.generation, instances: instances, manifest: host.manifest.file))
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
