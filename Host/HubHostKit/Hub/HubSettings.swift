/// `hub:` in plugins.yaml: the Content Hub's local settings (the ZBiM SDK's zbimconfig.plist and its
/// setters). The delivery modes and the pilot program are not here: the content service decides
/// them (its settings document), and `hubhost hub status` shows them.
package struct HubSettings: Sendable, Equatable {
    package static let schema = ConfigSchema(keys: [
        ConfigKey(key: "enabled", type: .bool, defaultValue: .bool(true), doc: "false turns the Content Hub off."),
        ConfigKey(
            key: "provider", type: .string, defaultValue: .string(""),
            doc: "The content_provider instance that fetches bundles; empty: the first one in plugins:."),
        ConfigKey(
            key: "db_service_url", type: .string, defaultValue: .string(""),
            doc: "The content service (dbServiceUrl), handed to the provider as its db_service_url config value."),
        ConfigKey(
            key: "public_key", type: .string, defaultValue: .string(""),
            doc: "The DER SubjectPublicKeyInfo key (pubkey.der) bundles must be signed for; relative to plugins.yaml."),
        ConfigKey(
            key: "preloaded_bundle", type: .string, defaultValue: .string(""),
            doc: "A bundle shipped with the app (contentDB.sqlite3), shown at once while a newer one downloads."),
        ConfigKey(
            key: "content_source", type: .string, defaultValue: .string("external_allowed"),
            doc: "external_allowed: hub pages may load external resources; local_only: only the hub's own origin and the whitelists.",
            allowedValues: ContentSource.allCases.map(\.rawValue)),
        ConfigKey(
            key: "frame_ancestors", type: .string, defaultValue: .string("'self'"),
            doc: "Who may show hub pages in a frame: a CSP frame-ancestors source list ('self', 'none', or origins like https://app.example)."),
        ConfigKey(
            key: "color_scheme", type: .string, defaultValue: .string("dark"), doc: "dark or light: the hub's chrome and status views.",
            allowedValues: ColorScheme.allCases.map(\.rawValue)),
        ConfigKey(
            key: "download_timeout", type: .duration, defaultValue: .double(120), doc: "The most one bundle download may take.",
            range: .positive(atMost: SafeTime.maxDurationSeconds), live: true)
    ])
    /// Keys whose value is a list of strings.
    static let listKeys = ["whitelist_urls", "whitelist_domains", "custom_url_schemes"]

    package enum ContentSource: String, Sendable, CaseIterable { case externalAllowed = "external_allowed", localOnly = "local_only" }
    package enum ColorScheme: String, Sendable, CaseIterable { case dark, light }

    package var enabled = true
    /// The content_provider instance id; nil: the first content provider.
    package var provider: String?
    package var dbServiceURL: String?
    /// Absolute path of pubkey.der, or nil (then no bundle can be verified, so none is activated).
    package var publicKeyPath: String?
    /// Absolute path of the preloaded bundle, or nil.
    package var preloadedBundle: String?
    package var contentSource: ContentSource = .externalAllowed
    package var colorScheme: ColorScheme = .dark
    package var downloadTimeout: Double = 120
    /// URLs a local_only hub may still load, compared verbatim (query and fragment included).
    package var whitelistURLs: [String] = []
    /// Domains a local_only hub may still load from.
    package var whitelistDomains: [String] = []
    /// The CSP frame-ancestors sources of hub pages: by default only the hub's own origin may frame them.
    package var frameAncestors = "'self'"
    /// Schemes whose links are app actions for the integrating app, e.g. "myapp" (no "://").
    package var customURLSchemes: [String] = []

    /// The plugins.yaml line each key was given on (absent: the default).
    package var lines: [String: Int] = [:]

    package init() {}
}
