import Foundation
import Yams

/// The host manifest, `plugins.yaml`: where hubhost keeps its data, how it logs, and which plugin
/// instances it loads, in order. The engines' sections (`events:`, `campaigns:`, `hub:`...) are parsed by the
/// engines themselves (ManifestSection); this layer hands them out.
///
/// Parsing is lenient on purpose: every problem becomes a diagnostic (file:line:column), and a
/// problem inside one plugin instance disables only that instance, so the host still runs with the
/// rest. `hubhost manifest check` fails on any diagnostic.
public struct HostManifest: Sendable {
    /// One entry of `plugins:`.
    public struct Instance: Sendable {
        /// The instance's unique id (`id:`): lowercase letters, digits, '-', '_' and '.'; `#N` (its
        /// position, from 1) when the entry has none, which is a problem.
        public var id: String
        /// Absolute path of the plugin.yaml named by `use:`.
        public var use: String
        /// `enabled:` (default true); false keeps the entry but does not load it.
        public var enabled: Bool
        /// Expected SHA-256 (hex) of the library file, checked before dlopen.
        public var sha256: String?
        /// The plugin.yaml, when it could be read.
        public var plugin: PluginManifest?
        /// The instance's config, checked against the plugin's schema, defaults filled in.
        public var config: [String: PluginValue]
        /// Problems that disable this instance (empty when it may load).
        public var problems: [ManifestDiagnostic]
        /// Where the entry starts in plugins.yaml.
        public var line: Int
        /// Where the plugin runs: in this process (default) or in a worker child process.
        public var isolation: Isolation = .inProcess
        /// Deadline of one call to an isolated or `.wasm` plugin (`call_timeout`).
        public var callTimeoutSeconds: Double = Instance.defaultCallTimeoutSeconds
        /// Address-space limit of an isolated plugin's worker, in MiB (`memory_limit`).
        public var memoryLimitMB: Int = Instance.defaultMemoryLimitMB
        /// Deadline of an in-process plugin's create (`create_timeout`).
        public var createTimeoutSeconds: Double = Instance.defaultCreateTimeoutSeconds

        /// `call_timeout` when the entry has none, in seconds.
        public static let defaultCallTimeoutSeconds: Double = 5
        /// `create_timeout` when the entry has none, in seconds.
        public static let defaultCreateTimeoutSeconds: Double = 30
        /// `memory_limit` when the entry has none, in MiB.
        public static let defaultMemoryLimitMB = 4096
        /// Below this a worker cannot even start the Swift runtime.
        public static let minimumMemoryLimitMB = 64
        /// What the instance may reach through the host's HTTP service (`http_allow`, `http_timeout`).
        public var http = HostEnvironment.HTTPPolicy()
        /// Fuel per call and memory ceiling of a `.wasm` plugin (`wasm_fuel`, `wasm_memory_limit`).
        package var wasm = WasmBudget()
        /// When its plugins are ejected for failing calls in a row (`eject_after`, `eject_for`, `eject_max`).
        package var ejection = EjectionPolicy()
        /// The variables of serve's environment an isolated plugin's worker also gets (`environment`),
        /// beside the few every worker gets (PluginWorker.passedEnvironment).
        public var environment: [String] = []
        /// The package it runs, when `use:` names a plugin installed by `hubhost plugins add`.
        package var installed: InstalledPlugin?
        /// `allow_unsigned`: an installed plugin from an unsigned package may run.
        public var allowUnsigned = false
        /// The file the entry is in: plugins.yaml, or an instance file it includes (plugins.d/).
        public var file = ""
    }

    /// `isolation:` of a plugin instance.
    public enum Isolation: String, Codable, CaseIterable, Sendable {
        /// Loaded into hubhost itself: fastest; for trusted plugins. The default.
        case inProcess = "in_process"
        /// Run in a worker child process: a crash, hang or exit fails only the call in flight.
        case process
    }

