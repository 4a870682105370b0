import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import Logging
import ServiceLifecycle
import XCTest

@testable import HubHostKit
@testable import HubHostServer

/// The HTTP API of `hubhost serve` in the test's own process: the host and runtime made from a
/// plugins.yaml, and the very router serve runs (every middleware included), driven through
/// HummingbirdTesting without a socket (`test`), or listening on a loopback socket for raw bytes
/// the test client cannot send, the CLI's `--url` or another outside client (`listening`, with the
/// runtime's services when asked). CLI child processes share its data directory as they share
/// serve's. Tests that need a real serve process use ServeProcess instead: signals sent to serve
/// (SIGHUP, SIGTERM and its exit status end to end, kill -9 and a restart on what it left), TLS
/// that serve sets up, a plugin thread that never returns, the process-wide tracer.
enum InProcessAPI {
    /// Runs `body` with a client of the API for the manifest `yaml` written to `folder`/plugins.yaml.
    static func test<Value: Sendable>(
        manifest yaml: String, in folder: String,
        _ body: @Sendable (any TestClientProtocol, HubHost) async throws -> Value
    ) async throws -> Value {
        let (host, router) = try makeRouter(manifest: yaml, in: folder)
        defer { host.shutdown() }
        let application = Application(router: router)
        return try await application.test(.router) { client in try await body(client, host) }
    }

    /// Runs `body` with the port of the API listening on 127.0.0.1 (a free port), for RawHTTPClient:
    /// a chunked body, any Host header, or a child process (the CLI's `--url`) through ListeningAPI.
    /// It listens on 127.0.0.1 whatever server.host says; the request guard still reads server.host
    /// and the other settings from the manifest. With `services`, the runtime's background services
    /// run beside the server as in serve (see `listening(manifestPath:services:license:_:)`).
    static func listening<Value: Sendable>(
        manifest yaml: String, in folder: String, services runsServices: Bool = false, license: String? = nil,
        _ body: @Sendable (_ port: Int, HubHost) async throws -> Value
    ) async throws -> Value {
        try TestSupport.write(yaml, to: folder + "/plugins.yaml")
        return try await listening(manifestPath: folder + "/plugins.yaml", services: runsServices, license: license, body)
    }

