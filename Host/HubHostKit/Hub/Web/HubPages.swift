import Foundation

/// The HTML of the web Content Hub's pages: the hub (its channels, each with its articles in
/// tailored order), a channel (its articles in tailored order) and an article (its body from the
/// bundle, inserted as HTML: that is the content, verified and signed). Every other text (titles,
/// ids, messages) is escaped. hubhost's chrome (close, back, forward) is left out for `?embed=1`
/// sessions. Pages carry `data-` attributes (kind, ids) so tests and apps can read them.
///
/// A page is rendered without its session (RenderedHubPage): what differs between sessions (the
/// session id, the chrome's back and forward) is spliced in per request, so that the web hub
/// renders each page once (HubPageCache).
package struct HubPages: Sendable {
    package let settings: HubSettings
    package let templatesDirectory: String
    let rewriter: HubLinkRewriter

    package init(settings: HubSettings, templatesDirectory: String) {
        self.settings = settings
        self.templatesDirectory = templatesDirectory
        rewriter = HubLinkRewriter(settings: settings)
    }

    /// The page at `location` of a session presented as `presentation` from `bundle` (`embed`:
    /// the app brings its own chrome); nil when the bundle has no such item (the route answers 404).
    /// Hub and channel pages depend on the presentation's tailoring, article pages do not.
    package func render(_ location: HubPageLocation, presentation: Presentation, bundle: ContentBundle, embed: Bool) -> RenderedHubPage? {
        let e = HubPageTemplates.escape
        switch location {
        case .hub:
            var body = "<h1 id=\"hub-title\" data-hub-id=\"\(e(presentation.hubID))\">\(e(presentation.hubTitle))</h1>\n"
            for channel in presentation.channels {
                body += "<section class=\"hubhost-channel\" data-channel-id=\"\(e(channel.id))\">"
                body += "<h2><a href=\"\(e(HubPageLocation.channel(channel.id).path))\">\(e(channel.title))</a></h2>\n"
                body += articleList(channel.articles) + "</section>\n"
            }
            return page(presentation.hubTitle, kind: .hub, id: presentation.hubID, body: body, embed: embed)
        case .channel(let id):
            guard let channel = bundle.channel(id) else { return nil }
            let articles = Tailoring.order(channel.articles, counts: presentation.counts)
            var body = breadcrumb(hubID: channel.hubID, bundle: bundle)
            body += "<h1 id=\"channel-title\" data-channel-id=\"\(e(channel.id))\">\(e(channel.title))</h1>\n"
            body += articleList(articles)
            return page(channel.title, kind: .channel, id: channel.id, body: body, embed: embed)
        case .article(let id):
            guard let article = bundle.article(id), let html = bundle.body(ofArticle: id) else { return nil }
            var body = breadcrumb(hubID: bundle.channel(article.channelID)?.hubID, bundle: bundle, channelID: article.channelID)
            // An article that opens with its own heading keeps it; the page's title is then for tools only.
            let ownHeading = html.drop(while: { $0.isWhitespace }).hasPrefix("<h1")
            body += "<h1 id=\"article-title\" data-article-id=\"\(e(article.id))\"\(ownHeading ? " hidden" : "")>\(e(article.title))</h1>\n"
            body += "<article class=\"hubhost-article-body\">\n" + rewriter.rewrite(html) + "\n</article>\n"
            return page(article.title, kind: .article, id: article.id, body: body, embed: embed)
        }
    }

    /// Whether the session's bundle has the page's item.
    package func contains(_ location: HubPageLocation, in session: HubSession) -> Bool {
        guard session.presentation != nil, let bundle = session.bundle else { return false }
        switch location {
        case .hub: return true
        case .channel(let id): return bundle.channel(id) != nil
        case .article(let id): return bundle.article(id) != nil
        }
    }

    /// A status view (the hub has nothing to present yet, or cannot present).
    package func status(_ status: HubPageTemplates.Status, message: String, percent: Int?, session: HubSession?) -> String {
        HubPageTemplates.statusView(
            status, message: message, percent: percent, templatesDirectory: templatesDirectory,
            colorScheme: settings.colorScheme,
            chrome: session.map { chrome(embed: $0.embed, HubSession.Navigation(canGoBack: false, canGoForward: false)) } ?? "")
    }

    /// The page after closing the hub.
    package func closed() -> String {
        """
        <!DOCTYPE html>
        <html lang="en" class="scheme-\(settings.colorScheme.rawValue)"><head><meta charset="utf-8"><title>Content Hub closed</title>
        <link rel="stylesheet" href="/hub/hubhost.css"></head>
        <body data-hub-kind="closed"><main><p id="hubhost-closed">The Content Hub is closed. <a href="/hub">Open it again</a></p></main></body></html>
        """
    }

    private func articleList(_ articles: [ContentBundle.Article]) -> String {
        let e = HubPageTemplates.escape
        var list = "<ol class=\"hubhost-articles\">\n"
        for article in articles {
            list +=
                "<li data-article-id=\"\(e(article.id))\"><a href=\"\(e(HubPageLocation.article(article.id).path))\">\(e(article.title))</a></li>\n"
        }
        return list + "</ol>\n"
    }

    private func breadcrumb(hubID: String?, bundle: ContentBundle, channelID: String? = nil) -> String {
        let e = HubPageTemplates.escape
        var parts: [String] = []
        if let hub = hubID.flatMap(bundle.hub) { parts.append("<a href=\"/hub/home\">\(e(hub.title))</a>") }
        if let channel = channelID.flatMap(bundle.channel) {
            parts.append("<a href=\"\(e(HubPageLocation.channel(channel.id).path))\">\(e(channel.title))</a>")
        }
        return parts.isEmpty ? "" : "<p class=\"hubhost-breadcrumb\">" + parts.joined(separator: " › ") + "</p>\n"
    }

    /// Close, back and forward (disabled where they lead nowhere); none in embed sessions. Status
    /// views show back and forward disabled.
    package func chrome(embed: Bool, _ navigation: HubSession.Navigation) -> String {
        guard !embed else { return "" }
        return Self.chromes[(navigation.canGoBack ? 1 : 0) + (navigation.canGoForward ? 2 : 0)]
    }

    /// The four chromes (back x forward enabled), built once.
    private static let chromes: [String] = (0..<4).map { bits in
        func button(_ id: String, _ label: String, _ href: String, enabled: Bool) -> String {
            enabled
                ? "<a id=\"\(id)\" class=\"hubhost-button\" href=\"\(href)\">\(label)</a>"
                : "<span id=\"\(id)\" class=\"hubhost-button hubhost-disabled\">\(label)</span>"
        }
        let back = button("hubhost-back", "‹ Back", "/hub/back", enabled: bits & 1 != 0)
        let forward = button("hubhost-forward", "Forward ›", "/hub/forward", enabled: bits & 2 != 0)
        return "<nav class=\"hubhost-chrome\" id=\"hubhost-chrome\">\(back)\(forward)<span class=\"hubhost-spacer\"></span>"
            + "<a id=\"hubhost-close\" class=\"hubhost-button\" href=\"/hub/close\">✕ Close</a></nav>\n"
    }

    private func page(_ title: String, kind: ContentURI.Kind, id: String, body: String, embed: Bool) -> RenderedHubPage {
        let e = HubPageTemplates.escape
        let schemes = settings.customURLSchemes.map { $0.lowercased() }.joined(separator: " ")
        // <base href="/hub/">: relative references in article bodies (`resources/site.css`) resolve to
        // /hub/resources/..., which serves the bundle's resources table.
        let head = """
            <!DOCTYPE html>
            <html lang="en" class="scheme-\(settings.colorScheme.rawValue)"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1"><base href="/hub/">
            <title>\(e(title))</title><link rel="stylesheet" href="/hub/hubhost.css"><script src="/hub/hubhost.js" defer></script></head>
            <body data-hub-kind="\(kind.rawValue)" data-id="\(e(id))" data-session="
            """
        // The session id goes between head and middle, the chrome between middle and main.
        let middle = "\" data-embed=\"\(embed ? "1" : "0")\" data-app-schemes=\"\(e(schemes))\">\n"
        let main = "<main>\n\(body)</main></body></html>"
        return RenderedHubPage(head: Array(head.utf8), middle: Array(middle.utf8), main: Array(main.utf8), title: title)
    }
}