    /// Absolute path of the manifest file.
    public var file: String
    /// Absolute path of the data directory (default `.hubhost` beside the manifest).
    public var dataDirectory: String
    /// The log filter of `logging:` (severity Error, verbosity Debug when absent).
    public var logging: LogFilter
    /// Every entry of `plugins:`, then those of the instance files `include:` names, in order;
    /// disabled entries and entries with problems included.
    public var instances: [Instance]
    /// plugins.lock beside plugins.yaml: the plugins installed from packages (empty when none).
    package var pluginLock = PluginLock()
    /// The engines' sections, parsed by their own settings types (ManifestSection), by section
    /// name; an absent section reads as the type's defaults (`section(_:)`).
    var sections: [String: any ManifestSection] = [:]
    /// Every problem found, in plugins.yaml and in the plugin.yaml files it uses.
    public var diagnostics: [ManifestDiagnostic]

    /// True when no problem was found (`diagnostics` is empty), as `hubhost manifest check` requires.
    public var isValid: Bool { diagnostics.isEmpty }

    /// The problems in the sections named (`identity`, `events`, ...): keys inside them, the
    /// section itself, or a problem with the whole of plugins.yaml. An engine refuses to open while its sections have
    /// any, so a typo such as `mobileUserIdColum` stops the command instead of running on a default.
    public func problems(inSections names: [String]) -> [ManifestDiagnostic] {
        diagnostics.filter { diagnostic in
            (diagnostic.key.isEmpty && diagnostic.file == file)
                || names.contains { diagnostic.key == $0 || diagnostic.key.hasPrefix($0 + ".") || diagnostic.key.hasPrefix($0 + "[") }
        }
    }

    /// Throws a ManifestError listing the problems in the sections named, when there are any.
    public func requireNoProblems(inSections names: [String]) throws {
        let problems = problems(inSections: names)
        guard problems.isEmpty else { throw ManifestError(problems) }
    }

    /// The sections plugins.yaml may have: the host's own and every engine's.
    static var topKeys: [String] { ["data_dir", "logging", "plugins", "include"] + sectionTypes.map { $0.sectionName } }

    /// The settings of section `type`: as parsed, or its defaults when plugins.yaml has none.
    package func section<T: ManifestSection>(_ type: T.Type) -> T {
        sections[T.sectionName] as? T ?? T()
    }

    /// Replaces a section's settings (embedding apps and tests adjust a manifest this way).
    package mutating func setSection<T: ManifestSection>(_ settings: T) {
        sections[T.sectionName] = settings
    }

    /// Every section's effective values, in `sectionTypes` order.
    package var effectiveSettings: [String: [EffectiveSetting]] {
        Dictionary(
            uniqueKeysWithValues: Self.sectionTypes.map { type in
                (type.sectionName, (sections[type.sectionName] ?? type.init()).effectiveValues)
            })
    }
    /// The keys of `logging:` and of a `plugins:` entry: the ones the configuration reference documents.
    static let loggingKeys = hostKeys(of: "logging", prefix: "logging.")
    static let instanceKeys = hostKeys(of: "plugins", prefix: "plugins[].")

    private static func hostKeys(of section: String, prefix: String) -> [String] {
        hostReference.first { $0.name == section }!.entries.map { String($0.key.dropFirst(prefix.count)) }
    }

    /// The manifest with no file: data in `./.hubhost`, default logging, no plugins.
    public static func empty(folder: String = FileManager.default.currentDirectoryPath) -> HostManifest {
        HostManifest(
            file: "", dataDirectory: (folder as NSString).appendingPathComponent(".hubhost"),
            logging: LogFilter(), instances: [], diagnostics: [])
    }

