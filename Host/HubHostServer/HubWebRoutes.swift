import Foundation
import HTTPTypes
import HubHostKit
import Hummingbird
import NIOCore
import Synchronization

/// The web Content Hub's routes and the hub's state and notification stream: thin translations
/// to WebContentHub (HubHostKit/Hub/Web). Pages are HTML with the hub's Content-Security-Policy.
///
///   GET  /hub?tags=a,b&uri=U&entry_point=E&embed=1   present: opens the hub session (replacing any open one)
///   GET  /hub/home                                the session's hub page
///   GET  /hub/channel/<id>, /hub/article/<id>     a page of the session's bundle (ids are paths)
///   GET  /hub/back, /hub/forward                  303 to the previous / next page of the session
///   GET|POST /hub/close                           closes the session
///   GET  /hub/resources/<path>                    a resource from the bundle's resources table
///   GET  /hub/hubhost.css, /hub/hubhost.js        hubhost's stylesheet (both color schemes) and link script (ETag, 304)
///   POST /hub/csp-report                          the browser's CSP violation reports
///   POST /hub/app-action?url=myapp://...          a custom-scheme link was followed: the app action (204; GET: 405)
///   GET  /hub/whitelisted?url=...                 a whitelisted URL with a query, fetched after a verbatim check
///   GET  /v1/hub/state                            HubState JSON
///   POST /v1/hub/views/drain                      waits until every page view answered so far is recorded (metrics, learning)
///   GET  /v1/hub/csp-reports                      the violation reports received (latest 200)
///   GET  /v1/notifications?replay=1               server-sent events: `event: <name>` / `data: <HostNotification JSON>`
enum HubWebRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost, engine events: EventEngine) {
        let webHub = router.group("/hub")
        let hubState = router.group("/v1/hub")
        NotificationStreams.shared.endOnShutdownSignals()
        router.get("/v1/notifications") { request, _ in
            notificationStream(host.notifications, replay: request.uri.queryParameters.get("replay") == "1")
        }
        let hubEngine: HubEngine?
        do { hubEngine = try host.hub() } catch {
            host.logger.error("hub: \(error)")
            hubEngine = nil
        }
        guard let hubEngine else {
            for path in ["/hub", "/hub/**", "/v1/hub/state", "/v1/hub/csp-reports"] {
                router.get(RouterPath(path)) { _, _ -> Response in throw APIError.engineOff("the Content Hub is disabled (hub: enabled: false)") }
            }
            hubState.post("/views/drain") { _, _ -> Response in throw APIError.engineOff("the Content Hub is disabled (hub: enabled: false)") }
            return
        }
        let web = WebContentHub(engine: hubEngine, events: events)
        let http = HTTPFetcher()

