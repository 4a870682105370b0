import Foundation
import Synchronization

/// A page of the web Content Hub: the session's hub, a channel or an article (ids are bundle paths).
package enum HubPageLocation: Hashable, Sendable {
    case hub
    case channel(String)
    case article(String)

    package var kind: ContentURI.Kind {
        switch self {
        case .hub: return .hub
        case .channel: return .channel
        case .article: return .article
        }
    }

    /// The page's path on `hubhost serve`. The hub page of an open session is `/hub/home`
    /// (`/hub` itself presents again and so opens a new session).
    package var path: String {
        switch self {
        case .hub: return "/hub/home"
        case .channel(let id): return "/hub/channel/" + HubPageLocation.encodePath(id)
        case .article(let id): return "/hub/article/" + HubPageLocation.encodePath(id)
        }
    }

    /// An id in a URL path: each `/`-separated segment percent-encoded.
    static func encodePath(_ id: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#;%")
        return id.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }.joined(separator: "/")
    }

    /// The id a page or resource path names after its prefix (`news/sports` from the raw path
    /// `news/sports`), percent-decoded; nil for anything an id can never be: empty, `.` or `..`
    /// segments (also when encoded as `%2e%2e`), a leading `/`, backslashes or NUL. Ids are only
    /// ever looked up in the bundle's tables, so this is defence in depth, not the only guard.
    package static func decodeID(_ raw: Substring) -> String? {
        guard !raw.isEmpty else { return nil }
        // Percent-decoding (Foundation) only when there is a `%`: most paths have none, and this
        // runs for every page request.
        let decoded = raw.utf8.contains(UInt8(ascii: "%")) ? String(raw).removingPercentEncoding : String(raw)
        guard let decoded, !decoded.isEmpty else { return nil }
        // One pass over the bytes, no array of segments: refuses NUL, `\\`, and any empty, `.` or
        // `..` segment (which also refuses a leading `/`).
        var length = 0
        var dots = 0
        for byte in decoded.utf8 {
            switch byte {
            case 0, UInt8(ascii: "\\"): return nil
            case UInt8(ascii: "/"):
                if length == 0 || (dots == length && length <= 2) { return nil }
                length = 0
                dots = 0
            default:
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        if length == 0 || (dots == length && length <= 2) { return nil }
        return decoded
    }
}

/// One hub session (the ZBiM SDK shows one Content Hub at a time): what was presented, the bundle
/// it was presented from (kept even when a newer bundle is activated meanwhile, so a session never
/// mixes two bundles), whether the app brings its own chrome, and the session's history for back
/// and forward. Visiting a page after going back drops the forward entries, like a browser.
///
/// Every call is O(1) under the session's own small lock (never held across rendering): the
/// history keeps the latest `historyLimit` pages, so a long session cannot grow it without bound.
/// Sendable: the history lives in a Mutex; every other field is a `let` of a Sendable type.
package final class HubSession: Sendable {
    package let id = UUID().uuidString.lowercased()
    /// nil while the session shows a status view (no content yet, downloading, an error).
    package let presentation: Presentation?
    package let bundle: ContentBundle?
    /// `?embed=1`: no close/back/forward buttons (the app has its own).
    package let embed: Bool
    /// The entry point id set before presenting (used by this session only), if any.
    package let entryPoint: String?
    /// What the tailored pages (hub, channels) of this session depend on besides the bundle: the
    /// rendered-page cache shares them between sessions with the same tailoring.
    let tailoring: HubPageCache.Tailoring?

    /// The most pages the history keeps (the oldest are dropped first).
    package static let historyLimit = 1_000

    /// Whether back and forward lead anywhere (the chrome shows them enabled or not).
    package struct Navigation: Equatable, Sendable {
        package var canGoBack: Bool
        package var canGoForward: Bool
    }

    private struct History {
        /// The history is `pages[first...]`: the entries before `first` are dropped already, and
        /// removed from the array together once there are `historyLimit` of them (one move of the
        /// array per `historyLimit` views, not one per view once the history is full).
        var pages: [HubPageLocation] = []
        var first = 0
        /// The current page's position in `pages` (-1: none yet); never below `first`.
        var index = -1

        var canGoBack: Bool { index > first }
        var canGoForward: Bool { index >= 0 && index < pages.count - 1 }
    }
    private let history = Mutex(History())

    package init(presentation: Presentation?, bundle: ContentBundle?, embed: Bool, entryPoint: String? = nil) {
        self.presentation = presentation
        self.bundle = bundle
        self.embed = embed
        self.entryPoint = entryPoint
        tailoring = presentation.map { HubPageCache.Tailoring(hubID: $0.hubID, counts: $0.counts) }
    }

    /// Records a page view and returns where back and forward lead afterwards (one step under the
    /// lock, so the chrome matches this very view even with concurrent requests). Showing the page
    /// the history already points at (reloading it, or the page a back/forward redirect leads to)
    /// does not add an entry; a new page drops the forward entries.
    @discardableResult
    package func visit(_ location: HubPageLocation) -> Navigation {
        history.withLock { h in
            if h.index < 0 || h.pages[h.index] != location {
                if h.index + 1 < h.pages.count { h.pages.removeSubrange((h.index + 1)...) }
                h.pages.append(location)
                if h.pages.count - h.first > Self.historyLimit {
                    h.first = h.pages.count - Self.historyLimit
                    if h.first >= Self.historyLimit {
                        h.pages.removeFirst(h.first)
                        h.first = 0
                    }
                }
                h.index = h.pages.count - 1
            }
            return Navigation(canGoBack: h.canGoBack, canGoForward: h.canGoForward)
        }
    }

    /// Steps back; the page to show, or nil at the start of the session.
    package func back() -> HubPageLocation? {
        history.withLock { h in
            guard h.canGoBack else { return nil }
            h.index -= 1
            return h.pages[h.index]
        }
    }

    /// Steps forward; the page to show, or nil when nothing lies ahead.
    package func forward() -> HubPageLocation? {
        history.withLock { h in
            guard h.canGoForward else { return nil }
            h.index += 1
            return h.pages[h.index]
        }
    }

    package var current: HubPageLocation? { history.withLock { $0.index >= 0 ? $0.pages[$0.index] : nil } }
    package var canGoBack: Bool { history.withLock { $0.canGoBack } }
    package var canGoForward: Bool { history.withLock { $0.canGoForward } }
    /// The history, oldest first, with the position of the current page (-1: none yet).
    package var historySnapshot: (pages: [HubPageLocation], index: Int) {
        history.withLock { (Array($0.pages[$0.first...]), $0.index < 0 ? -1 : $0.index - $0.first) }
    }
}