    /// Reads plugins.yaml and every plugin.yaml it uses. Throws only when the file cannot be used
    /// at all (missing, unreadable, not YAML, not a mapping); everything else is a diagnostic.
    public static func load(path: String) throws -> HostManifest {
        let file = absolute(path, from: FileManager.default.currentDirectoryPath)
        let reader = YAMLReader(file: file)
        guard let root = reader.load(), let entries = reader.mapping(root, key: "") else {
            throw ManifestError(reader.diagnostics)
        }
        let folder = (file as NSString).deletingLastPathComponent
        var manifest = HostManifest.empty(folder: folder)
        manifest.file = file
        let top = reader.known(entries, allowed: topKeys, in: "", what: "section")

        if let node = top["data_dir"]?.value, let dir = reader.string(node, key: "data_dir") {
            manifest.dataDirectory = absolute(dir, from: folder)
        }
        if let node = top["logging"]?.value, let loggingEntries = reader.mapping(node, key: "logging") {
            let fields = reader.known(loggingEntries, allowed: loggingKeys, in: "logging")
            if let node = fields["severity"]?.value,
                let severity = reader.choice(
                    node, key: "logging.severity", what: "severity",
                    options: LogSeverity.allCases.map(\.name), parse: LogSeverity.init(name:))
            {
                manifest.logging.severity = severity
            }
            if let node = fields["verbosity"]?.value,
                let verbosity = reader.choice(
                    node, key: "logging.verbosity", what: "verbosity",
                    options: LogVerbosity.allCases.map(\.name), parse: LogVerbosity.init(name:))
            {
                manifest.logging.verbosity = verbosity
            }
        }
        for type in Self.sectionTypes {
            guard let entry = top[type.sectionName] else { continue }
            let context = ManifestSectionContext(reader: reader, anchor: entry.keyNode, folder: folder, sectionName: type.sectionName)
            manifest.sections[type.sectionName] = type.init(section: entry.value, context: context)
        }

        let lockPath = PluginLock.path(forManifest: file)
        do {
            manifest.pluginLock = try PluginLock.read(path: lockPath)
        } catch {
            reader.report(line: 1, column: 1, key: "", "\(PluginLock.fileName) \(error.reason)")
        }
        var context = InstanceContext(
            folder: folder, file: file, manifestFile: file, searchPath: PluginSearchPath.standard(),  // its folders are read at the first id, once
            lock: manifest.pluginLock, dataDirectory: manifest.dataDirectory, trust: manifest.trust)
        if let node = top["plugins"]?.value, let items = reader.sequence(node, key: "plugins") {
            for (index, item) in items.enumerated() {
                manifest.instances.append(parseInstance(item, index: index, context: &context))
            }
        }
        var includeProblems: [ManifestDiagnostic] = []
        if let node = top["include"]?.value {
            manifest.instances += includedInstances(node, reader: reader, context: &context, fileProblems: &includeProblems)
        }
        for type in Self.sectionTypes { type.finish(&manifest) }  // e.g. hub.db_service_url -> the hub's provider
        // Two instances of one plugin would report that plugin.yaml's problems twice: keep the first.
        var diagnostics: [ManifestDiagnostic] = []
        var seen = Set<ManifestDiagnostic>()  // a set: ten thousand problems are kept in linear time
        for diagnostic in reader.diagnostics + includeProblems + manifest.instances.flatMap(\.problems) where seen.insert(diagnostic).inserted {
            diagnostics.append(diagnostic)
        }
        manifest.diagnostics = diagnostics
        return manifest
    }

    /// What parsing the instances of plugins.yaml and the files it includes shares.
    struct InstanceContext {
        /// plugins.yaml's folder, which relative `use:` paths start from.
        var folder: String
        /// The file being read (plugins.yaml or an included file).
        var file: String
        /// plugins.yaml.
        var manifestFile: String
        var searchPath: PluginSearchPath
        var lock: PluginLock
        var dataDirectory: String
        var trust: TrustSettings
        /// Instance id -> "file:line" of its first entry.
        var seenIDs: [String: String] = [:]
    }

