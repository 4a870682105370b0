import Foundation
import HubHostKit
import Hummingbird
import Logging
import ServiceLifecycle

/// `hubhost serve`'s HTTP server: the API's router behind its middlewares, with the limits of
/// `server:` (idle timeout, connection cap, body size), as one more service of the runtime.
enum HTTPServer {
    /// The server for `runtime`, listening on server.host and `port` (else server.port). Throws,
    /// before anything listens, when serving would be unsafe (a non-loopback address without a token).
    static func application(runtime: HubHostRuntime, port: Int?) throws -> any Service {
        let host = runtime.host
        let settings = host.manifest.server
        try settings.checkSafeToServe()
        let token = try settings.authToken()
        let logger = Logger(label: "hubhost.server", pipeline: host.pipeline)
        return Application(
            router: try HTTPAPI.router(runtime: runtime, settings: settings, token: token),
            server: .http1(configuration: .init(idleTimeout: .milliseconds(Int64(SafeTime.durationMs(settings.idleTimeout))))),
            configuration: .init(address: .hostname(settings.host, port: port ?? settings.port), serverName: "hubhost",
                                 availableConnectionsDelegate: .maximum(settings.maxConnections, logger: logger)),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? 0
                print("hubhost serving on http://\(settings.host):\(bound)")
                fflush(stdout)
                host.logger.info("serving on http://\(settings.host):\(bound)")
            },
            logger: logger)
    }
}
