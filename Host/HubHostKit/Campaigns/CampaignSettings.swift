/// `campaigns:` in plugins.yaml.
package struct CampaignSettings: Sendable, Equatable {
    package static let schema = ConfigSchema(keys: [
        ConfigKey(key: "enabled", type: .bool, defaultValue: .bool(true), doc: "false turns the engine off: its calls do nothing."),
        ConfigKey(
            key: "file", type: .string, defaultValue: .string(""),
            doc: "A campaign list in the ping response format, for offline use and tests (relative to plugins.yaml)."),
        ConfigKey(
            key: "config_url", type: .string, defaultValue: .string(""),
            doc:
                "The configuration endpoint: {\"data\": {\"enabled\": bool, \"endpoints\": {\"ping\": \"...\"}}} or {\"enabled\": bool, \"pingUrl\": \"...\"}; \"enabled\": false turns the engine off.",
            live: true
        ),
        ConfigKey(
            key: "ping_url", type: .string, defaultValue: .string(""),
            doc: "The ping endpoint answering the campaign list (used when the config endpoint names none).", live: true),
        ConfigKey(
            key: "context_rule", type: .string, defaultValue: .string("all"),
            doc: "When a message with [contexts] may show: all (every context allowed by the caller), any, or none.",
            allowedValues: CampaignEngine.ContextRule.allCases.map(\.rawValue), live: true)
    ])

    package var enabled = true
    /// Absolute path of the local campaign list, or nil.
    package var file: String?
    package var configURL: String?
    package var pingURL: String?
    package var contextRule: CampaignEngine.ContextRule = .all
    /// `frequency_caps`: the caps on how often messages show (none by default).
    package var frequencyCaps = FrequencyCaps()
    /// The plugins.yaml line each key was given on (absent: the default).
    package var lines: [String: Int] = [:]
    /// The same for the keys of `frequency_caps`.
    package var frequencyCapsLines: [String: Int] = [:]

    package init() {}
}
