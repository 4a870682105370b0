import Foundation

/// The OAuth 2 access token of event delivery (`events.auth_token_url` and the other `auth_*`
/// keys): the refresh-token grant, the token cached until 5 s before it expires. The HTTP collector
/// uses it for its Authorization header; an event_sink plugin asks for it through the host
/// extension "hubhost.event_auth.v1" (hubhost_event_sink.h), so no sink carries OAuth code.
/// Sendable: immutable after init (two `let`s of Sendable types); the token itself lives in the shared
/// OAuthTokenCache, which locks its own state.
package final class EventAuthTokens: Sendable {
    let settings: EventSettings
    let http: HTTPFetcher

    package init(settings: EventSettings, http: HTTPFetcher) {
        self.settings = settings
        self.http = http
    }

    /// True when `auth_token_url` is set: delivery then needs a token.
    package var isConfigured: Bool { !settings.string("auth_token_url").isEmpty }

    /// The cached access token, or a new one from the refresh-token grant (always a new one when
    /// `forceRefresh`, after the destination refused the cached one). The cache is the process's
    /// `OAuthTokenCache` for these credentials, so the XMLAPI client shares the same token.
    package func token(forceRefresh: Bool) -> Result<String, TokenFailure> {
        OAuthTokenCache.shared(settings.oauthCredentials)
            .accessToken(http: http, timeoutSeconds: settings.postTimeout, forceRefresh: forceRefresh)
            .mapError { TokenFailure($0.description) }
    }
}

/// Why no access token could be had (not an attempt: the events wait).
package struct TokenFailure: Error, Sendable {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
}
