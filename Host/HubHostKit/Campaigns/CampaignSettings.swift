/// `campaigns:` in plugins.yaml.
public struct CampaignSettings: Sendable, Equatable {
    public static let schema = ConfigSchema(keys: [
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

    public var enabled = true
    /// Absolute path of the local campaign list, or nil.
    public var file: String?
    public var configURL: String?
    public var pingURL: String?
    public var contextRule: CampaignEngine.ContextRule = .all
    /// `frequency_caps`: the caps on how often messages show (none by default).
    public var frequencyCaps = FrequencyCaps()
    /// The plugins.yaml line each key was given on (absent: the default).
    public var lines: [String: Int] = [:]
    /// The same for the keys of `frequency_caps`.
    public var frequencyCapsLines: [String: Int] = [:]

    public init() {}
}
