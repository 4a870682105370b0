import Foundation
import Logging
import NIOCore
import Synchronization

/// An answer of the web Content Hub, independent of the HTTP server that sends it.
package struct HubWebResponse: Sendable {
    package var status: Int
    package var contentType: String
    package var body: Data
    package var headers: [String: String]

    package init(status: Int, contentType: String = "text/html; charset=utf-8", body: Data = Data(), headers: [String: String] = [:]) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    static func html(_ text: String, status: Int = 200, policy: ContentSecurityPolicy) -> HubWebResponse {
        HubWebResponse(
            status: status, body: Data(text.utf8),
            headers: policy.pageHeaders.merging(["Cache-Control": "no-store"]) { a, _ in a })
    }

    static func redirect(_ location: String) -> HubWebResponse {
        HubWebResponse(
            status: 303, contentType: "text/plain; charset=utf-8", body: Data(), headers: ["Location": location, "Cache-Control": "no-store"])
    }

    static func notFound(_ message: String) -> HubWebResponse {
        HubWebResponse(status: 404, contentType: "text/plain; charset=utf-8", body: Data((message + "\n").utf8))
    }
}

extension HostNotification.Name {
    /// A browser reported a Content-Security-Policy violation on a hub page (payload: blocked-uri,
    /// violated-directive, document-uri).
    public static let contentSecurityViolation = "ContentSecurityViolation"
}

