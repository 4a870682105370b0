/// The sections of plugins.yaml beyond the host's own (data_dir, logging, plugins), each parsed by
/// its engine's settings type. A new engine adds its settings type here.
extension HostManifest {
    static let sectionTypes: [any ManifestSection.Type] = [
        ServerSettings.self, EventSettings.self, DeepLinkRouter.self, CampaignSettings.self, HubSettings.self, IdentitySettings.self,
        PrefetchSettings.self, TrustSettings.self, TracingSettings.self
    ]

    /// The engine sections' names, in the order `config show` lists them.
    public static var sectionNames: [String] { sectionTypes.map { $0.sectionName } }

    /// Where `hubhost serve` listens and who may talk to it (`server:`).
    package var server: ServerSettings {
        get { section(ServerSettings.self) }
        set { setSection(newValue) }
    }
}
