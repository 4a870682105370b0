import Foundation
import Synchronization

/// The OAuth 2 refresh-token grant and its cached access token, shared by everything in the process
/// that talks to Engage with the same credentials (event delivery and the XMLAPI client): one
/// token, refreshed when it is about to expire or when a service answered 401.
/// Sendable: the cached token and the static registry of caches each live in a Mutex.
package final class OAuthTokenCache: Sendable {
    /// The credentials of one refresh-token grant.
    package struct Credentials: Hashable, Sendable {
        package var tokenURL: String
        package var clientID: String
        package var clientSecret: String
        package var refreshToken: String

        package init(tokenURL: String, clientID: String, clientSecret: String, refreshToken: String) {
            self.tokenURL = tokenURL
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.refreshToken = refreshToken
        }

        /// No token endpoint: requests go without an Authorization header.
        package var isEmpty: Bool { tokenURL.isEmpty }
    }

    /// Why no token could be had. Not an attempt at the service itself: callers keep their work.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    package let credentials: Credentials
    /// The cached token; held through a refresh, so one refresh runs at a time and the others wait for its token.
    private let token = Mutex<(value: String, expiresAtMs: Int64)?>(nil)

    private static let caches = Mutex<[Credentials: OAuthTokenCache]>([:])

    /// The process's one cache for `credentials`.
    package static func shared(_ credentials: Credentials) -> OAuthTokenCache {
        caches.withLock { caches in
            if let cache = caches[credentials] { return cache }
            let cache = OAuthTokenCache(credentials: credentials)
            caches[credentials] = cache
            return cache
        }
    }

    init(credentials: Credentials) { self.credentials = credentials }

    /// The cached access token, or a new one from the refresh-token grant. `forceRefresh` after a
    /// 401: the cached token may have been revoked. Blocks (HTTP): call it off the event loops.
    package func accessToken(http: HTTPFetcher, timeoutSeconds: Double, forceRefresh: Bool = false) -> Result<String, Failure> {
        token.withLock { token in
            if !forceRefresh, let token, token.expiresAtMs > Clock.wallMs() + 5000 { return .success(token.value) }
            token = nil
            var form = URLComponents()
            form.queryItems = [
                URLQueryItem(name: "grant_type", value: "refresh_token"),
                URLQueryItem(name: "refresh_token", value: credentials.refreshToken),
                URLQueryItem(name: "client_id", value: credentials.clientID),
                URLQueryItem(name: "client_secret", value: credentials.clientSecret)
            ]
            // URLComponents leaves '+' alone, which a form decoder reads as a space.
            let encoded = (form.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
            switch http.fetch(
                "POST", credentials.tokenURL, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data(encoded.utf8), timeoutSeconds: timeoutSeconds, maxBodyBytes: HTTPFetcher.maxSmallAnswerBytes)
            {
            case .success(let response) where (200..<300).contains(response.status):
                guard let json = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
                    let value = json["access_token"] as? String, !value.isEmpty
                else {
                    return .failure(Failure(description: "the token endpoint answered without an access_token"))
                }
                // expires_in is the server's number: range-checked before it becomes milliseconds.
                let given = (json["expires_in"] as? Double) ?? (json["expires_in"] as? Int).map(Double.init) ?? 3600
                let lifetime = given.isFinite ? min(max(given, 0), 366 * 86_400) : 3600
                token = (value, Clock.wallMs().saturatingAdding(SafeTime.durationMs(lifetime)))
                return .success(value)
            case .success(let response):
                return .failure(Failure(description: "the token endpoint answered HTTP \(response.status)"))
            case .failure(let failure):
                return .failure(Failure(description: "token endpoint: \(failure.description)"))
            }
        }
    }
}
