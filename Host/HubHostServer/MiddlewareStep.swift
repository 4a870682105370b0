import Dispatch
import Foundation
import HTTPTypes
import HubHostKit
import Hummingbird
import Logging
import NIOCore

/// `hubhost bench hub`'s middleware figure: one hub page request through the middlewares that
/// `hubhost serve` puts before every route (HTTPAPI.router: request metrics, API errors, the
/// request guard; the tracing ones only run when tracing is on, and are left out), calling each
/// middleware's `handle` in turn, in process: no socket, no HTTP parsing, no router lookup (the
/// framework's part, which `bench floor-server` has too). The route at the end answers a page
/// built once, as the page route does for a page from memory (marked complete in memory).
///
/// The request metrics go to the process's swift-metrics backend: `hubhost serve` bootstraps
/// Prometheus (MetricsRoutes.registry); this does not, so that the benchmarks run after it in
/// the same process (`bench all`) keep the no-op backend they are measured with.
package enum MiddlewareStep {
    /// A request context without a channel (Hummingbird's BasicRequestContext needs one).
    struct Context: RequestContext {
        struct Source: RequestContextSource {
            var logger: Logger
        }
        var coreContext: CoreRequestContextStorage

        init(source: Source) {
            coreContext = .init(source: source)
        }
    }

    /// Microseconds of wall time per request, over `requests` requests (after as many again, at
    /// most 1,000, to warm up), of `GET /hub/home` from 127.0.0.1 through serve's middlewares
    /// with the default server settings (no bearer token: serve's own default on loopback).
    package static func microsecondsPerRequest(requests: Int) async throws -> Double {
        let settings = ServerSettings()
        let metrics = RequestMetricsMiddleware<Context>()
        let errors = APIErrorMiddleware<Context>()
        let guardMiddleware = RequestGuardMiddleware<Context>(settings: settings, token: nil)
        let context = Context(source: .init(logger: Logger(label: "hubhost.bench.middlewares")))
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(settings.port)", path: "/hub/home"),
            body: RequestBody(buffer: ByteBuffer()))
        let page = Response(
            status: .ok, headers: HubWebRoutes.fields(contentType: "text/html; charset=utf-8", ["Cache-Control": "no-store"]),
            body: .init(byteBuffer: ByteBuffer(string: "<!doctype html><title>hub</title>")))
        let route: @Sendable (Request, Context) async throws -> Response = { _, _ in
            RequestMetrics.inMemory()
            return page
        }
        func once() async throws -> Response {
            try await metrics.handle(request, context: context) { request, context in
                try await errors.handle(request, context: context) { request, context in
                    try await guardMiddleware.handle(request, context: context, next: route)
                }
            }
        }
        for _ in 0..<min(max(requests, 1), 1_000) { _ = try await once() }
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<max(requests, 1) {
            let response = try await once()
            guard response.status == .ok else { throw APIError(.internalServerError, "the middlewares answered \(response.status)") }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e3 / Double(max(requests, 1))
    }
}