        hubState.get("/state") { _, _ in HTTPAPI.json(hubEngine.state) }
        hubState.get("/csp-reports") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: web.violationReportsJSON())))
        }
        webHub.get("") { request, _ in
            let query = request.uri.queryParameters
            let tags = HTTPAPI.tags(request)
            let uri = query.get("uri").map { String($0) }
            let entryPoint = query.get("entry_point").map { String($0) }
            let embed = query.get("embed") == "1" || query.get("embed") == "true"
            return try respond(try await HTTPAPI.blocking { web.present(tags: tags, uri: uri, entryPoint: entryPoint, embed: embed) })
        }
        let pageFields = fields(contentType: "text/html; charset=utf-8", web.pageHeaders)
        webHub.get("/home") { _, _ in try await page(.hub, web, pageFields) }
        webHub.get("/channel/**") { request, _ in
            guard let id = pathID(request, after: "/hub/channel/") else { return try respond(.init(status: 404)) }
            return try await page(.channel(id), web, pageFields)
        }
        webHub.get("/article/**") { request, _ in
            guard let id = pathID(request, after: "/hub/article/") else { return try respond(.init(status: 404)) }
            return try await page(.article(id), web, pageFields)
        }
        hubState.post("/views/drain") { _, _ in
            let drained = try await HTTPAPI.blocking { hubEngine.viewRecorder.waitUntilDrained(timeoutSeconds: 60) }
            let counts = hubEngine.viewRecorder.counts
            return HTTPAPI.json(ViewsDrained(drained: drained, pending: counts.pending, recorded: counts.recorded))
        }
        webHub.get("/back") { _, _ in try respond(web.back()) }
        webHub.get("/forward") { _, _ in try respond(web.forward()) }
        webHub.get("/close") { _, _ in try respond(web.close()) }
        webHub.post("/close") { _, _ in try respond(web.close()) }
        webHub.get("/resources/**") { request, _ in
            guard let path = pathID(request, after: "/hub/resources/") else { return try respond(.init(status: 404)) }
            return try respond(try await HTTPAPI.blocking { web.resource(path) })
        }
        let stylesheet = StaticAsset(HubPageTemplates.stylesheet, contentType: "text/css; charset=utf-8")
        let script = StaticAsset(HubPageTemplates.script, contentType: "text/javascript; charset=utf-8")
        webHub.get("/hubhost.css") { request, _ in stylesheet.response(to: request) }
        webHub.get("/hubhost.js") { request, _ in script.response(to: request) }
        webHub.post("/csp-report") { request, _ in
            let data = try await HTTPAPI.body(request)
            try await HTTPAPI.blocking { web.recordViolation(data) }
            return Response(status: .noContent)
        }
        // An app action changes state (the app acts, an event is tracked), so it is POST only: any
        // page may make a browser GET a URL (an <img>, a link), but a POST from another site
        // carries that site's Origin and is refused by RequestGuardMiddleware. The hub's own pages
        // POST from hubhost.js.
        webHub.post("/app-action") { request, _ in
            guard let url = request.uri.queryParameters.get("url") else { throw APIError(.badRequest, "expected ?url=<custom scheme URL>") }
            let text = String(url)
            return try respond(try await HTTPAPI.blocking { web.appAction(text) })
        }
        webHub.get("/app-action") { _, _ -> Response in
            var error = APIError(.methodNotAllowed, "an app action is sent with POST (from the hub page's hubhost.js), never with GET")
            error.headers[.allow] = "POST"
            throw error
        }
        webHub.get("/whitelisted") { request, _ in
            guard let url = request.uri.queryParameters.get("url") else { throw APIError(.badRequest, "expected ?url=<whitelisted URL>") }
            let text = String(url)
            return try respond(try await HTTPAPI.blocking { web.fetchWhitelisted(text, http: http) })
        }
    }

    /// A page of the open session: from memory on this thread when it is rendered already
    /// (WebContentHub.showFromMemory never blocks), else rendered on the blocking pool. The hop to
    /// the pool and back was most of a cached page's cost (two thread switches per request).
    /// A page from memory is always a 200 HTML page with `web.pageHeaders`: `pageFields` are those
    /// headers converted once, not per request. Its body is one buffer in memory, so the request
    /// metrics let it go out in one write (RequestMetrics.inMemory).
    static func page(_ location: HubPageLocation, _ web: WebContentHub, _ pageFields: HTTPFields) async throws -> Response {
        if let body = web.pageFromMemory(location) {
            RequestMetrics.inMemory()
            return Response(status: .ok, headers: pageFields, body: .init(byteBuffer: body))
        }
        return try respond(try await HTTPAPI.blocking { web.show(location) })
    }

    /// `headers` and the content type as HTTP fields (names that are not valid field names are left out).
    static func fields(contentType: String, _ headers: [String: String]) -> HTTPFields {
        var fields = HTTPFields()
        fields[.contentType] = contentType
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        return fields
    }

    /// `POST /v1/hub/views/drain`'s answer.
    struct ViewsDrained: Encodable {
        /// Every page view answered before the call is recorded (false: 60 s were not enough).
        var drained: Bool
        var pending: Int
        var recorded: Int
    }

    /// The id after `prefix` in the raw (still percent-encoded) request path; nil when it cannot be
    /// an id (`..`, `%2e%2e`, empty segments, an absolute path...).
    static func pathID(_ request: Request, after prefix: String) -> String? {
        let path = request.uri.path
        guard path.hasPrefix(prefix) else { return nil }
        return HubPageLocation.decodeID(path.dropFirst(prefix.count))
    }

    /// A WebContentHub answer as a response. Pages (HTML, also the hub's status views) pass
    /// through with their headers; any other failure becomes the API's JSON error (APIError).
    static func respond(_ answer: HubWebResponse) throws -> Response {
        let isPage = answer.contentType.hasPrefix("text/html") && !answer.body.isEmpty
        if answer.status >= 400, !isPage {
            let text = String(decoding: answer.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw APIError(.init(code: answer.status), text.isEmpty ? "not found" : text)
        }
        RequestMetrics.inMemory()
        return Response(
            status: .init(code: answer.status), headers: fields(contentType: answer.contentType, answer.headers),
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// `GET /v1/notifications`: each notification as a server-sent event until the client goes
    /// away. A comment line every 2 seconds keeps the connection alive and lets a write fail
    /// soon after the client disconnected, which ends the stream and removes the subscription.
    static func notificationStream(_ notifications: HostNotifications, replay: Bool) -> Response {
        ServerSentEventStream.response(prelude: "hubhost notifications") { continuation in
            let token = notifications.subscribe(replay: replay) { notification in
                continuation.yield(serverSentEvent(notification))
            }
            return { notifications.unsubscribe(token) }
        }
    }

    static func serverSentEvent(_ notification: HostNotification) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = (try? encoder.encode(notification)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        let name = notification.name.filter { !$0.isNewline }
        return "event: \(name)\ndata: \(json)\n\n"
    }
}

/// The open notification streams, so that `hubhost serve` can end them when it shuts down (a
/// graceful shutdown waits for open responses, and a stream never ends by itself).
/// Sendable: the open streams and the signal sources live in a Mutex.
final class NotificationStreams: Sendable {
    static let shared = NotificationStreams()
    private struct State {
        var open: [AsyncStream<String>.Continuation] = []
        var signalSources: [DispatchSourceSignal] = []
    }
    private let state = Mutex(State())

    /// Ends every open stream on SIGTERM or SIGINT, beside the server's own graceful shutdown on
    /// the same signals (which would otherwise wait for the streams forever).
    func endOnShutdownSignals() {
        state.withLock { state in
            guard state.signalSources.isEmpty else { return }
            for number in [SIGTERM, SIGINT] {
                signal(number, SIG_IGN)  // as the server's handler does: the dispatch sources get the signal
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { [weak self] in self?.finishAll() }
                source.resume()
                state.signalSources.append(source)
            }
        }
    }

    func add(_ continuation: AsyncStream<String>.Continuation) {
        state.withLock { state in
            state.open.append(continuation)
            if state.open.count > 64 {
                state.open.removeAll { stream in if case .terminated = stream.yield("") { return true } else { return false } }
            }
        }
    }

    func finishAll() {
        let all: [AsyncStream<String>.Continuation] = state.withLock { state in
            defer { state.open = [] }
            return state.open
        }
        for continuation in all { continuation.finish() }
    }
}
