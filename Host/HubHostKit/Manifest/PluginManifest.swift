import Foundation
import Yams

/// A plugin kind of ABI v1, as plugin.yaml spells it.
public enum PluginKind: String, Codable, CaseIterable, Sendable {
    /// Fetches named resources (the Content Hub's settings, metadata and bundle; the prefetch catalog)
    /// and streams their bytes to the host (hubhost_content_provider.h).
    case contentProvider = "content_provider"
    /// Adds attributes to each event before it is stored (hubhost_augmentation.h).
    case augmentation
    /// Compares an event's value with a campaign trigger's value (hubhost_trigger_operator.h).
    case triggerOperator = "trigger_operator"
    /// Decides the advertiser ID, or that none is used (hubhost_advertiser_id.h).
    case advertiserID = "advertiser_id"
    /// Writes the log records that passed the host's filter (hubhost_logging.h).
    case logging
    /// Answers where the device is (hubhost_location.h).
    case location
    /// ABI 1.1: where tracked events leave hubhost (hubhost_event_sink.h).
    case eventSink = "event_sink"
    /// ABI 1.1: makes new identifiers, such as mobile user ids and audit record keys (hubhost_user_id_generator.h).
    case userIDGenerator = "user_id_generator"
    /// ABI 1.1: tells the network, battery and free space, for the prefetch policy (hubhost_device_conditions.h).
    case deviceConditions = "device_conditions"
    /// ABI 1.1: rewrites the prefetch engine's file requests, URL and headers (hubhost_download_request.h).
    case downloadRequest = "download_request"

    /// The HH_KIND_* code in hubhost_plugin.h.
    public var code: Int32 {
        switch self {
        case .contentProvider: return 1
        case .augmentation: return 2
        case .triggerOperator: return 3
        case .advertiserID: return 4
        case .logging: return 5
        case .location: return 6
        case .eventSink: return 7
        case .userIDGenerator: return 8
        case .deviceConditions: return 9
        case .downloadRequest: return 10
        }
    }

    /// The ABI minor version (of major 1) that added the kind: a library declaring it must say at
    /// least this version, since an older header cannot have described its table.
    public var introducedInMinor: UInt32 {
        switch self {
        case .contentProvider, .augmentation, .triggerOperator, .advertiserID, .logging, .location: return 0
        case .eventSink, .userIDGenerator, .deviceConditions, .downloadRequest: return 1
        }
    }

    /// The kind whose HH_KIND_* code is `code`; nil for a code this host does not know.
    public init?(code: Int32) {
        guard let kind = PluginKind.allCases.first(where: { $0.code == code }) else { return nil }
        self = kind
    }
}

/// A `plugin.yaml`: describes a plugin library without loading it (id, version, ABI, the library
/// file, the plugins it exports and their configuration schema).
public struct PluginManifest: Sendable {
    /// One entry of `exports:`: a plugin the library exports.
    public struct Export: Codable, Equatable, Sendable {
        /// The plugin's id, which must match a descriptor id in the library.
        public var id: String
        /// What the plugin does, which must match its descriptor's kind.
        public var kind: PluginKind
    }

    /// Absolute path of the plugin.yaml.
    public var file: String
    /// The plugin's id (`id:`): lowercase letters, digits, '-', '_' and '.'; what `use:` may name.
    public var id: String
    /// The plugin's human-readable name (`name:`), e.g. "Fixed location".
    public var name: String
    /// The plugin's semantic version (`version:`, e.g. "1.0.0"), which every descriptor in the library must report.
    public var version: String
    /// What the plugin does (`description:`); empty when plugin.yaml has none.
    public var description: String
    /// The ABI version the library was built against, e.g. "1.0".
    public var abi: String
    /// The library's file name (e.g. `libhubhost-console-logger.so`), looked up as the README says.
    public var library: String
    /// Free-form tags (`capabilities:`, e.g. `thread-safe`, `network`), shown by `hubhost plugins inspect`; hubhost does not act on them.
    public var capabilities: [String]
    /// The plugins the library exports (`exports:`), in plugin.yaml order; at least one.
    public var exports: [Export]
    package var config: ConfigSchema
    /// A valid config for `hubhost plugins test` (`test_config:`), checked against the schema with
    /// defaults filled in; just the defaults when plugin.yaml has none.
    public var testConfig: [String: PluginValue] = [:]
    /// `requires: { hubhost: ">=0.2 <0.3" }`: the hubhost versions the plugin runs on (nil: any).
    /// Checked when the plugin is packed and when an instance of it loads.
    package var requiresHubhost: VersionRequirement?

