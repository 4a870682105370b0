import Dispatch
import Hummingbird
import Metrics
import Synchronization

/// Where a route tells RequestMetricsMiddleware that its response is complete in memory.
enum RequestMetrics {
    /// One request's mark, set by the route, read by the middleware once the route returned.
    final class Scope: Sendable {
        let complete = Atomic<Bool>(false)
    }
    @TaskLocal static var scope: Scope?

    /// Marks the response being made as complete in memory (see RequestMetricsMiddleware).
    static func inMemory() { scope?.complete.store(true, ordering: .relaxed) }
}

/// The HTTP requests' metrics, as Hummingbird's MetricsMiddleware records them (its dimensions,
/// under Prometheus names: `hubhost_http_requests_total`, `hubhost_http_request_duration_seconds`
/// and `hubhost_http_request_errors_total` by route, method and status,
/// `hubhost_http_active_requests` by method), with one difference in WHEN: a
/// response the route marked as complete in memory (`RequestMetrics.inMemory()`, e.g.
/// a hub page) is counted when the route returns it. Hummingbird's middleware counts every
/// response after its body is written, by wrapping the body in a closure, and that wrapper costs
/// the single-buffer fast path: head, body and end went out as three writes, three hops to the
/// event loop and three flushes instead of one. Any other response (a stream, a file) is still
/// counted after its body is written.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let cache = RequestMetricsCache()

    /// The HELP text of the metrics above, by name (see RuntimeMetrics.help).
    static var help: [String: String] {
        [
            "hubhost_http_requests_total": "HTTP requests answered, by route, method and status code.",
            "hubhost_http_request_duration_seconds": "Time from a request's arrival to its response, in seconds, by route, method and status code.",
            "hubhost_http_request_errors_total": "HTTP requests answered with an error, by route, method and error type.",
            "hubhost_http_active_requests": "HTTP requests being answered, by method."
        ]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let startTime = DispatchTime.now().uptimeNanoseconds
        let activeRequests = cache.activeRequests(request.method)
        activeRequests.increment()
        let scope = RequestMetrics.Scope()
        do {
            var response = try await RequestMetrics.$scope.withValue(scope) { try await next(request, context) }
            let id = RequestMetricsCache.EndpointID(endpoint: context.endpointPath ?? "Unknown", method: request.method, status: response.status)
            if scope.complete.load(ordering: .relaxed) {
                Self.record(cache.endpoint(id), since: startTime, activeRequests)
            } else {
                response.body = ResponseBody(contentLength: response.body.contentLength) { [body = response.body, cache] writer in
                    defer { Self.record(cache.endpoint(id), since: startTime, activeRequests) }
                    try await body.write(writer)
                }
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let metrics = cache.endpoint(.init(endpoint: context.endpointPath ?? "NotFound", method: request.method, status: status))
            metrics.counter.increment()
            metrics.errorCounter.increment()
            activeRequests.decrement()
            throw error
        }
    }

    /// One response answered: counted, timed, no longer active.
    static func record(_ metrics: RequestMetricsCache.EndpointMetrics, since startTime: UInt64, _ activeRequests: Meter) {
        metrics.counter.increment()
        metrics.timer.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds &- startTime))
        activeRequests.decrement()
    }
}

/// The metric objects by method and by (route, method, status), made once each: the factory's
/// own lookup by label and dimensions costs more than a dictionary access. Not nested in the
/// generic middleware: a type nested there is generic too, and its metadata was looked up at
/// every request.
final class RequestMetricsCache: Sendable {
    struct EndpointID: Hashable {
        let endpoint: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }
    struct EndpointMetrics: Sendable {
        let counter: Counter
        let timer: Metrics.Timer
        let errorCounter: Counter
    }
    private let methods = Mutex([HTTPRequest.Method: Meter]())
    private let endpoints = Mutex([EndpointID: EndpointMetrics]())

    func activeRequests(_ method: HTTPRequest.Method) -> Meter {
        methods.withLock { cached in
            if let meter = cached[method] { return meter }
            let meter = Meter(label: "hubhost_http_active_requests", dimensions: [("http.request.method", method.description)])
            cached[method] = meter
            return meter
        }
    }

    func endpoint(_ id: EndpointID) -> EndpointMetrics {
        endpoints.withLock { cached in
            if let metrics = cached[id] { return metrics }
            let dimensions = [
                ("http.route", id.endpoint), ("http.request.method", id.method.description),
                ("http.response.status_code", id.status.code.description)
            ]
            let metrics = EndpointMetrics(
                counter: Counter(label: "hubhost_http_requests_total", dimensions: dimensions),
                timer: Metrics.Timer(label: "hubhost_http_request_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds),
                errorCounter: Counter(
                    label: "hubhost_http_request_errors_total",
                    dimensions: [
                        ("http.route", id.endpoint), ("http.request.method", id.method.description), ("error.type", id.status.code.description)
                    ]))
            cached[id] = metrics
            return metrics
        }
    }
}
