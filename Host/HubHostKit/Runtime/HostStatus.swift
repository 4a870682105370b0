import Foundation

/// What one running host says of itself beside its plugin instances: the manifest and data
/// directory it runs on, the logging filter in force (a reload may have changed it since start),
/// the manifest's problems, what its advertiser-ID and location delegates answer, its process and
/// its generation. `GET /v1/status` answers it and `hubhost status` reads it back from the running
/// serve, so the command shows serve's truth rather than a second host's.
public struct HostStatus: Codable, Sendable {
    /// Absolute path of the manifest (plugins.yaml) the host runs on; empty for a manifest with no file.
    public var manifest: String
    /// Absolute path of the host's data directory (`data_dir`).
    public var dataDirectory: String
    /// The log filter in force (`logging:`, as the last reload left it).
    public var logging: LogFilter
    /// Every problem of the manifest in force (file:line:column); empty when it is valid.
    public var diagnostics: [ManifestDiagnostic]
    /// What the advertiser-ID delegates decided now, and which one decided.
    public var advertiserID: AdvertiserIDDecision
    /// Where the location delegates say the device is now; nil when none answered.
    public var location: Location?
    /// The process the host runs in (serve's, when serve answered).
    public var pid: Int32
    /// Reloads applied since start.
    public var generation: Int

    /// The status of `host` now. Blocking: asks the advertiser-ID and location plugins (each call
    /// under its deadline); call it from the BlockingPool or a CLI command.
    public init(_ host: HubHost) {
        let manifest = host.manifest
        self.manifest = manifest.file
        dataDirectory = manifest.dataDirectory
        logging = manifest.logging
        diagnostics = manifest.diagnostics
        advertiserID = host.advertiserID()
        location = host.location()?.location
        pid = getpid()
        generation = host.registry.generation
    }
}
