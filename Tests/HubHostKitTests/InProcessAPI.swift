import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

@testable import HubHostKit
@testable import HubHostServer

/// The HTTP API of `hubhost serve` in the test's own process: the host and runtime made from a
/// plugins.yaml, and the very router serve runs (every middleware included), driven through
/// HummingbirdTesting without a socket. Tests that need a real process (signals, kill -9, the CLI
/// beside serve, TLS, the Host header a rebinding page sends) use ServeProcess instead.
enum InProcessAPI {
    /// Runs `body` with a client of the API for the manifest `yaml` written to `folder`/plugins.yaml.
    static func test<Value: Sendable>(
        manifest yaml: String, in folder: String,
        _ body: @Sendable (any TestClientProtocol, HubHost) async throws -> Value
    ) async throws -> Value {
        try TestSupport.write(yaml, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let runtime = try HubHostRuntime(host: host)
        let settings = host.manifest.server
        let router = try HTTPAPI.router(runtime: runtime, settings: settings, token: try settings.authToken())
        let application = Application(router: router)
        return try await application.test(.router) { client in try await body(client, host) }
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
