import Foundation
import Yams

/// The host manifest, `plugins.yaml`: where hubhost keeps its data, how it logs, and which plugin
/// instances it loads, in order. Later engines add their sections (`events:`, `campaigns:`, `hub:`).
///
/// Parsing is lenient on purpose: every problem becomes a diagnostic (file:line:column), and a
/// problem inside one plugin instance disables only that instance, so the host still runs with the
/// rest. `hubhost manifest check` fails on any diagnostic.
public struct HostManifest: Sendable {
    /// One entry of `plugins:`.
    public struct Instance: Sendable {
        public var id: String
        /// Absolute path of the plugin.yaml named by `use:`.
        public var use: String
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
        /// Deadline of one call to an isolated plugin (`call_timeout`, default 5 s).
        public var callTimeoutSeconds: Double = 5
        /// Address-space limit of an isolated plugin's worker, in MiB (`memory_limit`, default 4096).
        public var memoryLimitMB: Int = 4096
        /// What the instance may reach through the host's HTTP service (`http_allow`, `http_timeout`).
        public var http = HostEnvironment.HTTPPolicy()
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
    public var logging: LogFilter
    public var instances: [Instance]
    /// The event engine's settings (`events:`), defaults filled in.
    public var events = EventSettings()
    /// Where `hubhost serve` listens (`server:`).
    public var server = ServerSettings()
    /// Deep link routes (`deep_links:`).
    public var deepLinks = DeepLinkRouter()
    /// The campaign engine's settings (`campaigns:`).
    public var campaigns = CampaignSettings()
    /// The Content Hub's settings (`hub:`).
    public var hub = HubSettings()
    /// Every problem found, in plugins.yaml and in the plugin.yaml files it uses.
    public var diagnostics: [ManifestDiagnostic]

    public var isValid: Bool { diagnostics.isEmpty }

    static let topKeys = ["data_dir", "logging", "server", "plugins", "events", "deep_links", "campaigns", "hub"]
    static let reservedSections: [String: String] = [:]
    static let loggingKeys = ["severity", "verbosity"]
    static let instanceKeys = ["id", "use", "enabled", "config", "sha256", "isolation", "call_timeout", "memory_limit",
                               "http_allow", "http_timeout"]

    /// The manifest with no file: data in `./.hubhost`, default logging, no plugins.
    public static func empty(folder: String = FileManager.default.currentDirectoryPath) -> HostManifest {
        HostManifest(file: "", dataDirectory: (folder as NSString).appendingPathComponent(".hubhost"),
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
               let severity = reader.choice(node, key: "logging.severity", what: "severity",
                                            options: LogSeverity.allCases.map(\.name), parse: LogSeverity.init(name:)) {
                manifest.logging.severity = severity
            }
            if let node = fields["verbosity"]?.value,
               let verbosity = reader.choice(node, key: "logging.verbosity", what: "verbosity",
                                             options: LogVerbosity.allCases.map(\.name), parse: LogVerbosity.init(name:)) {
                manifest.logging.verbosity = verbosity
            }
        }
        if let entry = top["events"] {
            var lines: [String: Int] = [:]
            let values = EventSettings.schema.resolve(entry.value, path: "events", reader: reader, reportAt: entry.keyNode, lines: &lines)
            manifest.events = EventSettings(values: values, lines: lines)
        }
        if let entry = top["server"] {
            let values = ServerSettings.schema.resolve(entry.value, path: "server", reader: reader, reportAt: entry.keyNode)
            manifest.server = ServerSettings(values: values, relativeTo: folder) { key, message in reader.report(entry.value, key: key, message) }
        }
        if let entry = top["campaigns"] {
            let values = CampaignSettings.schema.resolve(entry.value, path: "campaigns", reader: reader, reportAt: entry.keyNode)
            if case .string(let file)? = values["file"], !file.isEmpty { manifest.campaigns.file = absolute(file, from: folder) }
            if case .bool(let enabled)? = values["enabled"] { manifest.campaigns.enabled = enabled }
            if case .string(let url)? = values["config_url"], !url.isEmpty { manifest.campaigns.configURL = url }
            if case .string(let url)? = values["ping_url"], !url.isEmpty { manifest.campaigns.pingURL = url }
            if case .string(let rule)? = values["context_rule"] {
                if let parsed = CampaignEngine.ContextRule(rawValue: rule) {
                    manifest.campaigns.contextRule = parsed
                } else if let node = entry.value.mapping?["context_rule"] {
                    reader.report(node, key: "campaigns.context_rule", "unknown context rule '\(rule)'; expected one of: all, any, none")
                }
            }
        }
        if let entry = top["hub"] {
            manifest.hub = parseHub(entry.value, anchor: entry.keyNode, folder: folder, reader: reader)
        }
        if let node = top["deep_links"]?.value {
            manifest.deepLinks = parseDeepLinks(node, reader: reader)
        }
        for (section, engine) in reservedSections.sorted(by: { $0.key < $1.key }) {
            guard let entry = top[section] else { continue }
            // Reserved for a later engine: accepted only empty, so no setting is ever silently ignored.
            if let sectionEntries = reader.mapping(entry.value, key: section), let first = sectionEntries.first {
                reader.report(first.keyNode, key: "\(section).\(first.key)",
                              "the '\(section)' section configures \(engine), which this hubhost version does not include yet; remove the setting")
            }
        }

        if let node = top["plugins"]?.value, let items = reader.sequence(node, key: "plugins") {
            var seenIDs: [String: Int] = [:]
            for (index, item) in items.enumerated() {
                manifest.instances.append(parseInstance(item, index: index, folder: folder, file: file, seenIDs: &seenIDs))
            }
        }
        manifest.fillProviderServiceURL()  // hub.db_service_url -> the hub's provider (Hub/Delivery)
        // Two instances of one plugin would report that plugin.yaml's problems twice: keep the first.
        var diagnostics: [ManifestDiagnostic] = []
        for diagnostic in reader.diagnostics + manifest.instances.flatMap(\.problems) where !diagnostics.contains(diagnostic) {
            diagnostics.append(diagnostic)
        }
        manifest.diagnostics = diagnostics
        return manifest
    }