    /// One `plugins:` entry, checked with its own reader so its problems stay attached to it.
    /// Long on purpose: one short check per key of an entry, in the order the configuration
    /// reference lists them, each reporting at the key's own position; split, the checks of one
    /// entry would be read across several functions that share every local.
    static func parseInstance(_ item: Node, index: Int, context: inout InstanceContext) -> Instance {
        let file = context.file
        let folder = context.folder
        let reader = YAMLReader(file: file)
        let path = "plugins[\(index)]"
        var instance = Instance(
            id: "#\(index + 1)", use: "", enabled: true, sha256: nil, plugin: nil, config: [:],
            problems: [], line: item.mark?.line ?? 1)
        instance.file = file
        guard let entries = reader.mapping(item, key: path) else {
            instance.problems = reader.diagnostics
            return instance
        }
        let fields = reader.known(entries, allowed: instanceKeys, in: path)
        if let node = fields["id"]?.value, let id = reader.string(node, key: "\(path).id") {
            instance.id = id
            if !PluginManifest.isValidID(id) {
                reader.report(node, key: "\(path).id", "'\(id)' is not a valid instance id: use lowercase letters, digits, '-', '_' and '.'")
            } else if let first = context.seenIDs[id] {
                reader.report(node, key: "\(path).id", "duplicate instance id '\(id)' (first used \(first)); each instance needs its own id")
            } else {
                let line = node.mark?.line ?? 0
                context.seenIDs[id] = file == context.manifestFile ? "on line \(line)" : "in \(file) on line \(line)"
            }
        } else if fields["id"] == nil {
            reader.report(item, key: "\(path).id", "missing required key 'id' (a unique name for this instance)")
        }
        if let node = fields["enabled"]?.value, let enabled = reader.bool(node, key: "\(path).enabled") {
            instance.enabled = enabled
        }
        if let node = fields["allow_unsigned"]?.value, let allow = reader.bool(node, key: "\(path).allow_unsigned") {
            instance.allowUnsigned = allow
        }
        if let node = fields["sha256"]?.value, let pin = reader.string(node, key: "\(path).sha256") {
            let lowered = pin.lowercased()
            if lowered.count == 64, lowered.allSatisfy(\.isHexDigit) {
                instance.sha256 = lowered
            } else {
                reader.report(node, key: "\(path).sha256", "expected 64 hexadecimal digits (the output of sha256sum on the library)")
            }
        }
        if let node = fields["isolation"]?.value,
            let isolation = reader.choice(
                node, key: "\(path).isolation", what: "isolation",
                options: Isolation.allCases.map(\.rawValue), parse: Isolation.init(rawValue:))
        {
            instance.isolation = isolation
        }
        if let node = fields["call_timeout"]?.value, let seconds = reader.duration(node, key: "\(path).call_timeout") {
            if seconds > 0 {
                instance.callTimeoutSeconds = seconds
            } else {
                reader.report(node, key: "\(path).call_timeout", "the call timeout must be longer than 0 seconds")
            }
        }
        if let node = fields["create_timeout"]?.value, let seconds = reader.duration(node, key: "\(path).create_timeout") {
            if seconds > 0 && seconds <= 86_400 {
                instance.createTimeoutSeconds = seconds
            } else {
                reader.report(
                    node, key: "\(path).create_timeout", "the create timeout must be longer than 0 seconds and at most a day, not \(seconds)")
            }
        }
        if let node = fields["memory_limit"]?.value, let megabytes = reader.int(node, key: "\(path).memory_limit") {
            if megabytes >= Instance.minimumMemoryLimitMB && megabytes <= Int64(Int32.max) {
                instance.memoryLimitMB = Int(megabytes)
            } else {
                reader.report(
                    node, key: "\(path).memory_limit",
                    "the worker's memory limit must be at least \(Instance.minimumMemoryLimitMB) (MiB), not \(megabytes)")
            }
        }
        if let node = fields["wasm_fuel"]?.value, let fuel = reader.int(node, key: "\(path).wasm_fuel") {
            if fuel >= WasmBudget.minimumFuelPerCall {
                instance.wasm.fuelPerCall = UInt64(fuel)
            } else {
                reader.report(
                    node, key: "\(path).wasm_fuel", "the fuel of one call must be at least \(WasmBudget.minimumFuelPerCall), not \(fuel)")
            }
        }
        if let node = fields["wasm_memory_limit"]?.value, let megabytes = reader.int(node, key: "\(path).wasm_memory_limit") {
            if megabytes >= WasmBudget.minimumMemoryLimitMB && megabytes <= WasmBudget.maximumMemoryLimitMB {
                instance.wasm.memoryLimitMB = Int(megabytes)
            } else {
                reader.report(
                    node, key: "\(path).wasm_memory_limit",
                    "the memory ceiling must be \(WasmBudget.minimumMemoryLimitMB) to \(WasmBudget.maximumMemoryLimitMB) (MiB), not \(megabytes)")
            }
        }
        if let node = fields["http_allow"]?.value, let items = reader.sequence(node, key: "\(path).http_allow") {
            instance.http.allowedHosts = items.compactMap { reader.string($0, key: "\(path).http_allow") }.map { $0.lowercased() }
        }
        if let node = fields["http_timeout"]?.value, let seconds = reader.duration(node, key: "\(path).http_timeout") {
            if seconds > 0 && seconds <= SafeTime.maxDurationSeconds {
                instance.http.timeoutSeconds = seconds
            } else {
                reader.report(node, key: "\(path).http_timeout", "the HTTP timeout must be longer than 0 seconds, not \(seconds)")
            }
        }
        parseEjection(fields, path: path, reader: reader, into: &instance.ejection)
        if let node = fields["environment"]?.value, let items = reader.sequence(node, key: "\(path).environment") {
            for item in items {
                guard let name = reader.string(item, key: "\(path).environment") else { continue }
                if Self.isVariableName(name) {
                    instance.environment.append(name)
                } else {
                    reader.report(
                        item, key: "\(path).environment",
                        "'\(name)' is not an environment variable name (letters, digits and '_', not starting with a digit)")
                }
            }
        }
        var pluginDiagnostics: [ManifestDiagnostic] = []
        if let node = fields["use"]?.value, let use = reader.string(node, key: "\(path).use") {
            let besideFile = absolute(use, from: folder)
            var resolved: String? = besideFile
            if PluginSearchPath.isPluginID(use), !FileManager.default.fileExists(atPath: besideFile), let locked = context.lock.plugins[use] {
                // A plugin installed from a package: the version plugins.lock names, its files checked against the lock.
                let installed = InstalledPlugin(
                    lock: locked, folder: PluginLock.folder(dataDirectory: context.dataDirectory, id: locked.id, version: locked.version))
                instance.installed = installed
                resolved = (installed.folder as NSString).appendingPathComponent("plugin.yaml")
                for problem in installed.trustProblems(trust: context.trust, allowUnsigned: instance.allowUnsigned) {
                    reader.report(node, key: "\(path).use", problem)
                    instance.installed?.problems.append(problem)
                }
                let pin = locked.files[locked.library]
                if let own = instance.sha256, own != pin {
                    reader.report(
                        node, key: "\(path).use",
                        "the instance's sha256: \(own) is not the installed library's (\(pin ?? "none") in plugins.lock); remove the sha256: line, the lock pins it"
                    )
                }
                instance.sha256 = pin
            } else if PluginSearchPath.isPluginID(use), !FileManager.default.fileExists(atPath: besideFile) {
                // A plugin named by its id: found in the plugin path, wherever this file is.
                let searchPath = context.searchPath
                resolved = searchPath.manifest(of: use)
                if resolved == nil {
                    let searched = searchPath.folders.isEmpty ? "no folder" : searchPath.folders.joined(separator: ", ")
                    reader.report(
                        node, key: "\(path).use",
                        "no plugin with id '\(use)' in the plugin path (looked in: \(searched)); add the folder that holds it to HUBHOST_PLUGIN_PATH, or give the path of its plugin.yaml"
                    )
                }
            }
            instance.use = resolved ?? besideFile
            var isFolder: ObjCBool = false
            if let resolved {
                if !FileManager.default.fileExists(atPath: resolved, isDirectory: &isFolder) {
                    reader.report(node, key: "\(path).use", "no plugin manifest at '\(use)' (resolved to \(resolved))")
                } else if isFolder.boolValue {
                    // Said here, at the line that names the folder, not at the folder itself.
                    let manifest = (resolved as NSString).appendingPathComponent("plugin.yaml")
                    let hint =
                        FileManager.default.fileExists(atPath: manifest) ? "name its plugin.yaml: \(use)/plugin.yaml" : "name a plugin.yaml file"
                    reader.report(node, key: "\(path).use", "'\(use)' is a folder, not a plugin manifest; \(hint)")
                } else {
                    let loaded = PluginManifest.load(path: resolved, sha256: instance.installed?.lock.files["plugin.yaml"])
                    instance.plugin = loaded.manifest
                    pluginDiagnostics = loaded.diagnostics
                    if loaded.manifest == nil, loaded.diagnostics.isEmpty {
                        reader.report(node, key: "\(path).use", "'\(use)' is not a usable plugin manifest")
                    }
                    if loaded.manifest == nil, instance.installed != nil {
                        // Installed files were checked whole when added: one that no longer reads changed since.
                        instance.installed?.problems += loaded.diagnostics.map { "plugin.yaml: \($0.message)" }
                    }
                    // Said by `manifest check` too, not only when the instance loads.
                    if let plugin = loaded.manifest, let installed = instance.installed,
                        plugin.id != installed.lock.id
                            || installed.lock.library != plugin.library
                                && !installed.lock.library.hasSuffix("/" + plugin.library)
                    {
                        let problem = "the installed plugin.yaml does not match plugins.lock (its id or library differs)"
                        reader.report(node, key: "\(path).use", problem)
                        instance.installed?.problems.append(problem)
                    }
                    if let plugin = loaded.manifest, let requirement = plugin.requiresHubhost, !requirement.contains(HubHostVersion.current) {
                        reader.report(
                            node, key: "\(path).use",
                            "plugin '\(plugin.id)' requires hubhost \(requirement.text); this is hubhost \(HubHostVersion.current)")
                    }
                }
            }
        } else if fields["use"] == nil {
            reader.report(item, key: "\(path).use", "missing required key 'use' (the path of the plugin's plugin.yaml)")
        }
        if let plugin = instance.plugin {
            instance.config = plugin.config.resolve(fields["config"]?.value, path: "\(path).config", reader: reader, reportAt: item)
        } else if let node = fields["config"]?.value {
            _ = reader.mapping(node, key: "\(path).config")
        }
        instance.problems = reader.diagnostics + pluginDiagnostics
        return instance
    }

