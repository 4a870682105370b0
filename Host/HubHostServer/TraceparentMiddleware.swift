import HTTPTypes
import HubHostKit
import Hummingbird

extension HTTPField.Name {
    /// W3C Trace Context's headers.
    static let traceparent = HTTPField.Name("traceparent")!
    static let tracestate = HTTPField.Name("tracestate")!
}

/// Ahead of Hummingbird's TracingMiddleware (tracing on): a `traceparent` header that is not a
/// valid W3C traceparent (too long, malformed, given twice) is dropped with its `tracestate`
/// before anything parses it, so the request starts a trace of its own, as the W3C asks; never
/// an error. A valid one is passed on in its normalized (version 00, lowercase) form.
struct TraceparentMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = request.headers[values: .traceparent]
        guard !given.isEmpty else { return try await next(request, context) }
        let valid = given.count == 1 ? HubTracing.validTraceparent(given[0]) : nil
        guard valid != given[0] else { return try await next(request, context) }
        var head = request.head
        head.headerFields[values: .traceparent] = valid.map { [$0] } ?? []
        if valid == nil { head.headerFields[values: .tracestate] = [] }
        return try await next(Request(head: head, body: request.body), context)
    }
}

enum RequestTrace {
    /// The traceparent events posted by `request` are kept with: the span of the request when
    /// tracing is on (its trace is the caller's when the caller sent one), else the caller's valid
    /// `traceparent` header; nil when there is neither.
    static func traceparent(of request: Request) -> String? {
        if let current = HubTracing.currentTraceparent { return current }
        guard let header = request.headers[.traceparent] else { return nil }
        return HubTracing.validTraceparent(header)
    }
}