    /// `listening` for the plugins.yaml the test wrote at `manifestPath`. With `services`, serve's
    /// start-up and background work runs as HubHostRuntime.run runs it for serve: event delivery
    /// (flushes, purges, a last flush at shutdown), campaign pings, local notifications, content
    /// delivery (the start-up sync and recurring ones), the identity journal (a pending merge
    /// finished at start), prefetch rounds, and the HLS endpoint announced once the server listens
    /// and stopped at shutdown; all but the SIGHUP reload, which would trap the test process's signal.
    /// Without, only the requests do anything (as `test` does). Once `body` returns, the services
    /// shut down gracefully as on serve's SIGTERM, and `listening` returns once they all stopped and
    /// the host shut down (or throws what a service threw: serve would exit non-zero). `license` is
    /// serve's `--license`: the prefetch engine opened with it before the runtime opens it. The
    /// server has serve's limits: server.idle_timeout and server.max_connections.
    static func listening<Value: Sendable>(
        manifestPath: String, services runsServices: Bool = false, license: String? = nil,
        _ body: @Sendable (_ port: Int, HubHost) async throws -> Value
    ) async throws -> Value {
        let (runtime, router) = try makeRuntime(manifestPath: manifestPath, license: license)
        let host = runtime.host
        defer {
            try? host.events().onDeliveryDue = nil  // the engine and the delivery service held each other
            host.shutdown()
        }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let settings = host.manifest.server
        // serve's server limits (HTTPServer): the idle timeout, the connection cap, its name.
        let http1: HTTPServerBuilder = .http1(configuration: .init(idleTimeout: .milliseconds(SafeTime.durationMs(settings.idleTimeout))))
        let application = Application(
            router: router, server: http1,
            configuration: .init(
                address: .hostname("127.0.0.1", port: 0), serverName: "hubhost",
                availableConnectionsDelegate: .maximum(settings.maxConnections, logger: Logger(label: "InProcessAPI"))),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                // As HTTPServer's: the local HLS endpoint is up with the server.
                if runsServices, let engine = try? host.prefetch() {
                    engine.hlsServerStarted(serverURL: PrefetchHLSAnnouncement.serverURL("http", settings.host, port))
                }
                portContinuation.yield(port)
            })
        // serve's order (HubHostRuntime.run): the engines' services, then the server, then the HLS
        // announcement; shut down in reverse.
        let background: [any Service] = runsServices ? runtime.services.filter { !($0 is ReloadOnHangUp) } : []
        let announcement: [any Service] = runsServices ? [PrefetchHLSAnnouncement(host: host)] : []
        let services = ServiceGroup(
            configuration: .init(services: background + [application] + announcement, logger: Logger(label: "InProcessAPI")))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A server that cannot listen ends the port stream, so the wait below ends too.
                defer { portContinuation.finish() }
                try await services.run()
            }
            var waiting = ports.makeAsyncIterator()
            guard let port = await waiting.next(), port > 0 else {
                try await group.waitForAll()
                throw RawHTTPClient.Failure(description: "the API did not listen")
            }
            do {
                let value = try await body(port, host)
                // serve's SIGTERM; serve's exit status is 0 exactly when its services then stop
                // without an error, which this waits for (and throws otherwise).
                await services.triggerGracefulShutdown()
                try await group.waitForAll()
                return value
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
        }
    }

    /// Every route serve's router registers for the manifest `yaml` written to `folder`/plugins.yaml,
    /// read from the router itself (Hummingbird's `Router.routes`): the method, and the path as
    /// Hummingbird prints it (`{id}` a capture, `**` the rest of the path).
    static func routes(manifest yaml: String, in folder: String) throws -> [(method: String, path: String)] {
        let (host, router) = try makeRouter(manifest: yaml, in: folder)
        defer { host.shutdown() }
        return router.routes.map { (method: $0.method.rawValue, path: $0.path.description) }
    }

    /// The host for the manifest `yaml` written to `folder`/plugins.yaml, and serve's router on it.
    private static func makeRouter(manifest yaml: String, in folder: String) throws -> (HubHost, Router<BasicRequestContext>) {
        try TestSupport.write(yaml, to: folder + "/plugins.yaml")
        let (runtime, router) = try makeRuntime(manifestPath: folder + "/plugins.yaml")
        return (runtime.host, router)
    }

    /// The runtime (host and engines' services, not running) for the plugins.yaml at `path`, and
    /// serve's router on it; the prefetch engine opened with `license` first when one is given.
    private static func makeRuntime(manifestPath path: String, license: String? = nil) throws -> (HubHostRuntime, Router<BasicRequestContext>) {
        let host = try HubHost(manifestPath: path)
        do {
            if let license { _ = try host.prefetch(license: license) }
            let runtime = try HubHostRuntime(host: host)
            let settings = host.manifest.server
            return (runtime, try HTTPAPI.router(runtime: runtime, settings: settings, token: try settings.authToken()))
        } catch {
            host.shutdown()
            throw error
        }
    }
}

/// A synchronous client of an API that listens on 127.0.0.1 (`InProcessAPI.listening`), with
/// ServeProcess's calls: `base`, `port`, `http`, `call`. It blocks: use it off Swift concurrency's
/// threads (TestSupport.offPool), which the in-process server needs to answer.
struct ListeningAPI: JSONCalls {
    let port: Int
    /// `http://127.0.0.1:PORT`
    var base: String { "http://127.0.0.1:\(port)" }
    let http = HTTPFetcher()

    init(port: Int) { self.port = port }
}

/// `call` for any API at `base`: ServeProcess (a child serve) or ListeningAPI (in process).
protocol JSONCalls: Sendable {
    var base: String { get }
    var http: HTTPFetcher { get }
}

extension JSONCalls {
    /// One JSON request: the status and the decoded body (fragments allowed).
    func call(_ method: String, _ path: String, _ body: String? = nil) throws -> (Int, Any) {
        let response = try http.fetch(
            method, base + path, headers: ["Content-Type": "application/json"], body: body.map { Data($0.utf8) },
            timeoutSeconds: 10
        ).get()
        return (response.status, try JSONSerialization.jsonObject(with: response.body, options: [.fragmentsAllowed]))
    }
}

extension TestResponse {
    /// The body as text.
    var text: String { String(buffer: body) }

    /// The body decoded as JSON (fragments allowed); nil when it is not JSON.
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(buffer: body), options: [.fragmentsAllowed]) }

    /// `error.code` of hubhost's one error shape, `{"error": {"code", "message"}}`.
    var errorCode: String? { ((json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String }
}

extension TestClientProtocol {
    /// A request with a JSON body (`Content-Type: application/json`) and any further headers.
    func send(_ method: HTTPRequest.Method, _ path: String, json body: String? = nil, headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers = extra
        if body != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return try await execute(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }
}
