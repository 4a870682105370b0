import Foundation
import Logging

/// Posts XMLAPI resources to Engage (the Engage SDK's `XMLAPIManager.postXMLAPI`): the form field `xml=`
/// to `{host}/XMLAPI`, with the Bearer token of the OAuth 2 refresh-token grant from the cache the
/// event engine uses too; a 401 refreshes the token once. Network failures and 5xx answers are
/// retried with exponential backoff and jitter (`maxRetries` more attempts); API faults and other
/// 4xx are not. Blocking: call it from the BlockingPool, a CLI command or another thread that may wait.
public final class XMLAPIClient: Sendable {
    /// Where and how the client posts: from the `identity:` section of plugins.yaml (`host`, the OAuth credentials,
    /// `requestTimeout`, `maxRetries`, `retryBaseDelay`).
    public struct Settings: Sendable {
        /// The Engage base URL (e.g. https://api-campaign-us-1.goacoustic.com); `/XMLAPI` is appended.
        public var host: String
        package var credentials: OAuthTokenCache.Credentials
        /// The deadline of one request, in seconds (`identity.requestTimeout`, 30 s by default); the token request has the same.
        public var timeoutSeconds: Double
        /// Retries after the first attempt, for network failures and 5xx answers.
        public var maxRetries: Int
        /// The wait before the first retry, in seconds (`identity.retryBaseDelay`, 1 s by default); doubled each retry, at most 60 s, with jitter.
        public var retryBaseDelay: Double

        package init(
            host: String, credentials: OAuthTokenCache.Credentials, timeoutSeconds: Double = 30,
            maxRetries: Int = 3, retryBaseDelay: Double = 1
        ) {
            self.host = host
            self.credentials = credentials
            self.timeoutSeconds = timeoutSeconds
            self.maxRetries = maxRetries
            self.retryBaseDelay = retryBaseDelay
        }

        /// `{host}/XMLAPI`, without a doubled slash.
        public var endpoint: String {
            var base = host
            while base.hasSuffix("/") { base.removeLast() }
            return base + "/XMLAPI"
        }
    }

    /// The settings the client posts with, fixed when it was made.
    public let settings: Settings
    let http: HTTPFetcher
    let logger: Logger

    package init(settings: Settings, http: HTTPFetcher = HTTPFetcher(), logger: Logger) {
        self.settings = settings
        self.http = http
        self.logger = logger
    }

    /// Posts `resource`; returns the answer when SUCCESS is true, else throws XMLAPIError.
    /// `resend: false` sends a request that is not idempotent (AddRecipient) once: after no answer,
    /// a 5xx or an unreadable answer the service may have acted on it, so the caller looks before
    /// sending it again (XMLAPIError.mayHaveBeenApplied).
    @discardableResult
    public func post(_ resource: XMLAPIResource, resend: Bool = true) throws -> XMLAPIResult {
        let result = try send(resource, resend: resend)
        guard result.isSuccess else {
            throw XMLAPIError.fault(operation: resource.operation, errorID: result.errorID, faultString: result.faultString ?? "")
        }
        return result
    }

    /// Posts `resource` and returns the parsed answer whatever its SUCCESS (for `hubhost xmlapi
    /// call`, which prints faults); throws only service failures.
    public func send(_ resource: XMLAPIResource, resend: Bool = true) throws -> XMLAPIResult {
        guard !settings.host.isEmpty else { throw XMLAPIError.notConfigured("identity.host (the Engage base URL) is not set in plugins.yaml") }
        let body = Data(("xml=" + Self.formEncode(resource.xml)).utf8)
        let op = resource.operation
        let attempts = resend ? self.attempts : 1
        var triedRefresh = false
        var refreshNow = false
        var lastError = XMLAPIError.unreachable(operation: op, reason: "no attempt was made")
        var attempt = 0
        while attempt < attempts {  // bounded: `attempts` tries plus at most one token refresh
            var headers = ["Content-Type": "application/x-www-form-urlencoded; charset=utf-8"]
            if !settings.credentials.isEmpty {
                switch OAuthTokenCache.shared(settings.credentials).accessToken(
                    http: http, timeoutSeconds: settings.timeoutSeconds,
                    forceRefresh: refreshNow)
                {
                case .success(let token): headers["Authorization"] = "Bearer \(token)"
                case .failure(let failure): throw XMLAPIError.noToken(reason: failure.description)
                }
                refreshNow = false
            }
            switch http.fetch(
                "POST", settings.endpoint, headers: headers, body: body, timeoutSeconds: settings.timeoutSeconds,
                maxBodyBytes: XMLAPIResult.maxBytes)
            {
            case .success(let response) where (200..<300).contains(response.status):
                do { return try XMLAPIResult(data: response.body) } catch {
                    throw XMLAPIError.malformed(operation: op, reason: "\(error)")
                }
            case .success(let response) where response.status == 401 && !triedRefresh && !settings.credentials.isEmpty:
                triedRefresh = true  // the token expired or was revoked: one new token, one more try
                refreshNow = true
                continue
            case .success(let response) where response.status >= 500:
                lastError = .http(operation: op, status: response.status)
            case .success(let response):
                throw XMLAPIError.http(operation: op, status: response.status)
            case .failure(let failure):
                lastError = .unreachable(operation: op, reason: failure.description)
            }
            attempt += 1
            if attempt < attempts { pauseBeforeRetry(attempt, after: lastError) }
        }
        throw lastError
    }

    /// Tries a request gets: the first and `maxRetries` (0 to 20) more.
    public var attempts: Int { max(0, min(settings.maxRetries, 20)) + 1 }

    /// Waits out the backoff before retry `attempt` (1 for the first retry): `retryBaseDelay`
    /// doubled each time, at most 60 s, with 20% jitter. Blocks the calling thread.
    public func pauseBeforeRetry(_ attempt: Int, after error: XMLAPIError) {
        let base = settings.retryBaseDelay.isFinite ? max(0, settings.retryBaseDelay) : 1
        let delay = min(base * pow(2, Double(min(max(attempt, 1), 20) - 1)), 60) * Double.random(in: 0.8...1.2)
        logger.warning("\(error); retry \(attempt) of \(attempts - 1) in \(String(format: "%.2f", delay)) s")
        Thread.sleep(forTimeInterval: delay)
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// application/x-www-form-urlencoded: everything but the unreserved characters percent-encoded.
    static func formEncode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}