    /// Why this hubhost (`HubHostVersion.current`) does not meet `requires:`, or nil when it does.
    public var hubhostRequirementProblem: String? {
        guard let requirement = requiresHubhost, !requirement.contains(HubHostVersion.current) else { return nil }
        return "plugin '\(id)' requires hubhost \(requirement), but this is hubhost \(HubHostVersion.current)"
    }

    /// The kinds of the plugins it exports, each once, in the order `exports` first names them.
    public var kinds: [PluginKind] {
        var seen: [PluginKind] = []
        for export in exports where !seen.contains(export.kind) { seen.append(export.kind) }
        return seen
    }

    /// Absolute path of the folder holding the plugin.yaml, where its library is looked up first.
    public var folder: String { (file as NSString).deletingLastPathComponent }

    static let topKeys = ["abi", "id", "name", "version", "description", "library", "capabilities", "exports", "config", "test_config", "requires"]
    static let requiresKeys = ["hubhost"]
    static let exportKeys = ["id", "kind"]
    static let configKeys = ["key", "type", "default", "required", "doc", "minimum", "maximum", "allowed", "non_empty", "pattern"]

    /// Reads and checks a plugin.yaml. Returns the manifest (nil when it is unusable) and every problem found.
    /// `sha256`: the SHA-256 the file must have (an installed plugin's, from plugins.lock).
    public static func load(path: String, sha256: String? = nil) -> (manifest: PluginManifest?, diagnostics: [ManifestDiagnostic]) {
        let reader = YAMLReader(file: path, expectedSHA256: sha256)
        guard let root = reader.load() else { return (nil, reader.diagnostics) }
        let manifest = parse(root, reader: reader)
        return (reader.diagnostics.isEmpty ? manifest : nil, reader.diagnostics)
    }