/// The web Content Hub that `hubhost serve` serves (the ZBiM SDK's Content Hub view): one hub
/// session at a time, its pages with their security policy, status views while there is no
/// content, app actions for custom-scheme links, and the browser's CSP violation reports. The HTTP
/// routes (Host/hubhost/Server/HubWebRoutes.swift) only translate requests to these calls.
/// Sendable: the session, the status views' percent and error, the violation reports, the open
/// article and the notification subscription live in a Mutex; the rest are `let`s.
package final class WebContentHub: Sendable {
    package let engine: HubEngine
    package let pages: HubPages
    package let policy: ContentSecurityPolicy
    /// The pages rendered so far (see HubPageCache), shared by every session of this hub.
    package let pageCache = HubPageCache()
    /// The headers of every page: the security policy, and no-store (a page shows the session's
    /// chrome, and each view counts). `showFromMemory`'s answers always carry exactly these (and
    /// the HTML content type), so a server may convert them once.
    package let pageHeaders: [String: String]
    let events: EventEngine?
    let logger: Logger

    private struct State {
        var session: HubSession?
        var downloadPercent: Int?
        var lastError: String?
        var violations: [Data] = []
        var subscription: UUID?
        /// The article on screen, when it was shown (for its time spent) and the bundle it is from.
        var openArticle: (id: String, shownAtMs: Int64, bundle: ContentBundle)?
    }
    private let state = Mutex(State())
    /// The most violation reports kept for `GET /v1/hub/csp-reports`.
    package static let violationLimit = 200

    package init(engine: HubEngine, events: EventEngine?) {
        self.engine = engine
        self.events = events
        logger = Logger(label: "hubhost.hub.web", pipeline: engine.pipeline)
        pages = HubPages(settings: engine.settings, templatesDirectory: (engine.directory as NSString).appendingPathComponent("templates"))
        policy = ContentSecurityPolicy(settings: engine.settings)
        pageHeaders = policy.pageHeaders.merging(["Cache-Control": "no-store"]) { a, _ in a }
        // The status views show the latest download percent and error.
        let subscription = engine.notifications.subscribe(replay: true) { [weak self] notification in
            guard let self else { return }
            switch notification.name {
            case HostNotification.Name.downloadProgressChanged:
                var percent: Int?
                if case .number(let value)? = notification.payload["percent"] ?? notification.payload["progress"], value.isFinite {
                    percent = Int(min(100, max(0, value)))
                }
                self.state.withLock { $0.downloadPercent = percent }
            case HostNotification.Name.error:
                let message =
                    notification.payload["message"]?.plainText ?? notification.payload.values.map(\.plainText).sorted().joined(separator: " ")
                self.state.withLock { $0.lastError = message }
            case HostNotification.Name.readyStateChanged:
                self.state.withLock { $0.lastError = nil }
            default: break
            }
        }
        state.withLock { $0.subscription = subscription }
    }

    deinit { if let subscription = state.withLock({ $0.subscription }) { engine.notifications.unsubscribe(subscription) } }

    /// The open hub session, if any.
    package var currentSession: HubSession? { state.withLock { $0.session } }

    // MARK: Presenting and closing

    /// Presents the hub (`GET /hub`): opens a new session, replacing any open one (one hub at a
    /// time), and shows the hub presented for the active user's tag counts (HubEngine.present, which
    /// tracks "Hub Presented" with the entry point), or for a tags override, or the item a URI
    /// names (`zbimdb://...`, a registered custom scheme, or an article's source URL). The entry
    /// point, when given, is set just before and so used by this presentation only. Without
    /// content it shows a status view (checking, downloading with its percent, or the error).
    package func present(tags: [String]? = nil, uri: String? = nil, entryPoint: String? = nil, embed: Bool = false) -> HubWebResponse {
        var leaving = HubViewRecorder.View(leaving: takeOpenArticle())
        let presentation: Presentation
        let bundle: ContentBundle
        do {
            if let entryPoint { engine.setEntryPoint(entryPoint) }
            // Without content a download starts in the background and the status view shows its progress.
            // "Hub Presented" goes to the page-view recorder, after the views before it (which keep
            // their session's entry point): in order, without waiting for them.
            (presentation, bundle) = try engine.presentFromBundle(tags: tags, uri: uri, waitForContent: false, track: false)
            leaving.presented = (presentation, engine.metrics.takePendingEntryPoint())
            engine.viewRecorder.add(leaving)
        } catch let error as HubEngine.PresentError {
            engine.viewRecorder.add(leaving)
            let newSession = HubSession(presentation: nil, bundle: nil, embed: embed)
            open(newSession)
            return statusView(for: error, session: newSession)
        } catch {
            engine.viewRecorder.add(leaving)
            let newSession = HubSession(presentation: nil, bundle: nil, embed: embed)
            open(newSession)
            return .html(pages.status(.error, message: "\(error)", percent: nil, session: newSession), status: 500, policy: policy)
        }
        let newSession = HubSession(presentation: presentation, bundle: bundle, embed: embed, entryPoint: entryPoint)
        open(newSession)
        let target: HubPageLocation
        switch presentation.target?.kind {
        case .channel?: target = .channel(presentation.target!.id)
        case .article?: target = .article(presentation.target!.id)
        default: target = .hub
        }
        return show(target)
    }

    /// Closes the session (the hub's close button, or the app): isDisplayingContentHub becomes false.
    package func close() -> HubWebResponse {
        engine.viewRecorder.add(HubViewRecorder.View(leaving: takeOpenArticle()))
        state.withLock { $0.session = nil }
        engine.setState(\.isDisplayingContentHub, false)
        return .html(pages.closed(), policy: policy)
    }

    private func open(_ newSession: HubSession) {
        state.withLock { $0.session = newSession }
        engine.setState(\.isDisplayingContentHub, true)
    }

    private func statusView(for error: HubEngine.PresentError, session: HubSession) -> HubWebResponse {
        switch error {
        case .noContent:
            let (percent, failure) = state.withLock { ($0.downloadPercent, $0.lastError) }
            if engine.state.isDownloadingContent {
                return .html(pages.status(.downloading, message: "Downloading content…", percent: percent ?? 0, session: session), policy: policy)
            }
            if let failure {
                return .html(pages.status(.error, message: failure, percent: nil, session: session), status: 503, policy: policy)
            }
            return .html(pages.status(.checking, message: "Checking for content…", percent: nil, session: session), policy: policy)
        case .notFound:
            return .html(pages.status(.error, message: error.description, percent: nil, session: session), status: 404, policy: policy)
        case .disabled, .notPartOfPilotProgram:
            return .html(pages.status(.error, message: error.description, percent: nil, session: session), status: 503, policy: policy)
        }
    }

    // MARK: Pages

    /// A page of the open session (`/hub/home`, `/hub/channel/<id>`, `/hub/article/<id>`): only
    /// items of the session's verified bundle, looked up by id. Without a session (or one with
    /// nothing presented yet), a channel or article page opens a session at that item, as
    /// `/hub?uri=zbimdb://...` does, so that a bookmarked page still shows that page; the hub page
    /// redirects to `/hub`.
    ///
    /// The page comes from the rendered-page cache (rendered on its first view); the request's own
    /// work is O(1): the session's history (its own small lock), the session id and chrome
    /// spliced into the cached bytes, the ContentTypeChanged notification, and the view handed to
    /// the page-view recorder (HubViewRecorder: metrics and profile learning, off the request
    /// path; this call waits only when its queue is full). Blocks (rendering reads the bundle):
    /// call it on the blocking pool; `showFromMemory` is the call for the event loop.
    package func show(_ location: HubPageLocation) -> HubWebResponse {
        guard let session = currentSession, let presentation = session.presentation, let bundle = session.bundle else {
            switch location {
            case .hub: return .redirect("/hub")
            case .channel(let id): return present(uri: ContentURI(.channel, id).description)
            case .article(let id): return present(uri: ContentURI(.article, id).description)
            }
        }
        guard
            let page = pageCache.page(
                pageKey(location, session: session, bundle: bundle),
                render: {
                    guard var page = pages.render(location, presentation: presentation, bundle: bundle, embed: session.embed) else { return nil }
                    let uri = ContentURI(location.kind, location == .hub ? presentation.hubID : locationID(location))
                    page.contentTypeChanged = [
                        "type": .string(location.kind.rawValue), "url": .string(uri.description), "path": .string(location.path),
                        "title": .string(page.title)
                    ]
                    return page
                })
        else {
            let id: String
            switch location {
            case .hub: id = presentation.hubID
            case .channel(let channel), .article(let channel): id = channel
            }
            return .notFound("\(ContentURI(location.kind, id).description) is not in the hub's content bundle")
        }
        _ = engine.viewRecorder.reserve(wait: true)
        let navigation = recordView(location, page: page, session: session, bundle: bundle)
        return HubWebResponse(
            status: 200, body: page.html(sessionID: session.id, chrome: pages.chrome(embed: session.embed, navigation)),
            headers: pageHeaders)
    }

    /// `show`, answered from memory alone, or nil: the page is not rendered yet, there is no
    /// session to show it in, or the page-view recorder's queue is full (then `show` on the
    /// blocking pool waits for room). Never blocks: no SQLite, file or plugin call, only locks
    /// held for a dictionary access or a few assignments, so the server answers a cached page on
    /// the thread that read the request, without the round trip to the blocking pool. The bytes
    /// are the same as `show`'s for the same view.
    package func showFromMemory(_ location: HubPageLocation) -> HubWebResponse? {
        pageFromMemory(location).map { HubWebResponse(status: 200, body: Data($0.readableBytesView), headers: pageHeaders) }
    }

    /// `showFromMemory`'s page as the buffer a server sends (a 200 HTML page with `pageHeaders`):
    /// the page's bytes are copied once per view, straight into the buffer.
    package func pageFromMemory(_ location: HubPageLocation) -> ByteBuffer? {
        guard let session = currentSession, session.presentation != nil, let bundle = session.bundle,
            let page = pageCache.cached(pageKey(location, session: session, bundle: bundle)),
            engine.viewRecorder.reserve(wait: false)
        else { return nil }
        let navigation = recordView(location, page: page, session: session, bundle: bundle)
        return page.buffer(sessionID: session.id, chrome: pages.chrome(embed: session.embed, navigation))
    }

    private func pageKey(_ location: HubPageLocation, session: HubSession, bundle: ContentBundle) -> HubPageCache.Key {
        switch location {
        case .hub, .channel: return .init(bundle: bundle.serial, location: location, tailoring: session.tailoring, embed: session.embed)
        case .article: return .init(bundle: bundle.serial, location: location, tailoring: nil, embed: session.embed)
        }
    }

    /// The view of a page found (or rendered): history, notification, and the view's records
    /// handed to the recorder (its place `reserve`d by the caller). Returns where back and forward
    /// lead now (the page's chrome). Memory only.
    private func recordView(
        _ location: HubPageLocation, page: RenderedHubPage, session: HubSession, bundle: ContentBundle
    ) -> HubSession.Navigation {
        var view = HubViewRecorder.View()
        // An article's reading starts when it is shown; the same article again (a reload) goes on.
        let now = Clock.wallMs()
        let left = state.withLock { state -> (id: String, shownAtMs: Int64, bundle: ContentBundle)? in
            let previous = state.openArticle
            switch location {
            case .article(let id):
                guard previous?.id != id else { return nil }
                state.openArticle = (id, now, bundle)
                if let article = bundle.article(id) { view.read = article }
            case .hub, .channel:
                state.openArticle = nil
            }
            return previous
        }
        view.left = left.flatMap { Self.leaving($0, now: now) }
        if case .channel(let id) = location { view.channel = bundle.channel(id) }
        let navigation = session.visit(location)  // with the view, so that back/forward match the new history
        engine.notifications.post(HostNotification.Name.contentTypeChanged, page.contentTypeChanged)
        engine.viewRecorder.submit(view)
        return navigation
    }

    /// The article on screen, which the reader is leaving now (nil when none).
    private func takeOpenArticle() -> (article: ContentBundle.Article, hubID: String?, timeSpentMs: Int64)? {
        let open = state.withLock { state -> (id: String, shownAtMs: Int64, bundle: ContentBundle)? in
            defer { state.openArticle = nil }
            return state.openArticle
        }
        return open.flatMap { Self.leaving($0, now: Clock.wallMs()) }
    }

    /// "Article Viewed" for the article left: the time spent on it (never negative).
    private static func leaving(
        _ open: (id: String, shownAtMs: Int64, bundle: ContentBundle),
        now: Int64
    ) -> (article: ContentBundle.Article, hubID: String?, timeSpentMs: Int64)? {
        guard let article = open.bundle.article(open.id) else { return nil }
        return (article, open.bundle.channel(article.channelID)?.hubID, max(0, now - open.shownAtMs))
    }

    private func locationID(_ location: HubPageLocation) -> String {
        switch location {
        case .hub: return currentSession?.presentation?.hubID ?? ""
        case .channel(let id), .article(let id): return id
        }
    }

    /// `/hub/back`: a redirect to the previous page of the session (to the current one at the start).
    package func back() -> HubWebResponse {
        guard let session = currentSession else { return .redirect("/hub") }
        return .redirect((session.back() ?? session.current ?? .hub).path)
    }

    /// `/hub/forward`: a redirect to the next page of the session (to the current one at the end).
    package func forward() -> HubWebResponse {
        guard let session = currentSession else { return .redirect("/hub") }
        return .redirect((session.forward() ?? session.current ?? .hub).path)
    }

    /// `/hub/resources/<path>`: from the resources table of the session's bundle (the active one
    /// without a session), looked up as `resources/<path>`, then as `<path>`. Never the filesystem.
    package func resource(_ path: String) -> HubWebResponse {
        guard let bundle = currentSession?.bundle ?? engine.activeBundle else { return .notFound("no content bundle is active") }
        guard let found = bundle.resource("resources/" + path) ?? bundle.resource(path) else {
            return .notFound("resources/\(path) is not in the content bundle")
        }
        return HubWebResponse(
            status: 200, contentType: found.mimeType, body: found.data,
            headers: policy.pageHeaders)
    }

    // MARK: App actions

    /// A link to a registered custom scheme was clicked (`POST /hub/app-action?url=myapp://...`,
    /// sent by the hub page's script): the app action notification for the integrating app and
    /// an "App Action" event; 204. A URL without a registered scheme is refused (400).
    package func appAction(_ url: String) -> HubWebResponse {
        guard HubLinkRewriter(settings: engine.settings).isAppAction(url) else {
            return HubWebResponse(
                status: 400, contentType: "text/plain; charset=utf-8",
                body: Data(
                    "'\(url)' does not use a registered custom URL scheme (hub.custom_url_schemes: \(engine.settings.customURLSchemes))\n".utf8))
        }
        let scheme = String(url[..<url.firstIndex(of: ":")!]).lowercased()
        engine.notifications.post(HostNotification.Name.appAction, ["url": .string(url), "scheme": .string(scheme)])
        if let events {
            var event = Event(type: .namedEvent, name: "App Action")
            event.set("URL", .string(url))
            event.set("Scheme", .string(scheme))
            do { _ = try events.track(event) } catch { logger.error("cannot track the app action \(url): \(error)") }
        }
        return HubWebResponse(status: 204, contentType: "text/plain; charset=utf-8")
    }

    // MARK: Whitelisted URLs with a query

    /// The largest answer `/hub/whitelisted` passes on (it is held whole in memory to be answered).
    package static let maxWhitelistedBytes = 16 << 20

    /// `/hub/whitelisted?url=...`: fetches `url` for a local_only page only when it is in
    /// `hub.whitelist_urls` verbatim (query included); 403 otherwise. See ContentSecurityPolicy.
    package func fetchWhitelisted(_ url: String, http: HTTPFetcher) -> HubWebResponse {
        guard ContentSecurityPolicy.needsVerbatimCheck(url, engine.settings) else {
            logger.warning("refused /hub/whitelisted for \(url): not in hub.whitelist_urls verbatim")
            return HubWebResponse(status: 403, contentType: "text/plain; charset=utf-8", body: Data("'\(url)' is not a whitelisted URL\n".utf8))
        }
        switch http.fetch("GET", url, timeoutSeconds: 15, maxBodyBytes: Self.maxWhitelistedBytes) {
        case .success(let response):
            let type = response.headers.first { $0.key.lowercased() == "content-type" }?.value ?? "application/octet-stream"
            return HubWebResponse(status: response.status, contentType: type, body: response.body, headers: ["X-Content-Type-Options": "nosniff"])
        case .failure(let failure):
            return HubWebResponse(status: 502, contentType: "text/plain; charset=utf-8", body: Data("\(url): \(failure)\n".utf8))
        }
    }

    // MARK: CSP violation reports

    /// A browser's violation report (`POST /hub/csp-report`, `{"csp-report": {...}}` or a Reporting
    /// API list): logged, posted as ContentSecurityViolation, and kept (the latest 200).
    package func recordViolation(_ body: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: body) else {
            logger.warning("a CSP violation report that is not JSON (\(body.count) bytes)")
            return
        }
        let reports: [[String: Any]]
        if let dictionary = object as? [String: Any] {
            reports = [(dictionary["csp-report"] as? [String: Any]) ?? dictionary]
        } else {
            reports = (object as? [[String: Any]])?.map { ($0["body"] as? [String: Any]) ?? $0 } ?? []
        }
        for report in reports {
            let blocked = "\(report["blocked-uri"] ?? report["blockedURL"] ?? "")"
            let directive = "\(report["violated-directive"] ?? report["effectiveDirective"] ?? "")"
            let document = "\(report["document-uri"] ?? report["documentURL"] ?? "")"
            logger.warning("content security policy blocked \(blocked) (\(directive)) on \(document)")
            if let data = try? JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]) {
                state.withLock { state in
                    state.violations.append(data)
                    if state.violations.count > Self.violationLimit {
                        state.violations.removeFirst(state.violations.count - Self.violationLimit)
                    }
                }
            }
            engine.notifications.post(
                HostNotification.Name.contentSecurityViolation,
                ["blocked-uri": .string(blocked), "violated-directive": .string(directive), "document-uri": .string(document)])
        }
    }

    /// The kept violation reports, oldest first, as a JSON array.
    package func violationReportsJSON() -> Data {
        let kept = state.withLock { $0.violations }
        return Data(("[" + kept.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ",") + "]").utf8)
    }
}
