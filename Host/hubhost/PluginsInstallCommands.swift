import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost plugins add | upgrade | remove | verify`: installed plugin packages (PluginInstaller).
struct PluginsAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Verify a plugin package and install it as a new instance, into the running serve when there is one.",
        discussion: """
            The package's signature (PKG.minisig beside it) must verify with a key plugins.yaml's \
            trust: holds for the plugin's id, unless --allow-unsigned. Then the whole package is \
            checked (every file's SHA-256, its layout, requires:, the library for this machine), \
            installed into <data_dir>/plugins/<id>/<version>/, recorded in plugins.lock, and the \
            instance is written to plugins.d/<instance>.yaml (plugins.yaml gains include: \
            plugins.d/*.yaml when it has no include:). When a hubhost serve runs this manifest it \
            reloads; otherwise the instance is loaded and created here as a check. Any failure puts \
            every file back. Exits 1 when refused.
            """)

    @Argument(help: ArgumentHelp("The package (.hhp).", valueName: "package"))
    var package: String

    @Option(help: ArgumentHelp("The instance id (default: the plugin's id).", valueName: "id"))
    var id: String?

    @Option(name: .customLong("set"), help: ArgumentHelp("A config value of the instance (repeatable).", valueName: "key=value"))
    var settings: [String] = []

    @Flag(help: "Install an unsigned package; the instance then says allow_unsigned: true, which every listing shows.")
    var allowUnsigned = false

    @OptionGroup var target: InstallTarget
    @OptionGroup var output: JSONFlag

    func run() throws {
        var pairs: [(key: String, value: String)] = []
        for setting in settings {
            guard let equals = setting.firstIndex(of: "="), equals != setting.startIndex else {
                throw ValidationError("--set takes key=value, not '\(setting)'")
            }
            pairs.append((String(setting[..<equals]), String(setting[setting.index(after: equals)...])))
        }
        try target.run(output: output) {
            (installer: PluginInstaller, apply: PluginInstaller.Apply) throws(PluginInstaller.Refusal) -> PluginInstaller.Report in
            try installer.add(package: package, instanceID: id, settings: pairs, allowUnsigned: allowUnsigned, apply: apply)
        }
    }
}

struct PluginsUpgradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Install a new version of an installed plugin for its instances, rolling back by itself if it fails to load.",
        discussion: """
            Verifies the package as add does and installs the new version beside the old, then \
            points plugins.lock at it and reloads the running serve (or loads and creates each \
            instance here when no serve runs). When the new version does not load or create, the \
            lock points back at the old version, which the serve never stopped running, and the new \
            files are removed: exits 1 saying it rolled back. On success the old version's files are removed.
            """)

    @Argument(help: ArgumentHelp("The package (.hhp) of the new version.", valueName: "package"))
    var package: String

    @Flag(help: "Accept an unsigned package.")
    var allowUnsigned = false

    @OptionGroup var target: InstallTarget
    @OptionGroup var output: JSONFlag

    func run() throws {
        try target.run(output: output) {
            (installer: PluginInstaller, apply: PluginInstaller.Apply) throws(PluginInstaller.Refusal) -> PluginInstaller.Report in
            try installer.upgrade(package: package, allowUnsigned: allowUnsigned, apply: apply)
        }
    }
}

struct PluginsRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Retire an instance added by plugins add (reloading serve), then remove its plugin's files when nothing uses them.",
        discussion: """
            Deletes plugins.d/<id>.yaml and reloads the running serve, which retires the instance \
            once its calls in flight return. When no other instance uses the plugin, it is removed \
            from plugins.lock and its files from <data_dir>/plugins/. An instance written in \
            plugins.yaml itself is refused: remove it there. ID may also name an installed plugin \
            no instance uses. Exits 1 when refused.
            """)

    @Argument(help: ArgumentHelp("The instance id (or an installed plugin's id).", valueName: "id"))
    var id: String

    @OptionGroup var target: InstallTarget
    @OptionGroup var output: JSONFlag

    func run() throws {
        try target.run(output: output) {
            (installer: PluginInstaller, apply: PluginInstaller.Apply) throws(PluginInstaller.Refusal) -> PluginInstaller.Report in
            try installer.remove(id, apply: apply)
        }
    }
}

struct PluginsVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every installed plugin's files against plugins.lock, its package and its signature.",
        discussion: """
            Offline. For each plugin in plugins.lock: every installed file has the SHA-256 the lock \
            records and no file was added; the package kept beside it is the one installed and still \
            opens whole; its signature verifies with a key trust: holds for the plugin's id (or it is \
            unsigned and its instances say allow_unsigned: true). Exits 1 when any check fails.
            """)

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    func run() throws {
        let results: [PluginInstaller.Verification]
        do {
            results = try PluginInstaller(manifestFile: manifestOption.manifest).verify()
        } catch {
            Output.error("verify: \(error)")
            throw ExitCode.failed
        }
        if output.json {
            Output.json(results)
        } else if results.isEmpty {
            print("no plugins installed from packages (plugins.lock lists none)")
        } else {
            Output.table(
                ["PLUGIN", "VERSION", "SIGNER", "STATE", "INSTANCES"],
                results.map { [$0.id, $0.version, $0.signer, $0.state, $0.instances.joined(separator: ", ")] })
            for result in results { for problem in result.problems { Output.error("\(result.id): \(problem)") } }
        }
        if results.contains(where: { $0.state != "verified" }) { throw ExitCode.failed }
    }
}

/// The manifest and the server of the install commands, and how they apply a change: a reload of
/// the serve running the manifest, or, when none answers, a trial load in this process.
struct InstallTarget: ParsableArguments {
    @OptionGroup var manifestOption: ManifestOption

    @Option(help: "The running serve, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).")
    var url: String?

    func run(
        output: JSONFlag, _ body: (PluginInstaller, PluginInstaller.Apply) throws(PluginInstaller.Refusal) -> PluginInstaller.Report
    ) throws {
        let installer = PluginInstaller(manifestFile: manifestOption.manifest)
        let report: PluginInstaller.Report
        do {
            report = try body(installer, apply)
        } catch {
            Output.error("\(error.description)")
            throw ExitCode.failed
        }
        if output.json {
            Output.json(report)
            return
        }
        var line = "\(report.action): \(report.plugin)"
        if let version = report.version { line += " \(report.previousVersion.map { "\($0) -> " } ?? "")\(version)" }
        if let instance = report.instance { line += ", instance '\(instance)'" }
        print(line)
        if let signer = report.signer { print("  signer:   \(signer)") }
        if let folder = report.folder { print("  files:    \(folder)") }
        if let file = report.instanceFile { print("  instance: \(file)") }
        if let applied = report.applied { print("  \(applied.how): \(applied.detail)") }
    }

    /// Applies a change: reloads the serve of this manifest when one answers, else loads and creates
    /// `instances` in this process as a check.
    func apply(_ manifest: HostManifest, _ instances: [String]) throws(PluginInstaller.Refusal) -> PluginInstaller.Applied {
        if let server = manifestOption.runningServe(url) {
            var headers = ["Content-Length": "0"]
            if let token = server.token { headers["Authorization"] = "Bearer \(token)" }
            let endpoint = server.url + "/v1/admin/reload"
            switch HTTPFetcher().fetch("POST", endpoint, headers: headers, timeoutSeconds: 120) {
            case .failure(let failure):
                // The answer can be lost after serve reloaded: ask what it runs before anything is
                // rolled back, so the files on disk never go back under a serve that runs the change.
                if let confirmed = Self.confirmReload(server, before: server.plugins.generation, manifest: manifest, instances: instances) {
                    return confirmed
                }
                throw PluginInstaller.Refusal(
                    "the serve at \(server.url) did not answer the reload (\(failure)), and GET /v1/plugins does not show it applied")
            case .success(let response):
                guard response.status == 200, let report = try? JSONDecoder().decode(ReloadReport.self, from: response.body) else {
                    let report = try? JSONDecoder().decode(ReloadReport.self, from: response.body)
                    let problems = report?.problems.joined(separator: "\n") ?? String(decoding: response.body.prefix(4096), as: UTF8.self)
                    throw PluginInstaller.Refusal("the serve at \(server.url) refused the reload, and runs on unchanged:\n\(problems)")
                }
                var detail = "the serve at \(server.url), generation \(report.generation)"
                for (label, ids) in [("added", report.added), ("removed", report.removed), ("changed", report.changed)] where !ids.isEmpty {
                    detail += "; \(label) \(ids.joined(separator: ", "))"
                }
                return PluginInstaller.Applied(how: "reloaded", generation: report.generation, detail: detail)
            }
        }
        return try trial(manifest, instances)
    }

    /// The reload whose answer was lost, as applied, when serve's `GET /v1/plugins` shows a newer
    /// generation than `before` running each of `instances` at the version `manifest` names; nil
    /// when it shows the reload not applied or does not answer (asked for up to about 10 s).
    static func confirmReload(_ server: RunningServe, before: Int, manifest: HostManifest, instances: [String]) -> PluginInstaller.Applied? {
        for attempt in 0..<5 {
            if attempt > 0 { Thread.sleep(forTimeInterval: 1) }
            guard case .success(let list) = server.get(PluginInstanceList.self, "/v1/plugins", timeoutSeconds: 2) else { continue }
            guard list.generation > before else { return nil }
            for id in instances {
                let expected = manifest.instances.first(where: { $0.id == id })?.installed?.lock.version
                guard let running = list.instances.first(where: { $0.id == id }), running.package?.version == expected else { return nil }
            }
            return PluginInstaller.Applied(
                how: "reloaded", generation: list.generation,
                detail: "the serve at \(server.url), generation \(list.generation) (the reload's answer was lost; GET /v1/plugins shows it applied)")
        }
        return nil
    }

    /// Loads and creates `instances` of `manifest` in this process (no serve runs it), then lets them go.
    func trial(_ manifest: HostManifest, _ instances: [String]) throws(PluginInstaller.Refusal) -> PluginInstaller.Applied {
        let registry = PluginRegistry(manifest: manifest, pipeline: LogPipeline(filter: LogFilter(severity: .none)))
        for id in instances {
            guard let instance = manifest.instances.first(where: { $0.id == id }) else { continue }
            if let error = registry.trial(instance) {
                throw PluginInstaller.Refusal("instance '\(id)' does not load: \(error)")
            }
        }
        return PluginInstaller.Applied(
            how: "checked",
            detail:
                "no hubhost serve answers for this manifest; \(instances.isEmpty ? "nothing to load" : "loaded and created \(instances.joined(separator: ", ")) here"); a serve started later loads it"
        )
    }
}
