import Foundation

/// The built-in `http-collector` sink, the default when `events.sink` is not set: today's Engage
/// "UBF" posting. Each batch is one JSON POST to `collector_url` (`{"events":[...]}`, every event
/// with its idempotency key so a collector that honours it drops a retried batch's repeats), with
/// the OAuth 2 refresh-token grant and a cached access token when `auth_token_url` is set. The
/// collector answers for the whole batch: 2xx delivers every event, anything else retries them all.
/// Sendable: immutable after init; its fields are `let`s of Sendable types (EventSettings, HTTPFetcher,
/// EventAuthTokens).
package final class HTTPCollectorSink: EventSink, Sendable {
    package static let sinkName = "http-collector"
    package var name: String { Self.sinkName }
    let settings: EventSettings
    let http: HTTPFetcher
    let tokens: EventAuthTokens

    package init(settings: EventSettings, http: HTTPFetcher) {
        self.settings = settings
        self.http = http
        tokens = EventAuthTokens(settings: settings, http: http)
    }

    package var unavailableReason: String? { settings.collectorURL.isEmpty ? "no collector_url" : nil }

    package func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkBatchResult {
        deliver(batch: SinkBatch(events), timeoutMs: timeoutMs)
    }

    /// Posts the batch's body as it is laid out.
    package func deliver(batch: SinkBatch, timeoutMs: UInt32) -> SinkBatchResult {
        let body = Data(batch.body)
        let count = batch.count
        var triedRefresh = false
        let usesOAuth = tokens.isConfigured
        for _ in 0..<2 {  // at most one refresh of the token
            var headers = ["Content-Type": "application/json"]
            // The collector joins the trace: the delivery's span when tracing is on, else the
            // first traced event's own traceparent (one request carries the whole batch).
            if let traceparent = HubTracing.currentTraceparent ?? batch.firstTraceparent { headers["traceparent"] = traceparent }
            if usesOAuth {
                switch tokens.token(forceRefresh: triedRefresh) {
                case .success(let token): headers["Authorization"] = "Bearer \(token)"
                case .failure(let failure): return .notAttempted(reason: failure.reason)
                }
            }
            switch http.fetch(
                "POST", settings.collectorURL, headers: headers, body: body, timeoutSeconds: settings.postTimeout,
                maxBodyBytes: HTTPFetcher.maxSmallAnswerBytes)
            {
            case .success(let response) where (200..<300).contains(response.status):
                return .answered(Array(repeating: .delivered, count: count))
            case .success(let response) where response.status == 401 && !triedRefresh && usesOAuth:
                triedRefresh = true  // the token may have been revoked: refresh once and retry
                continue
            case .success(let response):
                return Self.retryAll(count, "the collector answered HTTP \(response.status)")
            case .failure(let failure):
                return Self.retryAll(count, failure.description)
            }
        }
        return Self.retryAll(count, "the collector answered HTTP 401")
    }

    static func retryAll(_ count: Int, _ reason: String) -> SinkBatchResult {
        .answered(Array(repeating: .retry(reason: reason), count: count))
    }

    /// `{"events":[...]}` from each event's JSON object, in order.
    package static func body(_ objects: [Data]) -> Data {
        var body = Data("{\"events\":[".utf8)
        for (index, object) in objects.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(object)
        }
        body.append(contentsOf: Array("]}".utf8))
        return body
    }
}
