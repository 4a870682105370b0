import Foundation

/// The OAuth 2 access token of event delivery (`events.auth_token_url` and the other `auth_*`
/// keys): the refresh-token grant, the token cached until 5 s before it expires. The HTTP collector
/// uses it for its Authorization header; an event_sink plugin asks for it through the host
/// extension "hubhost.event_auth.v1" (hubhost_event_sink.h), so no sink carries OAuth code.
public final class EventAuthTokens: @unchecked Sendable {
    let settings: EventSettings
    let http: HTTPFetcher
    private let lock = NSLock()  // the cache; a refresh may run twice at once, which is harmless
    private var token: (value: String, expiresAtMs: Int64)?

    public init(settings: EventSettings, http: HTTPFetcher) {
        self.settings = settings
        self.http = http
    }

    /// True when `auth_token_url` is set: delivery then needs a token.
    public var isConfigured: Bool { !settings.string("auth_token_url").isEmpty }

    /// The cached access token, or a new one from the refresh-token grant (always a new one when
    /// `forceRefresh`, after the destination refused the cached one).
    public func token(forceRefresh: Bool) -> Result<String, TokenFailure> {
        if forceRefresh { lock.withLock { token = nil } }
        if let token = lock.withLock({ token }), token.expiresAtMs > Clock.wallMs() + 5000 { return .success(token.value) }
        var form = URLComponents()
        form.queryItems = [URLQueryItem(name: "grant_type", value: "refresh_token"),
                           URLQueryItem(name: "refresh_token", value: settings.string("auth_refresh_token")),
                           URLQueryItem(name: "client_id", value: settings.string("auth_client_id")),
                           URLQueryItem(name: "client_secret", value: settings.string("auth_client_secret"))]
        let body = Data((form.percentEncodedQuery ?? "").utf8)
        switch http.fetch("POST", settings.string("auth_token_url"), headers: ["Content-Type": "application/x-www-form-urlencoded"],
                          body: body, timeoutSeconds: settings.postTimeout) {
        case .success(let response) where (200..<300).contains(response.status):
            guard let json = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
                  let value = json["access_token"] as? String else {
                return .failure(TokenFailure("the token endpoint answered without an access_token"))
            }
            let lifetime = (json["expires_in"] as? Double) ?? (json["expires_in"] as? Int).map(Double.init) ?? 3600
            let expires = Clock.wallMs().saturatingAdding(SafeTime.durationMs(lifetime))  // expires_in is the server's number
            lock.withLock { token = (value, expires) }
            return .success(value)
        case .success(let response):
            return .failure(TokenFailure("the token endpoint answered HTTP \(response.status)"))
        case .failure(let failure):
            return .failure(TokenFailure("token endpoint: \(failure.description)"))
        }
    }
}

/// Why no access token could be had (not an attempt: the events wait).
public struct TokenFailure: Error, Sendable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
}
