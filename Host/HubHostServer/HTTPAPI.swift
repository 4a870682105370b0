import Foundation
import HubHostKit
import Hummingbird
import NIOCore

/// The HTTP API of `hubhost serve`: a thin front end over HubHostKit, like the CLI. Every route
/// answers JSON (the web hub's pages excepted); every error is `{"error": {"code", "message"}}`
/// (APIError). The whole API is described in openapi.yaml, served at GET /openapi.yaml. Each
/// engine's routes are in their own `*Routes.swift` file of this folder, added in `router(...)`
/// below, written any way Hummingbird allows: OpenAPITests reads the routes from the built router
/// (`Router.routes`) and checks them against openapi.yaml both ways. The tests drive this router
/// in process (Tests/HubHostKitTests/InProcessAPI.swift).
enum HTTPAPI {
    /// The body limit of the request being handled (server.max_body_size), set by RequestGuardMiddleware.
    @TaskLocal static var maxBodySize = ServerSettings.defaultMaxBodySize

    static func router(runtime: HubHostRuntime, settings: ServerSettings, token: String?) throws -> Router<BasicRequestContext> {
        let host = runtime.host
        let router = Router()
        _ = MetricsRoutes.registry  // bootstraps swift-metrics before any metric is made
        // Middlewares apply to the routes added after them: every route below is guarded.
        if HubTracing.isEnabled {
            // A span per request (named for its route), under the caller's traceparent when valid.
            router.add(middleware: TraceparentMiddleware())
            router.add(middleware: TracingMiddleware())
        }
        router.add(middleware: RequestMetricsMiddleware())
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: RequestGuardMiddleware(settings: settings, token: token))
        MetricsRoutes.add(to: router, host: host, engine: try host.events())
        // Answers at once whatever the plugins do: a plugin stuck in a call, an instance that
        // failed while serving (a worker given up), or a plugin ejected for failing calls in a
        // row makes it "degraded".
        router.get("/v1/health") { _, _ in json(HostHealth(host)) }
        router.get("/openapi.yaml") { _, _ in try openAPIDocument() }
        AdminRoutes.add(to: router, host: host)
        EventRoutes.add(to: router, engine: try host.events())
        CampaignRoutes.add(
            to: router, campaigns: try host.campaigns(), source: host.manifest.campaigns, images: CampaignImageCache(manifest: host.manifest),
            frameAncestors: host.manifest.hub.frameAncestors)
        UserRoutes.add(to: router, host: host)
        HubWebRoutes.add(to: router, host: host, engine: try host.events())
        HubDeliveryRoutes.add(to: router, host: host)
        IdentityRoutes.add(to: router, host: host)
        PrefetchRoutes.add(to: router, host: host)
        PrefetchPlaybackRoutes.add(to: router, host: host)
        PrefetchCatalogRoutes.add(to: router, host: host)
        return router
    }

    /// The request's body, at most server.max_body_size bytes (413 beyond). Every route reads its
    /// body here. A body that declared its length was measured by RequestGuardMiddleware already;
    /// a chunked one is only known to be too large once collecting it crosses the limit, and
    /// NIO's error for that would otherwise answer 500.
    static func body(_ request: Request) async throws -> Data {
        var request = request
        do {
            let buffer = try await request.collectBody(upTo: maxBodySize)
            return Data(buffer.readableBytesView)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: maxBodySize)
        }
    }

    /// `?tags=a,b` as a list (nil when absent); the same for the hub page and the present route.
    static func tags(_ request: Request) -> [String]? {
        request.uri.queryParameters.get("tags").map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
    }

    /// A JSON body decoded as `T`; an empty body decodes as `empty` when given (optional bodies).
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, empty: T? = nil) async throws -> T {
        let data = try await body(request)
        if data.isEmpty, let empty { return empty }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw APIError(.badRequest, APIError.describe(error))
        }
    }

    /// Runs blocking engine work (SQLite, plugin calls, files) on the BlockingPool, never on an
    /// event loop or a concurrency thread.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await BlockingPool.run(work)
        } catch let error as ManifestError {
            // An engine whose plugins.yaml section has problems refuses to open: the route's engine
            // is not usable until the manifest is fixed.
            throw APIError(.serviceUnavailable, error.description, code: "not_configured")
        }
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return json(bytes: (try? encoder.encode(value)) ?? Data("null".utf8), status: status)
    }

    /// An answer of JSON already encoded. Complete in memory, so the request metrics let it go out
    /// in one write (RequestMetrics.inMemory), as every JSON answer of the API (`json(events:status:)`
    /// too).
    static func json(bytes data: Data, status: HTTPResponse.Status = .ok) -> Response {
        RequestMetrics.inMemory()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// `events` as `EventView.json(events:)` writes them, written straight into the answer's buffer
    /// (no array, no Data, no copy): `POST /v1/events`' 201.
    static func json(events: [Event], status: HTTPResponse.Status) -> Response {
        RequestMetrics.inMemory()
        let bound = EventView.jsonByteBound(events: events)
        var buffer = ByteBufferAllocator().buffer(capacity: bound)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: bound) { EventView.writeJSON(events: events, to: $0) }
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }

    /// openapi.yaml from the repository the binary was built in, or next to the executable.
    static func openAPIDocument() throws -> Response {
        let candidates: [String?] = [
            LibraryLocator.runningExecutableFolder().map { $0 + "/openapi.yaml" },
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("openapi.yaml").path
        ]
        for path in candidates.compactMap({ $0 }) {
            if let data = FileManager.default.contents(atPath: path) {
                return Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
            }
        }
        throw APIError(.notFound, "openapi.yaml was not found beside the executable or in the source tree")
    }
}
