import Yams

/// `campaigns:` in plugins.yaml, parsed by the campaign engine's own settings type.
extension CampaignSettings: ManifestSection {
    public static let sectionName = "campaigns"

    public init(section node: Node, context: ManifestSectionContext) {
        self.init()
        let values = context.resolve(node, schema: Self.schema, lines: &lines)
        if case .string(let file)? = values["file"], !file.isEmpty { self.file = context.absolute(file) }
        if case .bool(let enabled)? = values["enabled"] { self.enabled = enabled }
        if case .string(let url)? = values["config_url"], !url.isEmpty { configURL = url }
        if case .string(let url)? = values["ping_url"], !url.isEmpty { pingURL = url }
        if case .string(let rule)? = values["context_rule"] {
            if let parsed = CampaignEngine.ContextRule(rawValue: rule) {
                contextRule = parsed
            } else {
                context.report(node.mapping?["context_rule"], key: "campaigns.context_rule",
                               "unknown context rule '\(rule)'; expected one of: \(CampaignEngine.ContextRule.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
    }

    public var effectiveValues: [EffectiveSetting] {
        let values: [String: PluginValue] = ["enabled": .bool(enabled), "file": .string(file ?? ""), "config_url": .string(configURL ?? ""),
                                             "ping_url": .string(pingURL ?? ""), "context_rule": .string(contextRule.rawValue)]
        return Self.schema.effective(values, lines: lines, section: Self.sectionName)
    }
}

extension HostManifest {
    /// The campaign engine's settings (`campaigns:`).
    public var campaigns: CampaignSettings {
        get { section(CampaignSettings.self) }
        set { setSection(newValue) }
    }
}
