/// What `GET /v1/health` answers, and `hubhost status` reads back from the running serve: "ok", or
/// "degraded" with the plugins stuck in a call past its deadline and the instances that failed
/// while serving (a worker given up) or ejected for failing calls in a row. One type, so the route and the command say the same.
public struct HostHealth: Codable, Equatable, Sendable {
    /// ok or degraded.
    public var status: String
    /// The stuck plugins (only when degraded).
    public var instances: [StuckPlugin]?
    /// The instances that failed while serving (only when degraded).
    public var failed: [FailedInstance]?
    /// The plugins ejected for failing calls in a row (only when degraded).
    public var ejected: [EjectedPlugin]?

    /// The health of `host` now. Cheap and never waits on a plugin: health answers whatever the
    /// plugins do.
    public init(_ host: HubHost) {
        let stuck = host.stuckPlugins
        let failed = host.registry.failedWhileServing
        let ejected = host.registry.ejectedPlugins
        status = stuck.isEmpty && failed.isEmpty && ejected.isEmpty ? "ok" : "degraded"
        instances = stuck.isEmpty ? nil : stuck
        self.failed = failed.isEmpty ? nil : failed
        self.ejected = ejected.isEmpty ? nil : ejected
    }
}