    /// The manifest in `root`, every problem reported through `reader` (nil when one is fatal).
    /// Long on purpose: one short check per key of plugin.yaml, in the order plugin-authoring.md
    /// documents them, each reporting at the key's own position.
    static func parse(_ root: Node, reader: YAMLReader) -> PluginManifest? {
        // A file that is not a plugin manifest at all (`use:` naming /etc/passwd, say) is refused
        // without quoting any of it: its content goes no further than this process, not into a
        // reload's answer, the log or a notification.
        let looksLikeAManifest: Bool
        if case .mapping(let mapping) = root {
            looksLikeAManifest = mapping.keys.contains { ["abi", "id", "library", "exports"].contains($0.string ?? "") }
        } else {
            looksLikeAManifest = false
        }
        guard looksLikeAManifest else {
            reader.report(
                line: 1, column: 1, key: "",
                "this is not a plugin manifest: a plugin.yaml is a mapping with abi, id, name, version, library and exports")
            return nil
        }
        guard let entries = reader.mapping(root, key: "") else { return nil }
        let top = reader.known(entries, allowed: topKeys, in: "")
        func required(_ key: String) -> String? {
            guard let entry = top[key] else {
                reader.report(root, key: key, "missing required key '\(key)'")
                return nil
            }
            return reader.string(entry.value, key: key)
        }
        let id = required("id")
        if let id, let node = top["id"]?.value, !isValidID(id) {
            reader.report(node, key: "id", "'\(id)' is not a valid plugin id: use lowercase letters, digits, '-', '_' and '.'")
        }
        let name = required("name")
        let version = required("version")
        if let version, let node = top["version"]?.value, !isSemver(version) {
            reader.report(node, key: "version", "'\(version)' is not a semantic version like 1.2.0")
        }
        let abi = required("abi")
        if let abi, let node = top["abi"]?.value {
            if let major = abi.split(separator: ".").first.flatMap({ UInt32($0) }) {
                if major != ABIVersion.host.major {
                    reader.report(node, key: "abi", "ABI \(abi) has major version \(major); this hubhost speaks ABI \(ABIVersion.host)")
                }
            } else {
                reader.report(node, key: "abi", "'\(abi)' is not an ABI version like \"1.0\"")
            }
        }
        let library = required("library")
        var requiresHubhost: VersionRequirement?
        if let node = top["requires"]?.value, let requirements = reader.mapping(node, key: "requires") {
            let fields = reader.known(requirements, allowed: requiresKeys, in: "requires")
            if let rangeNode = fields["hubhost"]?.value, let text = reader.string(rangeNode, key: "requires.hubhost") {
                do {
                    requiresHubhost = try VersionRequirement(text)
                } catch {
                    reader.report(rangeNode, key: "requires.hubhost", "'\(text)' is not a version range: \(error.reason)")
                }
            }
        }
        let description = top["description"].flatMap { reader.string($0.value, key: "description") } ?? ""
        var capabilities: [String] = []
        if let node = top["capabilities"]?.value, let items = reader.sequence(node, key: "capabilities") {
            capabilities = items.compactMap { reader.string($0, key: "capabilities") }
        }

        var exports: [Export] = []
        var exportIDs = Set<String>()
        if let node = top["exports"]?.value, let items = reader.sequence(node, key: "exports") {
            for (index, item) in items.enumerated() {
                let path = "exports[\(index)]"
                guard let itemEntries = reader.mapping(item, key: path) else { continue }
                let fields = reader.known(itemEntries, allowed: exportKeys, in: path)
                guard let idNode = fields["id"]?.value, let exportID = reader.string(idNode, key: "\(path).id") else {
                    if fields["id"] == nil { reader.report(item, key: "\(path).id", "missing required key 'id'") }
                    continue
                }
                guard let kindNode = fields["kind"]?.value, let kindText = reader.string(kindNode, key: "\(path).kind") else {
                    if fields["kind"] == nil { reader.report(item, key: "\(path).kind", "missing required key 'kind'") }
                    continue
                }
                guard let kind = PluginKind(rawValue: kindText) else {
                    let all = PluginKind.allCases.map(\.rawValue)
                    reader.report(
                        kindNode, key: "\(path).kind",
                        "unknown plugin kind '\(kindText)'\(Suggestion.hint(for: kindText, in: all)); expected one of: \(all.joined(separator: ", "))"
                    )
                    continue
                }
                let manifestMinor = abi.flatMap { $0.split(separator: ".").dropFirst().first.flatMap { UInt32($0) } }
                if let manifestMinor, manifestMinor < kind.introducedInMinor {
                    reader.report(
                        kindNode, key: "\(path).kind",
                        "kind '\(kindText)' was added in ABI 1.\(kind.introducedInMinor); set abi: \"1.\(kind.introducedInMinor)\" (it says \"\(abi ?? "")\")"
                    )
                }
                if !exportIDs.insert(exportID).inserted {
                    reader.report(idNode, key: "\(path).id", "export id '\(exportID)' appears twice")
                }
                exports.append(Export(id: exportID, kind: kind))
            }
            if items.isEmpty { reader.report(node, key: "exports", "a plugin library must export at least one plugin") }
        } else if top["exports"] == nil {
            reader.report(root, key: "exports", "missing required key 'exports' (the list of plugins the library exports, each with id and kind)")
        }

        var keys: [ConfigKey] = []
        var declaredKeys = Set<String>()  // a set: a schema of many keys is checked in linear time
        if let node = top["config"]?.value, let items = reader.sequence(node, key: "config") {
            for (index, item) in items.enumerated() {
                let path = "config[\(index)]"
                guard let itemEntries = reader.mapping(item, key: path) else { continue }
                let fields = reader.known(itemEntries, allowed: configKeys, in: path)
                guard let keyNode = fields["key"]?.value, let key = reader.string(keyNode, key: "\(path).key") else {
                    if fields["key"] == nil { reader.report(item, key: "\(path).key", "missing required key 'key'") }
                    continue
                }
                guard let typeNode = fields["type"]?.value, let typeText = reader.string(typeNode, key: "\(path).type") else {
                    if fields["type"] == nil { reader.report(item, key: "\(path).type", "missing required key 'type'") }
                    continue
                }
                guard let type = ConfigType(rawValue: typeText) else {
                    let all = ConfigType.allCases.map(\.rawValue)
                    reader.report(
                        typeNode, key: "\(path).type",
                        "unknown config type '\(typeText)'\(Suggestion.hint(for: typeText, in: all)); expected one of: \(all.joined(separator: ", "))"
                    )
                    continue
                }
                if !declaredKeys.insert(key).inserted {
                    reader.report(keyNode, key: "\(path).key", "config key '\(key)' is declared twice")
                }
                let schemaOfOne = ConfigSchema(keys: [])
                let defaultValue = fields["default"].flatMap { field in
                    reader.isNull(field.value) ? nil : schemaOfOne.value(of: field.value, as: type, key: "\(path).default", reader: reader)
                }
                let isRequired = fields["required"].flatMap { reader.bool($0.value, key: "\(path).required") } ?? false
                let doc = fields["doc"].flatMap { reader.string($0.value, key: "\(path).doc") } ?? ""
                var declared = ConfigKey(key: key, type: type, defaultValue: defaultValue, required: isRequired, doc: doc)
                Self.parseConstraints(fields, of: &declared, path: path, reader: reader)
                keys.append(declared)
            }
        }

        let schema = ConfigSchema(keys: keys)
        let testConfig =
            top["test_config"].map { schema.resolve($0.value, path: "test_config", reader: reader, reportAt: $0.keyNode) }
            ?? keys.reduce(into: [:]) { defaults, key in defaults[key.key] = key.defaultValue }
        guard let id, let name, let version, let abi, let library else { return nil }
        var manifest = PluginManifest(
            file: reader.file, id: id, name: name, version: version, description: description,
            abi: abi, library: library, capabilities: capabilities, exports: exports, config: schema)
        manifest.testConfig = testConfig
        manifest.requiresHubhost = requiresHubhost
        return manifest
    }

