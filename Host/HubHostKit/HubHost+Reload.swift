import Foundation
import Logging

/// What a reload of plugins.yaml did (`HubHost.reload`, `hubhost reload`, `POST /v1/admin/reload`,
/// SIGHUP to `hubhost serve`).
public struct ReloadReport: Codable, Sendable, Equatable {
    /// How a reload ended; its raw value (`applied`, `unchanged`, `refused`) is what the JSON answer,
    /// the `PluginsReloaded` notification and the log say.
    public enum Outcome: String, Codable, Sendable {
        /// The difference was applied.
        case applied
        /// The new manifest asks for nothing different: nothing was touched.
        case unchanged
        /// Nothing was applied; `problems` says why.
        case refused
    }

    /// Whether the difference was applied, there was none, or the reload was refused.
    public var outcome: Outcome
    /// The plugin set's generation after the reload (unchanged when refused).
    public var generation: Int
    /// Instance ids, in plugins.yaml order.
    public var added: [String] = []
    /// Ids of the instances the new manifest no longer names, now retired, in the old plugins.yaml's order.
    public var removed: [String] = []
    /// Ids of the instances whose entry or library file changed, loaded anew, in plugins.yaml order.
    public var changed: [String] = []
    /// The live settings the reload changed (`events.flush_interval`, ...), sorted.
    public var settings: [String] = []
    /// Why it was refused: every problem of the new manifest (file:line:column), or the settings
    /// that cannot change without a restart.
    public var problems: [String] = []
}

extension HubHost {
    /// The settings a reload applies live beside the plugin instances and `logging:`: event
    /// delivery (the sink, its intervals, batching and retries), campaign pings, the Content Hub's
    /// download deadline and the prefetch policy. Any other change to a section makes the reload
    /// refuse: those keys are read once, when an engine opens (the server's address, the data
    /// directory, the names and values sent with every event, the hub's page policy, identity).
    /// The keys are those marked live in their section's schema (ConfigKey.live), read from the
    /// configuration reference, so the list, docs/configuration.md and docs/reload.md agree.
    public static let liveReloadKeys = Set(ConfigReference.liveKeys)

    /// Kinds whose instances the engines hold from the moment they open (the content provider of
    /// the hub and of prefetch, device conditions, download requests, id generators): changing or
    /// removing one needs a restart, and a reload naming one is refused.
    public static let kindsNeedingRestart: Set<PluginKind> = [.contentProvider, .deviceConditions, .downloadRequest, .userIDGenerator]

    /// Reads plugins.yaml again (or `manifestPath`) and applies the difference: instances added,
    /// removed, with a changed entry or whose library file changed are loaded or retired, while
    /// unchanged instances keep running untouched. The new manifest is checked whole first: with
    /// any problem nothing changes and the report lists them. New instances are created before the
    /// old ones are retired; an event is augmented wholly by the old set or wholly by the new; a
    /// retired instance is destroyed after its last call returns. Blocking (loads libraries and
    /// creates plugins): call it from a thread that may wait. One reload runs at a time.
    public func reload(manifestPath: String? = nil) -> ReloadReport {
        reloading.withLock { _ in
            let report = reloadLocked(path: manifestPath ?? manifest.file)
            RuntimeMetrics.reload(report.outcome.rawValue)
            // Notification payloads hold scalars: the ids comma-separated, the problems one per line.
            var payload: [String: JSONValue] = [
                "outcome": .string(report.outcome.rawValue), "generation": .number(Double(report.generation)),
                "added": .string(report.added.joined(separator: ",")), "removed": .string(report.removed.joined(separator: ",")),
                "changed": .string(report.changed.joined(separator: ",")),
                "settings": .string(report.settings.joined(separator: ","))
            ]
            if !report.problems.isEmpty { payload["problems"] = .string(report.problems.joined(separator: "\n")) }
            notifications.post("PluginsReloaded", payload)
            // Logged as the operator's action: at the default severity (Error) too, so the log
            // says what every reload did without turning on Info for everything else.
            switch report.outcome {
            case .refused:
                pipeline.logOperatorAction(.error, source: "hubhost", "reload refused, nothing changed: \(report.problems.joined(separator: "; "))")
            case .unchanged:
                pipeline.logOperatorAction(.info, source: "hubhost", "reload: plugins.yaml asks for nothing new (generation \(report.generation))")
            case .applied:
                pipeline.logOperatorAction(
                    .info, source: "hubhost",
                    "reloaded plugins.yaml (generation \(report.generation)): added [\(report.added.joined(separator: ", "))], removed [\(report.removed.joined(separator: ", "))], changed [\(report.changed.joined(separator: ", "))], settings [\(report.settings.joined(separator: ", "))]"
                )
            }
            return report
        }
    }

