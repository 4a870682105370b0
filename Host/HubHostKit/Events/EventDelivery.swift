import Foundation
import Logging

/// What one flush did.
public struct DeliveryReport: Codable, Equatable, Sendable {
    public var posted = 0
    /// Events whose attempt failed and that will be retried.
    public var retrying = 0
    /// Events that reached max_num_retries in this flush and are now FAILED_POST.
    public var failed = 0
    public var batches = 0
    /// Why the last attempt failed, if one did.
    public var lastError: String?
    /// True when there was nowhere to post (no collector_url): events stay NOT_POSTED on disk.
    public var noCollector = false
}

/// Batched delivery (Engage "UBF" posting): POSTs JSON batches to `collector_url`, with an
/// idempotency key per event (the event id) so a retried batch is not counted twice by a collector
/// that honours it; OAuth 2 refresh-token grant with a cached access token; exponential backoff
/// with jitter; FAILED_POST after `max_num_retries`. An event is marked SUCCESSFULLY_POSTED only
/// after the collector answered 2xx, so none is lost, and hubhost posts none twice once marked.
public final class EventDelivery: @unchecked Sendable {
    let settings: EventSettings
    let store: EventStore
    let http: HTTPFetcher
    let logger: Logger
    private let lock = NSLock()  // one flush at a time
    /// Events per POST.
    public var batchSize = 100

    public init(settings: EventSettings, store: EventStore, http: HTTPFetcher, logger: Logger) {
        self.settings = settings
        self.store = store
        self.http = http
        self.logger = logger
    }

    /// Posts everything that is due, batch after batch, until nothing is due or a batch fails.
    public func flush(nowMs: Int64 = Clock.wallMs()) -> DeliveryReport {
        let report = flushLocked(nowMs: nowMs)
        RuntimeMetrics.eventsDelivered("posted", report.posted)
        RuntimeMetrics.eventsDelivered("retrying", report.retrying)
        RuntimeMetrics.eventsDelivered("failed", report.failed)
        return report
    }

    private func flushLocked(nowMs: Int64) -> DeliveryReport {
        lock.withLock {
            var report = DeliveryReport()
            guard !settings.collectorURL.isEmpty else {
                report.noCollector = true
                return report
            }
            for _ in 0..<10_000 {  // bounded: each round posts or stops
                let batch: [Event]
                let lease = nowMs.saturatingAdding(SafeTime.durationMs(2 * settings.postTimeout + 10))
                do { batch = try store.claimDeliverable(limit: batchSize, nowMs: nowMs, leaseUntilMs: lease) } catch {
                    report.lastError = "cannot read the event store: \(error)"
                    logger.error("\(report.lastError!)")
                    return report
                }
                if batch.isEmpty { break }
                report.batches += 1
                switch post(batch) {
                case .success:
                    do {
                        try store.markPosted(batch.map(\.id))
                        report.posted += batch.count
                    } catch {
                        report.lastError = "posted but could not record it: \(error)"
                        logger.error("\(report.lastError!)")
                        return report
                    }
                case .failure(let failure):
                    report.lastError = failure.reason
                    guard failure.countsAsAttempt else {
                        // Not an attempt (no token yet): the events wait, none is dropped.
                        logger.warning("events not posted yet: \(failure.reason)")
                        try? store.release(batch.map(\.id))
                        return report
                    }
                    let attempts = batch.map(\.attempts).max() ?? 0
                    let delay = settings.retryBaseDelay * pow(2, Double(attempts)) * Double.random(in: 0.8...1.2)
                    let retryAt = nowMs.saturatingAdding(SafeTime.durationMs(delay))  // 2^attempts may be inf
                    try? store.markAttemptFailed(batch.map(\.id), error: failure.reason, retryAtMs: retryAt, maxAttempts: settings.maxNumRetries)
                    let failedNow = batch.filter { $0.attempts + 1 >= settings.maxNumRetries }.count
                    report.failed += failedNow
                    report.retrying += batch.count - failedNow
                    logger.warning("posting \(batch.count) event\(batch.count == 1 ? "" : "s") failed (\(failure.reason)); \(failedNow) now FAILED_POST, the rest retried in \(String(format: "%.1f", delay)) s")
                    return report
                }
            }
            return report
        }
    }

    struct PostFailure: Error {
        var reason: String
        var countsAsAttempt = true
    }

    private func post(_ batch: [Event]) -> Result<Void, PostFailure> {
        let body = Self.body(batch, nameField: settings.eventNameField)
        var triedRefresh = false
        while true {
            var headers = ["Content-Type": "application/json"]
            if !settings.string("auth_token_url").isEmpty {
                switch accessToken(forceRefresh: triedRefresh) {
                case .success(let token): headers["Authorization"] = "Bearer \(token)"
                case .failure(let failure): return .failure(failure)
                }
            }
            switch http.fetch("POST", settings.collectorURL, headers: headers, body: body, timeoutSeconds: settings.postTimeout) {
            case .success(let response) where (200..<300).contains(response.status):
                return .success(())
            case .success(let response) where response.status == 401 && !triedRefresh && !settings.string("auth_token_url").isEmpty:
                triedRefresh = true  // the token may have been revoked: refresh once and retry
                continue
            case .success(let response):
                return .failure(PostFailure(reason: "the collector answered HTTP \(response.status)"))
            case .failure(let failure):
                return .failure(PostFailure(reason: failure.description))
            }
        }
    }

    /// The access token from the process's shared cache (the XMLAPI client uses the same one).
    private func accessToken(forceRefresh: Bool) -> Result<String, PostFailure> {
        OAuthTokenCache.shared(settings.oauthCredentials).accessToken(http: http, timeoutSeconds: settings.postTimeout, forceRefresh: forceRefresh)
            .mapError { PostFailure(reason: $0.description, countsAsAttempt: false) }
    }

    /// `{"events":[{"eventTypeCode":"17","eventTimestamp":"2014-06-10T00:00:00.000Z","idempotencyKey":"...",
    ///   "attributes":[{"name":"Event Name","value":"PLAYER LOADED"},...]}]}`
    static func body(_ batch: [Event], nameField: String) -> Data {
        let events: [[String: Any]] = batch.map { event in
            var attributes: [[String: String]] = []
            if !event.name.isEmpty { attributes.append(["name": nameField, "value": event.name]) }
            for attribute in event.attributes { attributes.append(["name": attribute.name, "value": text(attribute.value)]) }
            return ["eventTypeCode": String(event.type.code), "eventTimestamp": isoTime(event.timestampMs),
                    "idempotencyKey": event.id, "attributes": attributes]
        }
        return (try? JSONSerialization.data(withJSONObject: ["events": events], options: [.sortedKeys])) ?? Data()
    }

    static func text(_ value: PluginValue) -> String {
        switch value {
        case .timeMs(let ms): return isoTime(ms)
        case .null: return ""
        default: return value.description
        }
    }

    static func isoTime(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