    package static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0) }
    }

    static func isSemver(_ version: String) -> Bool {
        let core = version.split(separator: "-", maxSplits: 1).first.map(String.init) ?? version
        let parts = core.split(separator: "+", maxSplits: 1).first?.split(separator: ".", omittingEmptySubsequences: false) ?? []
        return parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }
}

extension PluginManifest {
    /// A config key's constraints (`minimum`, `maximum`, `allowed`, `non_empty`, `pattern`), each
    /// checked for the key's type; its default must satisfy them. `manifest check` and loading then
    /// refuse an instance's value the plugin would refuse, with the reason, before any plugin code runs.
    static func parseConstraints(_ fields: [String: (keyNode: Node, value: Node)], of key: inout ConfigKey, path: String, reader: YAMLReader) {
        let numeric: Set<ConfigType> = [.int, .double, .duration, .time]
        func bound(_ name: String) -> Double? {
            guard let field = fields[name] else { return nil }
            guard numeric.contains(key.type) else {
                reader.report(field.keyNode, key: "\(path).\(name)", "\(name) applies to numbers and durations, not to a \(key.type.rawValue)")
                return nil
            }
            return key.type == .duration ? reader.duration(field.value, key: "\(path).\(name)") : reader.double(field.value, key: "\(path).\(name)")
        }
        let minimum = bound("minimum")
        let maximum = bound("maximum")
        if minimum != nil || maximum != nil {
            if let minimum, let maximum, minimum > maximum, let node = fields["maximum"]?.keyNode {
                reader.report(node, key: "\(path).maximum", "maximum \(maximum) is below minimum \(minimum)")
            }
            key.range = ConfigRange(minimum: minimum, maximum: maximum)
        }
        func stringsOnly(_ name: String) -> Node? {
            guard let field = fields[name] else { return nil }
            guard key.type == .string else {
                reader.report(field.keyNode, key: "\(path).\(name)", "\(name) applies to strings, not to a \(key.type.rawValue)")
                return nil
            }
            return field.value
        }
        if let node = stringsOnly("allowed"), let items = reader.sequence(node, key: "\(path).allowed") {
            key.allowedValues = items.enumerated().compactMap { reader.string($0.element, key: "\(path).allowed[\($0.offset)]") }
        }
        if let node = stringsOnly("non_empty") { key.nonEmpty = reader.bool(node, key: "\(path).non_empty") ?? false }
        if let node = stringsOnly("pattern"), let pattern = reader.string(node, key: "\(path).pattern") {
            if (try? NSRegularExpression(pattern: pattern)) == nil {
                reader.report(node, key: "\(path).pattern", "'\(pattern)' is not a regular expression")
            } else {
                key.pattern = pattern
            }
        }
        if let fallback = key.defaultValue, let refusal = key.refusal(of: fallback), let node = fields["default"]?.value {
            reader.report(node, key: "\(path).default", "the default \(refusal)")
        }
    }
}