    private func reloadLocked(path: String) -> ReloadReport {
        let old = manifest
        let generation = registry.generation
        func refused(_ problems: [String]) -> ReloadReport { ReloadReport(outcome: .refused, generation: generation, problems: problems) }
        let new: HostManifest
        do { new = try HostManifest.load(path: path) } catch let error as ManifestError {
            return refused(error.diagnostics.map(\.description))
        } catch {
            return refused(["\(path): \(error)"])
        }
        guard new.diagnostics.isEmpty else { return refused(new.diagnostics.map(\.description)) }
        var problems: [String] = []
        if new.dataDirectory != old.dataDirectory {
            problems.append("data_dir: changed from \(old.dataDirectory) to \(new.dataDirectory): it needs a restart")
        }
        var liveChanges: Set<String> = []
        let oldSettings = old.effectiveSettings
        for (section, settings) in new.effectiveSettings.sorted(by: { $0.key < $1.key }) {
            let before = Dictionary(oldSettings[section, default: []].map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
            for setting in settings where before[setting.key] != setting.value {
                if Self.liveReloadKeys.contains(setting.key) {
                    liveChanges.insert(setting.key)
                } else {
                    problems.append("\(setting.key): changed, and it is read only at start: it needs a restart of serve")
                }
            }
        }
        let plan = registry.plan(new)
        for id in plan.changed + plan.removed {
            guard let entry = registry.entry(id: id) else { continue }
            for kind in Set(entry.plugins.map(\.kind)).intersection(Self.kindsNeedingRestart).sorted(by: { $0.rawValue < $1.rawValue }) {
                problems.append(
                    "plugins: instance '\(id)' (\(kind.rawValue)) is held by an engine from start: changing or removing it needs a restart")
            }
        }
        guard problems.isEmpty else { return refused(problems) }
        // The built-in collector holds collector_url and post_timeout: a change to them makes a new one.
        let collectorChanged = !liveChanges.isDisjoint(with: ["events.collector_url", "events.post_timeout"])
        let sinkChanged =
            new.events.sink != old.events.sink || (plan.changed + plan.removed + plan.added).contains(new.events.sink) || collectorChanged
        let loggingChanged = new.logging != old.logging
        guard !plan.added.isEmpty || !plan.removed.isEmpty || !plan.changed.isEmpty || sinkChanged || loggingChanged || !liveChanges.isEmpty
        else {
            setManifest(new)
            return ReloadReport(outcome: .unchanged, generation: generation)
        }
        let change = registry.reload(new)
        guard change.problems.isEmpty else { return refused(change.problems) }
        setManifest(new)
        pipeline.setFilter(new.logging)
        pipeline.attach(logDestinations())
        let (events, campaigns, hub, prefetch) = engines.withLock { ($0.events, $0.campaigns, $0.hub, $0.prefetch) }
        if let events {
            events.applyLiveSettings(new.events)
            events.replaceAugmentations(registry.plugins(of: .augmentation).map(AugmentationPlugin.init))
            if sinkChanged {
                // Between flushes: a flush in progress ends with the old sink first.
                events.delivery.replaceSink(eventSink() ?? HTTPCollectorSink(settings: new.events, http: HTTPFetcher()))
            }
        }
        if let campaigns {
            campaigns.applyLiveSettings(new.campaigns)
            campaigns.replaceOperators(OperatorSet(registry.plugins(of: .triggerOperator)))
        }
        hub?.applyLiveSettings(new.hub)
        prefetch?.applyLiveSettings(new.prefetch)
        registry.retire(change.retired)
        return ReloadReport(
            outcome: .applied, generation: change.generation, added: change.added, removed: change.removed, changed: change.changed,
            settings: liveChanges.sorted())
    }
}
