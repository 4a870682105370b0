import Foundation
import Yams

/// `hub:` in plugins.yaml, parsed by the hub's own settings type.
extension HubSettings: ManifestSection {
    package static let sectionName = "hub"
    package static let summary =
        "The Content Hub (the ZBiM SDK): where signed bundles come from, the key they must be signed with, and the web hub's security policy."
    package static var structuredKeys: [ConfigReferenceEntry] {
        [
            ConfigReferenceEntry(
                key: "hub.whitelist_urls", type: "list of strings", defaultValue: "[]",
                doc:
                    "URLs a local_only hub may still load, compared verbatim (query and fragment included); also the images a campaign preview may fetch."
            ),
            ConfigReferenceEntry(
                key: "hub.whitelist_domains", type: "list of strings", defaultValue: "[]",
                doc: "Domains a local_only hub may still load from; also where a campaign preview may fetch images (their subdomains too)."),
            ConfigReferenceEntry(
                key: "hub.custom_url_schemes", type: "list of strings", defaultValue: "[]",
                doc: "Schemes whose links are app actions for the integrating app, e.g. myapp (a trailing :// is dropped).")
        ]
    }

    /// `hub:`: scalar keys through HubSettings.schema, the whitelists and schemes as lists of strings.
    package init(section node: Node, context: ManifestSectionContext) {
        let reader = context.reader
        let anchor = context.anchor
        let folder = context.folder
        var settings = HubSettings()
        defer { self = settings }
        guard let entries = reader.mapping(node, key: "hub") else { return }
        let known = reader.known(entries, allowed: HubSettings.schema.keys.map(\.key) + HubSettings.listKeys, in: "hub")
        // Unknown keys were reported just above: hand the schema only its own keys.
        let scalarKeys = Set(HubSettings.schema.keys.map(\.key))
        let scalars = entries.filter { scalarKeys.contains($0.key) }.map { ($0.keyNode, $0.value) }
        var lines: [String: Int] = [:]
        let values = HubSettings.schema.resolve(Node.mapping(Node.Mapping(scalars)), path: "hub", reader: reader, reportAt: anchor, lines: &lines)
        settings.lines = lines
        for key in HubSettings.listKeys { if let line = known[key]?.keyNode.mark?.line { settings.lines[key] = line } }
        func text(_ key: String) -> String? {
            if case .string(let value)? = values[key], !value.isEmpty { return value }
            return nil
        }
        if case .bool(let enabled)? = values["enabled"] { settings.enabled = enabled }
        settings.provider = text("provider")
        settings.dbServiceURL = text("db_service_url")
        settings.publicKeyPath = text("public_key").map { HostManifest.absolute($0, from: folder) }
        settings.preloadedBundle = text("preloaded_bundle").map { HostManifest.resource($0, from: folder) }
        if case .double(let seconds)? = values["download_timeout"] { settings.downloadTimeout = seconds }
        if let ancestors = text("frame_ancestors") {
            // One header value: a list of sources, never a second directive or header smuggled in.
            if ancestors.range(of: #"^[A-Za-z0-9'*:/._ -]+$"#, options: .regularExpression) != nil {
                settings.frameAncestors = ancestors
            } else if let node = known["frame_ancestors"]?.keyNode {
                reader.report(
                    node, key: "hub.frame_ancestors", "expected CSP sources such as 'self', 'none' or https://app.example, not '\(ancestors)'")
            }
        }
        // Allowed values were checked against the schema: a refused value arrives as the default.
        if let source = text("content_source"), let parsed = HubSettings.ContentSource(rawValue: source) { settings.contentSource = parsed }
        if let scheme = text("color_scheme"), let parsed = HubSettings.ColorScheme(rawValue: scheme) { settings.colorScheme = parsed }
        func list(_ key: String) -> [String] {
            guard let node = known[key]?.value, let items = reader.sequence(node, key: "hub.\(key)") else { return [] }
            return items.enumerated().compactMap { reader.string($0.element, key: "hub.\(key)[\($0.offset)]") }
        }
        settings.whitelistURLs = list("whitelist_urls")
        settings.whitelistDomains = list("whitelist_domains")
        settings.customURLSchemes = list("custom_url_schemes").map { $0.hasSuffix("://") ? String($0.dropLast(3)) : $0 }
    }

    package var effectiveValues: [EffectiveSetting] {
        func setting(_ key: String, _ value: JSONValue) -> EffectiveSetting {
            EffectiveSetting(
                key: "hub.\(key)", value: value, line: lines[key],
                doc: Self.schema.keys.first { $0.key == key }?.doc ?? "")
        }
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return [
            setting("enabled", .bool(enabled)), setting("provider", text(provider)), setting("db_service_url", text(dbServiceURL)),
            setting("public_key", text(publicKeyPath)), setting("preloaded_bundle", text(preloadedBundle)),
            setting("content_source", .string(contentSource.rawValue)), setting("frame_ancestors", .string(frameAncestors)),
            setting("color_scheme", .string(colorScheme.rawValue)), setting("download_timeout", .number(downloadTimeout)),
            setting("whitelist_urls", .array(whitelistURLs.map(JSONValue.string))),
            setting("whitelist_domains", .array(whitelistDomains.map(JSONValue.string))),
            setting("custom_url_schemes", .array(customURLSchemes.map(JSONValue.string)))
        ]
    }

    /// hub.db_service_url is handed to the hub's provider instance (Hub/Delivery/ProviderServiceURL).
    package static func finish(_ manifest: inout HostManifest) { manifest.fillProviderServiceURL() }
}

extension HostManifest {
    /// The Content Hub's settings (`hub:`).
    package var hub: HubSettings {
        get { section(HubSettings.self) }
        set { setSection(newValue) }
    }
}
