import Foundation
import HubHostKit
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOSSL
import ServiceLifecycle

/// `hubhost serve`'s HTTP server: the API's router behind its middlewares, with the limits of
/// `server:` (idle timeout, connection cap, body size), as one more service of the runtime.
public enum HTTPServer {
    /// The server for `runtime`, listening on server.host and `port` (else server.port). Throws,
    /// before anything listens, when serving would be unsafe (a non-loopback address without a token).
    public static func application(runtime: HubHostRuntime, port: Int?) throws -> any Service {
        let host = runtime.host
        let settings = host.manifest.server
        try settings.checkSafeToServe()
        let token = try settings.authToken()
        let logger = Logger(label: "hubhost.server", pipeline: host.pipeline)
        let http1: HTTPServerBuilder = .http1(configuration: .init(idleTimeout: .milliseconds(Int64(SafeTime.durationMs(settings.idleTimeout)))))
        let scheme = settings.usesTLS ? "https" : "http"
        return Application(
            router: try HTTPAPI.router(runtime: runtime, settings: settings, token: token),
            server: try settings.usesTLS ? .tls(http1, tlsConfiguration: tlsConfiguration(settings)) : http1,
            configuration: .init(
                address: .hostname(settings.host, port: port ?? settings.port), serverName: "hubhost",
                availableConnectionsDelegate: .maximum(settings.maxConnections, logger: logger)),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? 0
                print("hubhost serving on \(scheme)://\(settings.host):\(bound)")
                fflush(nil)  // every stream: the banner reaches a pipe at once (and no global is named)
                host.logger.info("serving on \(scheme)://\(settings.host):\(bound)")
                // The local HLS endpoint is up with the server (PrefetchHLSAnnouncement).
                if let engine = try? host.prefetch() {
                    engine.hlsServerStarted(serverURL: PrefetchHLSAnnouncement.serverURL(scheme, settings.host, bound))
                }
            },
            logger: logger)
    }

    /// The server's TLS configuration from server.tls_certificate and server.tls_key (PEM).
    static func tlsConfiguration(_ settings: ServerSettings) throws -> TLSConfiguration {
        guard let certificate = settings.tlsCertificate, let key = settings.tlsKey else {
            throw ServerSettingsError(description: "TLS is not configured")
        }
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
            return TLSConfiguration.makeServerConfiguration(
                certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
        } catch {
            throw ServerSettingsError(description: "server.tls_certificate \(certificate) / server.tls_key \(key): cannot be read as PEM (\(error))")
        }
    }
}