    /// `hub:`: scalar keys through HubSettings.schema, the whitelists and schemes as lists of strings.
    static func parseHub(_ node: Node, anchor: Node, folder: String, reader: YAMLReader) -> HubSettings {
        var settings = HubSettings()
        guard let entries = reader.mapping(node, key: "hub") else { return settings }
        let known = reader.known(entries, allowed: HubSettings.schema.keys.map(\.key) + HubSettings.listKeys, in: "hub")
        // Unknown keys were reported just above: hand the schema only its own keys.
        let scalarKeys = Set(HubSettings.schema.keys.map(\.key))
        let scalars = entries.filter { scalarKeys.contains($0.key) }.map { ($0.keyNode, $0.value) }
        let values = HubSettings.schema.resolve(Node.mapping(Node.Mapping(scalars)), path: "hub", reader: reader, reportAt: anchor)
        func text(_ key: String) -> String? { if case .string(let value)? = values[key], !value.isEmpty { return value }; return nil }
        if case .bool(let enabled)? = values["enabled"] { settings.enabled = enabled }
        settings.provider = text("provider")
        settings.dbServiceURL = text("db_service_url")
        settings.publicKeyPath = text("public_key").map { absolute($0, from: folder) }
        settings.preloadedBundle = text("preloaded_bundle").map { absolute($0, from: folder) }
        if case .double(let seconds)? = values["download_timeout"] { settings.downloadTimeout = seconds }
        if let ancestors = text("frame_ancestors") {
            // One header value: a list of sources, never a second directive or header smuggled in.
            if ancestors.range(of: #"^[A-Za-z0-9'*:/._ -]+$"#, options: .regularExpression) != nil {
                settings.frameAncestors = ancestors
            } else if let node = known["frame_ancestors"]?.keyNode {
                reader.report(node, key: "hub.frame_ancestors", "expected CSP sources such as 'self', 'none' or https://app.example, not '\(ancestors)'")
            }
        }
        if let source = text("content_source") {
            if let parsed = HubSettings.ContentSource(rawValue: source) { settings.contentSource = parsed } else if let node = known["content_source"]?.keyNode {
                reader.report(node, key: "hub.content_source", "unknown content source '\(source)'; expected one of: external_allowed, local_only")
            }
        }
        if let scheme = text("color_scheme") {
            if let parsed = HubSettings.ColorScheme(rawValue: scheme) { settings.colorScheme = parsed } else if let node = known["color_scheme"]?.keyNode {
                reader.report(node, key: "hub.color_scheme", "unknown color scheme '\(scheme)'; expected one of: dark, light")
            }
        }
        func list(_ key: String) -> [String] {
            guard let node = known[key]?.value, let items = reader.sequence(node, key: "hub.\(key)") else { return [] }
            return items.enumerated().compactMap { reader.string($0.element, key: "hub.\(key)[\($0.offset)]") }
        }
        settings.whitelistURLs = list("whitelist_urls")
        settings.whitelistDomains = list("whitelist_domains")
        settings.customURLSchemes = list("custom_url_schemes").map { $0.hasSuffix("://") ? String($0.dropLast(3)) : $0 }
        return settings
    }