    /// Whether `name` can name an environment variable: ASCII letters, digits and '_', not starting with a digit.
    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first), name.utf8.count <= 256 else { return false }
        return name.utf8.allSatisfy {
            $0 == UInt8(ascii: "_") || ($0 < 128 && (Character(Unicode.Scalar($0)).isLetter || Character(Unicode.Scalar($0)).isNumber))
        }
    }

    /// `path` made absolute against `folder`, or, when nothing is there and the path is relative,
    /// against the running hubhost's own folders (`HubHostInstallation.resourceFolders`: the package
    /// checkout or `<prefix>/share/hubhost`), so that `Examples/content` in a plugins.yaml copied
    /// elsewhere still names the demo content.
    public static func resource(_ path: String, from folder: String) -> String {
        let beside = absolute(path, from: folder)
        let expanded = (path as NSString).expandingTildeInPath
        guard !expanded.hasPrefix("/"), !FileManager.default.fileExists(atPath: beside) else { return beside }
        for root in HubHostInstallation.resourceFolders() {
            let candidate = absolute(path, from: root)
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        return beside
    }

    /// `path` made absolute against `folder` (with ~ expanded), standardized.
    public static func absolute(_ path: String, from folder: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        let joined = expanded.hasPrefix("/") ? expanded : (folder as NSString).appendingPathComponent(expanded)
        return (joined as NSString).standardizingPath
    }
}
