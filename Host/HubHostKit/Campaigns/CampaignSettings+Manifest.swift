import Yams

/// `campaigns:` in plugins.yaml, parsed by the campaign engine's own settings type.
extension CampaignSettings: ManifestSection {
    package static let sectionName = "campaigns"
    package static let summary =
        "The campaign engine (Rakuten In-App Messaging): where the campaign list comes from and when a message with contexts may show."

    /// `frequency_caps` is a map of its own (`FrequencyCaps.schema`): documented as `campaigns.frequency_caps.KEY`.
    package static var structuredKeys: [ConfigReferenceEntry] {
        FrequencyCaps.schema.keys.map { ConfigReferenceEntry(section: "\(sectionName).\(Self.frequencyCapsKey)", key: $0) }
    }

    static let frequencyCapsKey = "frequency_caps"

    package init(section node: Node, context: ManifestSectionContext) {
        self.init()
        // The frequency_caps map is checked against its own schema; the rest against the section's.
        var scalars = node
        if case .mapping(let mapping) = node, let caps = mapping.first(where: { $0.key.string == Self.frequencyCapsKey }) {
            scalars = .mapping(
                Node.Mapping(
                    mapping.filter { $0.key.string != Self.frequencyCapsKey }.map { ($0.key, $0.value) }, mapping.tag, mapping.style, mapping.mark))
            let values = FrequencyCaps.schema.resolve(
                caps.value, path: "\(Self.sectionName).\(Self.frequencyCapsKey)", reader: context.reader, reportAt: caps.key,
                lines: &frequencyCapsLines)
            frequencyCaps = FrequencyCaps(values: values)
        }
        let values = context.resolve(scalars, schema: Self.schema, lines: &lines)
        if case .string(let file)? = values["file"], !file.isEmpty { self.file = context.absolute(file) }
        if case .bool(let enabled)? = values["enabled"] { self.enabled = enabled }
        if case .string(let url)? = values["config_url"], !url.isEmpty { configURL = url }
        if case .string(let url)? = values["ping_url"], !url.isEmpty { pingURL = url }
        // Allowed values were checked against the schema: a refused value arrives as the default.
        if case .string(let rule)? = values["context_rule"], let parsed = CampaignEngine.ContextRule(rawValue: rule) { contextRule = parsed }
    }

    package var effectiveValues: [EffectiveSetting] {
        let values: [String: PluginValue] = [
            "enabled": .bool(enabled), "file": .string(file ?? ""), "config_url": .string(configURL ?? ""),
            "ping_url": .string(pingURL ?? ""), "context_rule": .string(contextRule.rawValue)
        ]
        return Self.schema.effective(values, lines: lines, section: Self.sectionName)
            + FrequencyCaps.schema.effective(
                frequencyCaps.values, lines: frequencyCapsLines, section: "\(Self.sectionName).\(Self.frequencyCapsKey)")
    }
}

extension HostManifest {
    /// The campaign engine's settings (`campaigns:`).
    package var campaigns: CampaignSettings {
        get { section(CampaignSettings.self) }
        set { setSection(newValue) }
    }
}
