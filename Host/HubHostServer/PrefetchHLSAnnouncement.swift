import Foundation
import HubHostKit
import ServiceLifecycle

/// The PCD SDK's hlsServerStarted / hlsServerStopped for `hubhost serve`: hubhost's HLS endpoint is
/// part of serve's HTTP server, so it is announced started (`PrefetchHLSServerStarted` `{"url"}`)
/// when the server listens (HTTPServer's onServerRunning) and stopped (`PrefetchHLSServerStopped`)
/// when serve begins its graceful shutdown. This service only waits for that shutdown; it runs
/// after the HTTP server in the service group, so it is shut down (and announces) first, while
/// the server still answers.
public struct PrefetchHLSAnnouncement: Service {
    let host: HubHost

    public init(host: HubHost) { self.host = host }

    /// The address a local player uses: a wildcard listening address becomes the loopback one.
    public static func serverURL(_ scheme: String, _ address: String, _ port: Int) -> String {
        let shown: String
        switch address {
        case "0.0.0.0", "": shown = "127.0.0.1"
        case "::", "[::]": shown = "[::1]"
        default: shown = address.contains(":") && !address.hasPrefix("[") ? "[\(address)]" : address
        }
        return "\(scheme)://\(shown):\(port)"
    }

    public func run() async throws {
        try? await gracefulShutdown()
        let host = self.host
        try? await BlockingPool.run { try host.prefetch()?.hlsServerStopped() }
    }
}