    /// `deep_links: {routes: [{route: "campaign/:CurrentCampaign", parameters: {CurrentCampaign: {required: true, regex: ...}}}]}`
    static func parseDeepLinks(_ node: Node, reader: YAMLReader) -> DeepLinkRouter {
        var router = DeepLinkRouter()
        guard let entries = reader.mapping(node, key: "deep_links") else { return router }
        let fields = reader.known(entries, allowed: ["routes"], in: "deep_links")
        guard let routesNode = fields["routes"]?.value, let items = reader.sequence(routesNode, key: "deep_links.routes") else { return router }
        for (index, item) in items.enumerated() {
            let path = "deep_links.routes[\(index)]"
            guard let itemEntries = reader.mapping(item, key: path) else { continue }
            let routeFields = reader.known(itemEntries, allowed: ["route", "parameters"], in: path)
            guard let routeNode = routeFields["route"]?.value, let pattern = reader.string(routeNode, key: "\(path).route") else {
                if routeFields["route"] == nil { reader.report(item, key: "\(path).route", "missing required key 'route' (e.g. campaign/:CurrentCampaign)") }
                continue
            }
            var parameters: [DeepLinkRouter.Parameter] = []
            if let parametersNode = routeFields["parameters"]?.value, let parameterEntries = reader.mapping(parametersNode, key: "\(path).parameters") {
                for entry in parameterEntries {
                    let key = "\(path).parameters.\(entry.key)"
                    guard let settings = reader.mapping(entry.value, key: key) else { continue }
                    let known = reader.known(settings, allowed: ["required", "regex"], in: key)
                    let required = known["required"].flatMap { reader.bool($0.value, key: "\(key).required") } ?? false
                    let regex = known["regex"].flatMap { reader.string($0.value, key: "\(key).regex") }
                    parameters.append(.init(name: entry.key, required: required, regex: regex))
                }
            }
            do {
                try router.add(pattern: pattern, parameters: parameters)
            } catch {
                reader.report(routeNode, key: "\(path).route", "\(error)")
            }
        }
        return router
    }

    /// One `plugins:` entry, checked with its own reader so its problems stay attached to it.
    static func parseInstance(_ item: Node, index: Int, folder: String, file: String, seenIDs: inout [String: Int]) -> Instance {
        let reader = YAMLReader(file: file)
        let path = "plugins[\(index)]"
        var instance = Instance(id: "#\(index + 1)", use: "", enabled: true, sha256: nil, plugin: nil, config: [:],
                                problems: [], line: item.mark?.line ?? 1)
        guard let entries = reader.mapping(item, key: path) else {
            instance.problems = reader.diagnostics
            return instance
        }
        let fields = reader.known(entries, allowed: instanceKeys, in: path)
        if let node = fields["id"]?.value, let id = reader.string(node, key: "\(path).id") {
            instance.id = id
            if !PluginManifest.isValidID(id) {
                reader.report(node, key: "\(path).id", "'\(id)' is not a valid instance id: use lowercase letters, digits, '-', '_' and '.'")
            } else if let firstLine = seenIDs[id] {
                reader.report(node, key: "\(path).id", "duplicate instance id '\(id)' (first used on line \(firstLine)); each instance needs its own id")
            } else {
                seenIDs[id] = node.mark?.line ?? 0
            }
        } else if fields["id"] == nil {
            reader.report(item, key: "\(path).id", "missing required key 'id' (a unique name for this instance)")
        }
        if let node = fields["enabled"]?.value, let enabled = reader.bool(node, key: "\(path).enabled") {
            instance.enabled = enabled
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
           let isolation = reader.choice(node, key: "\(path).isolation", what: "isolation",
                                         options: Isolation.allCases.map(\.rawValue), parse: Isolation.init(rawValue:)) {
            instance.isolation = isolation
        }
        if let node = fields["call_timeout"]?.value, let seconds = reader.duration(node, key: "\(path).call_timeout") {
            if seconds > 0 {
                instance.callTimeoutSeconds = seconds
            } else {
                reader.report(node, key: "\(path).call_timeout", "the call timeout must be longer than 0 seconds")
            }
        }
        if let node = fields["memory_limit"]?.value, let megabytes = reader.int(node, key: "\(path).memory_limit") {
            if megabytes >= 64 {
                instance.memoryLimitMB = Int(megabytes)
            } else {
                reader.report(node, key: "\(path).memory_limit", "the worker's memory limit must be at least 64 (MiB)")
            }
        }
        if let node = fields["http_allow"]?.value, let items = reader.sequence(node, key: "\(path).http_allow") {
            instance.http.allowedHosts = items.compactMap { reader.string($0, key: "\(path).http_allow") }.map { $0.lowercased() }
        }
        if let node = fields["http_timeout"]?.value, let seconds = reader.duration(node, key: "\(path).http_timeout") {
            instance.http.timeoutSeconds = seconds
        }
        var pluginDiagnostics: [ManifestDiagnostic] = []
        if let node = fields["use"]?.value, let use = reader.string(node, key: "\(path).use") {
            instance.use = absolute(use, from: folder)
            if !FileManager.default.fileExists(atPath: instance.use) {
                reader.report(node, key: "\(path).use", "no plugin manifest at '\(use)' (resolved to \(instance.use))")
            } else {
                let loaded = PluginManifest.load(path: instance.use)
                instance.plugin = loaded.manifest
                pluginDiagnostics = loaded.diagnostics
                if loaded.manifest == nil, loaded.diagnostics.isEmpty {
                    reader.report(node, key: "\(path).use", "'\(use)' is not a usable plugin manifest")
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

    /// `path` made absolute against `folder` (with ~ expanded), standardized.
    public static func absolute(_ path: String, from folder: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        let joined = expanded.hasPrefix("/") ? expanded : (folder as NSString).appendingPathComponent(expanded)
        return (joined as NSString).standardizingPath
    }
}
