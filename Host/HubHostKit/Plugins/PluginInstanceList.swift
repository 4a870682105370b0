/// Every configured plugin instance as one running host has it: what `GET /v1/plugins` answers and
/// `hubhost plugins list` reads back from the running serve, so both say the same.
package struct PluginInstanceList: Codable, Sendable {
    package struct Plugin: Codable, Sendable {
        package var id: String
        package var kind: String
        /// In a call past its deadline.
        package var stuck: Bool?
        /// Ejected after failing calls in a row: not called until `ejectedUntil` (ISO 8601), then probed.
        package var ejected: Bool?
        package var ejectedUntil: String?
    }

    /// Where an instance's plugin came from, when it was installed from a package (plugins add).
    package struct Package: Codable, Sendable, Equatable {
        /// The installed version and the package file it came from.
        package var version: String
        package var file: String
        /// "<trust name> (key <key id>)", or "unsigned".
        package var signer: String
        /// "verified": its files matched plugins.lock and its signer is trusted (or unsigned is
        /// allowed); "failed": they did not, and the instance did not load (`reason` says why).
        /// Decided by the package's checks alone: an instance refused for its config still runs
        /// (or would run) a verified package.
        package var verification: String
        /// The instance runs an unsigned package (`allow_unsigned: true`).
        package var allowUnsigned: Bool

        /// The package of `entry`, or nil when its plugin was not installed from one.
        package init?(_ entry: PluginRegistry.Entry) {
            guard let installed = entry.configuration.installed else { return nil }
            version = installed.lock.version
            file = installed.lock.package
            signer = installed.signerText
            allowUnsigned = entry.configuration.allowUnsigned
            // Only the package's own checks decide it: an instance that fails for its config is
            // still running a verified package.
            if case .failed(.sha256Mismatch) = entry.loadState {
                verification = "failed"
            } else {
                verification = installed.problems.isEmpty ? "verified" : "failed"
            }
        }
    }

    package struct Instance: Codable, Sendable {
        package var id: String
        /// loaded, failed or disabled (`PluginRegistry.Entry.state`), or ejected: loaded, but a
        /// plugin of it failed calls in a row and is not called for a while (`shown`).
        package var state: String
        /// Why it failed, that it is disabled, or until when and why it is ejected.
        package var reason: String?
        /// For an ejected instance: when its probe call is let through (ISO 8601).
        package var ejectedUntil: String?
        /// The reload that loaded it (0: at start).
        package var generation: Int
        package var library: String?
        package var libraryHash: String?
        /// in_process, process or wasm.
        package var isolation: String
        package var plugins: [Plugin]
        /// The plugin's id and version (plugin.yaml), the ABI its library declares, its kinds.
        package var plugin: String?
        package var version: String?
        package var abi: String?
        package var kinds: [String]?
        package var enabled: Bool?
        /// For isolation: process: this host's worker, "running (pid N)", restarting or given up.
        package var worker: String?
        package var workerCrashes: Int?
        /// Its package, when installed from one.
        package var package: Package?
    }

    /// Reloads applied since start.
    package var generation: Int
    package var instances: [Instance]
    /// The plugins.yaml the host runs (so a client can tell it asks the right one).
    package var manifest: String?

    /// The list of `registry`, a host running `manifest`.
    package init(_ registry: PluginRegistry, manifest: String) {
        generation = registry.generation
        self.manifest = manifest
        instances = registry.entries.map { entry in
            let shown = entry.shown
            let plugin = entry.configuration.plugin
            return Instance(
                id: entry.id, state: shown.state, reason: shown.reason, ejectedUntil: shown.ejectedUntil, generation: entry.generation,
                library: entry.libraryPath, libraryHash: entry.libraryHash, isolation: entry.runsIn,
                plugins: entry.plugins.map { handle in
                    let ejected = handle.ejection.ejected
                    return Plugin(
                        id: handle.pluginID, kind: handle.kind.rawValue, stuck: handle.calls.isStuck, ejected: ejected != nil,
                        ejectedUntil: ejected.map { UTCTimestamp.text(ms: Int64($0.until.timeIntervalSince1970 * 1000)) })
                },
                plugin: plugin?.id, version: plugin?.version, abi: entry.binaryABI?.description ?? plugin?.abi,
                kinds: plugin?.kinds.map(\.rawValue) ?? [], enabled: entry.configuration.enabled,
                worker: entry.worker?.stateDescription, workerCrashes: entry.worker?.totalCrashes, package: Package(entry))
        }
    }
}

extension PluginRegistry.Entry {
    /// The state every surface shows (`GET /v1/plugins`, `hubhost plugins list`): the entry's
    /// state, or `ejected` while a plugin of a loaded instance is, with until when and why.
    public var shown: (state: String, reason: String?, ejectedUntil: String?) {
        switch state {
        case .failed(let error): return (state.name, error.description, nil)
        case .disabled: return (state.name, PluginLoadError.disabled.description, nil)
        case .loaded:
            let ejected = plugins.compactMap { handle in handle.ejection.ejected.map { (handle.pluginID, $0) } }
            guard let first = ejected.map({ $0.1 }).min(by: { $0.until < $1.until }) else { return (state.name, nil, nil) }
            let until = UTCTimestamp.text(ms: Int64(first.until.timeIntervalSince1970 * 1000))
            let which = plugins.count > 1 ? " (\(ejected.map { $0.0 }.joined(separator: ", ")))" : ""
            return ("ejected", "until \(until)\(which), ejection \(first.count): \(first.reason)", until)
        }
    }
}
