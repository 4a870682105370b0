/// `server:` in plugins.yaml: where `hubhost serve` listens. Loopback by default.
public struct ServerSettings: Codable, Equatable, Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port.
    public var port = 8420

    public init() {}
}
