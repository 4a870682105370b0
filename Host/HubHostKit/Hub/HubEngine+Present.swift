import Foundation

/// Presenting for the active user (the SDK's presentHub* calls), deep links, and what viewing a hub
/// teaches the user's profile. The tailoring itself is `presentation(counts:tags:uri:)`.
extension HubEngine {
    /// Sets the entry point (the SDK's setContentHubEntryPoint) for the next presentation only: it
    /// is recorded in that presentation's metrics, then reset.
    public func setEntryPoint(_ entryPoint: String?) { metrics.setEntryPoint(entryPoint) }

    /// Presents the hub for the active user's tag counts (none active: no counts, so the first hub in
    /// bundle order), or for a tags override, or opens a URI (see `contentURI(for:)`). Tracks "Hub
    /// Presented" with the pending entry point, which is then reset.
    public func present(tags: [String]? = nil, uri: String? = nil, waitForContent: Bool = true) throws -> Presentation {
        try presentFromBundle(tags: tags, uri: uri, waitForContent: waitForContent).presentation
    }

    /// `present`, with the bundle the presentation was made from: the active bundle is read once, so
    /// a bundle another process activates meanwhile cannot split a hub session between two bundles.
    /// With `track` false, "Hub Presented" is left to the caller (the web hub hands it to its
    /// page-view recorder, in order with the page views).
    package func presentFromBundle(
        tags: [String]? = nil, uri: String? = nil, waitForContent: Bool = true,
        track: Bool = true
    ) throws -> (presentation: Presentation, bundle: ContentBundle) {
        try beforePresent?(waitForContent)
        let bundle = activeBundle
        let target = try uri.map { try contentURI(for: $0, in: bundle) }
        let presentation = try presentation(counts: users.activeTagCounts(), tags: tags, uri: target, from: bundle)
        if track { metrics.hubPresented(presentation) }
        return (presentation, bundle!)  // presentation(...) threw when there is none
    }

    /// The content a URI names, in the three forms the SDK accepts:
    /// - `zbimdb://hub|channel|article/<id>`;
    /// - a deep link with a registered custom scheme (`hub.custom_url_schemes`), e.g.
    ///   `myapp://article/news/x`, whose scheme is replaced by `zbimdb://`;
    /// - a regular http(s) URL, looked up as an article's original source URL (app indexing).
    /// Anything else, or nothing matching in the active bundle, is PresentError.notFound.
    public func contentURI(for text: String) throws -> ContentURI { try contentURI(for: text, in: nil) }

    /// `contentURI(for:)` against `bundle` (nil: the active bundle).
    func contentURI(for text: String, in bundle: ContentBundle?) throws -> ContentURI {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let schemeEnd = trimmed.range(of: "://") else { throw PresentError.notFound("'\(text)' (not a URI)") }
        let scheme = trimmed[..<schemeEnd.lowerBound].lowercased()
        let rest = trimmed[schemeEnd.upperBound...]
        if scheme == ContentURI.scheme || settings.customURLSchemes.contains(where: { $0.lowercased() == scheme }) {
            guard let uri = ContentURI(ContentURI.scheme + "://" + rest) else {
                throw PresentError.notFound("'\(text)' (expected \(scheme)://hub|channel|article/<id>)")
            }
            return uri
        }
        if scheme == "http" || scheme == "https" {
            guard let bundle = bundle ?? activeBundle else { throw PresentError.noContent }
            guard let article = bundle.article(sourceURL: trimmed) else { throw PresentError.notFound("an article whose source URL is \(trimmed)") }
            return ContentURI(.article, article.id)
        }
        let known = ([ContentURI.scheme] + settings.customURLSchemes).map { $0 + "://" }.joined(separator: ", ")
        throw PresentError.notFound("'\(text)' (scheme '\(scheme)' is neither \(known) nor http(s))")
    }

    /// Reading an article adds each of its tags once to the active user's counts (how the profile
    /// learns). Returns the counts added; empty when no user is active (nothing is learned then).
    @discardableResult
    public func recordArticleRead(_ articleID: String) throws -> [String: Int] {
        guard let bundle = activeBundle else { throw PresentError.noContent }
        guard let article = bundle.article(articleID) else { throw PresentError.notFound("article '\(articleID)'") }
        return try recordArticleRead(article)
    }

    /// The same for an article already looked up (the web hub has it from the session's bundle).
    @discardableResult
    func recordArticleRead(_ article: ContentBundle.Article) throws -> [String: Int] {
        guard users.activeUser() != nil else { return [:] }
        let deltas = Tailoring.counts(forOverride: article.tags)
        if !deltas.isEmpty { try users.updateTagCounts(deltas) }
        return deltas
    }

    /// Tracks "Channel Viewed" (the web hub calls it when a channel page is shown).
    @discardableResult
    public func trackChannelViewed(_ channelID: String) throws -> Event? {
        guard let bundle = activeBundle else { throw PresentError.noContent }
        guard let channel = bundle.channel(channelID) else { throw PresentError.notFound("channel '\(channelID)'") }
        return metrics.channelViewed(channel)
    }

    /// Tracks "Article Viewed" with the time spent on it in milliseconds (the web hub calls it when
    /// the reader leaves the article; nil when unknown).
    @discardableResult
    public func trackArticleViewed(_ articleID: String, timeSpentMs: Int64?) throws -> Event? {
        guard let bundle = activeBundle else { throw PresentError.noContent }
        guard let article = bundle.article(articleID) else { throw PresentError.notFound("article '\(articleID)'") }
        return metrics.articleViewed(article, hubID: bundle.channel(article.channelID)?.hubID, timeSpentMs: timeSpentMs)
    }
}
