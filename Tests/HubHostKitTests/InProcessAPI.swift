import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import XCTest

@testable import HubHostKit
@testable import HubHostServer

/// The HTTP API of `hubhost serve` in the test's own process: the host and runtime made from a
/// plugins.yaml, and the very router serve runs (every middleware included), driven through
/// HummingbirdTesting without a socket (`test`), or listening on a loopback socket for raw bytes
/// the test client cannot send (`listening`). Tests that need a real process (signals, kill -9,
/// the CLI beside serve, TLS) use ServeProcess instead.
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
    /// a chunked body, any Host header. It listens on 127.0.0.1 whatever server.host says; the
    /// request guard still reads server.host and the other settings from the manifest.
    static func listening<Value: Sendable>(
        manifest yaml: String, in folder: String,
        _ body: @Sendable (_ port: Int, HubHost) async throws -> Value
    ) async throws -> Value {
        let (host, router) = try makeRouter(manifest: yaml, in: folder)
        defer { host.shutdown() }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) })
        let services = ServiceGroup(configuration: .init(services: [application], logger: Logger(label: "InProcessAPI")))
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
                await services.triggerGracefulShutdown()
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
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        do {
            let runtime = try HubHostRuntime(host: host)
            let settings = host.manifest.server
            return (host, try HTTPAPI.router(runtime: runtime, settings: settings, token: try settings.authToken()))
        } catch {
            host.shutdown()
            throw error
        }
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
