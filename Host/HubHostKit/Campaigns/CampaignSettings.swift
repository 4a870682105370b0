/// `campaigns:` in plugins.yaml.
public struct CampaignSettings: Sendable, Equatable {
    static let schema = ConfigSchema(keys: [
        ConfigKey(key: "enabled", type: .bool, defaultValue: .bool(true), doc: "false turns the engine off: its calls do nothing."),
        ConfigKey(key: "file", type: .string, defaultValue: .string(""),
                  doc: "A campaign list in the ping response format, for offline use and tests (relative to plugins.yaml)."),
    ])

    public var enabled = true
    /// Absolute path of the local campaign list, or nil.
    public var file: String?

    public init() {}
}
