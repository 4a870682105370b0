import Foundation

/// `campaigns.frequency_caps` in plugins.yaml: how many messages a user may see, across all
/// campaigns, per session and per rolling period, the least time between any two of them, and the
/// least time between two impressions of one campaign. 0 turns a cap off (every cap is off by
/// default). A capped message stays queued and shows once the cap allows it.
///
/// The caps count impressions (`displayed`), per user, from the times stored in the user's cache in
/// the data directory: they hold across restarts and for every process on the data directory.
public struct FrequencyCaps: Sendable, Equatable {
    /// The keys under `campaigns.frequency_caps`, written once: parsed, shown and documented from here.
    package static let schema = ConfigSchema(keys: [
        ConfigKey(
            key: "per_session", type: .int, defaultValue: .int(0),
            doc: "At most this many messages per session (the event engine's session, events.session_timeout); 0: no cap.",
            range: .between(0, Double(maxCount)), live: true),
        ConfigKey(
            key: "per_period", type: .int, defaultValue: .int(0),
            doc: "At most this many messages in any rolling `period`; 0: no cap.", range: .between(0, Double(maxCount)), live: true),
        ConfigKey(
            key: "period", type: .duration, defaultValue: .double(86_400),
            doc: "The rolling period `per_period` counts in, e.g. 24h.", range: .positive(atMost: maxSeconds), live: true),
        ConfigKey(
            key: "min_gap", type: .duration, defaultValue: .double(0),
            doc: "The least time between any two messages, e.g. 10m; 0: none.", range: .between(0, maxSeconds), live: true),
        ConfigKey(
            key: "campaign_interval", type: .duration, defaultValue: .double(0),
            doc: "The least time between two impressions of the same campaign, e.g. 1d; 0: none.", range: .between(0, maxSeconds), live: true)
    ])

    /// The most a count cap may allow.
    public static let maxCount = 10_000
    /// The longest period, gap or interval: 366 days.
    public static let maxSeconds: Double = 366 * 86_400

    /// At most this many impressions per session; 0: no cap.
    public var perSession = 0
    /// At most this many impressions per `periodSeconds`; 0: no cap.
    public var perPeriod = 0
    /// The rolling period of `perPeriod`, in seconds.
    public var periodSeconds: Double = 86_400
    /// The least time between any two impressions, in seconds; 0: none.
    public var minGapSeconds: Double = 0
    /// The least time between two impressions of one campaign, in seconds; 0: none.
    public var campaignIntervalSeconds: Double = 0

    /// No cap.
    public init() {}

    /// The caps given; each is checked against its range (out of range: `ConfigSchema` refuses it in plugins.yaml).
    public init(
        perSession: Int = 0, perPeriod: Int = 0, periodSeconds: Double = 86_400, minGapSeconds: Double = 0, campaignIntervalSeconds: Double = 0
    ) {
        self.perSession = perSession
        self.perPeriod = perPeriod
        self.periodSeconds = periodSeconds
        self.minGapSeconds = minGapSeconds
        self.campaignIntervalSeconds = campaignIntervalSeconds
    }

    /// Whether any cap is set.
    public var isEmpty: Bool { perSession == 0 && perPeriod == 0 && minGapSeconds == 0 && campaignIntervalSeconds == 0 }

    var periodMs: Int64 { Self.ms(periodSeconds) }
    var minGapMs: Int64 { Self.ms(minGapSeconds) }
    var campaignIntervalMs: Int64 { Self.ms(campaignIntervalSeconds) }

    static func ms(_ seconds: Double) -> Int64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return Int64(min(seconds, maxSeconds) * 1000)
    }

    /// The cap, across all campaigns, that holds every message at `now` for a user with `cache`, in
    /// the session that started at `sessionStart`; nil when none does.
    func globalHold(_ cache: UserCache, sessionStart: Int64?, now: Int64) -> CampaignEngine.HoldReason? {
        if perSession > 0, let session = cache.session, session.startMs == (sessionStart ?? 0), session.count >= perSession {
            return .perSession
        }
        let shown = cache.shownAt ?? []
        if perPeriod > 0, shown.lazy.filter({ $0 > now &- periodMs }).count >= perPeriod { return .perPeriod }
        if minGapMs > 0, let last = shown.last, last > now &- minGapMs { return .minGap }
        return nil
    }

    /// Whether `campaign_interval` holds the campaign `id` at `now`.
    func holdsCampaign(_ id: String, _ cache: UserCache, now: Int64) -> Bool {
        guard campaignIntervalMs > 0, let last = cache.lastShownAt?[id] else { return false }
        return last > now &- campaignIntervalMs
    }

    /// Counts an impression of `id` at `now` in `cache`, in the session that started at
    /// `sessionStart`, keeping only the times the caps can still look at (at most `maxCount` of
    /// them, none older than the longest of period and gap), so the cache stays small.
    func count(_ id: String, in cache: inout UserCache, sessionStart: Int64?, now: Int64) {
        let start = sessionStart ?? 0
        if let session = cache.session, session.startMs == start {
            cache.session = .init(startMs: start, count: min(session.count + 1, Self.maxCount + 1))
        } else {
            cache.session = .init(startMs: start, count: 1)
        }
        let window = max(periodMs, minGapMs, 86_400_000)
        var shown = (cache.shownAt ?? []).filter { $0 > now &- window }
        shown.append(now)
        if shown.count > Self.maxCount { shown.removeFirst(shown.count - Self.maxCount) }
        cache.shownAt = shown
        var last = (cache.lastShownAt ?? [:]).filter { $0.value > now &- max(campaignIntervalMs, 86_400_000) }
        last[id] = now
        cache.lastShownAt = last
    }
}

extension FrequencyCaps {
    /// The caps from the resolved values of `frequency_caps` (`schema`).
    init(values: [String: PluginValue]) {
        self.init()
        if case .int(let n)? = values["per_session"] { perSession = Int(n) }
        if case .int(let n)? = values["per_period"] { perPeriod = Int(n) }
        if case .double(let s)? = values["period"] { periodSeconds = s }
        if case .double(let s)? = values["min_gap"] { minGapSeconds = s }
        if case .double(let s)? = values["campaign_interval"] { campaignIntervalSeconds = s }
    }

    /// The values `schema` describes.
    var values: [String: PluginValue] {
        [
            "per_session": .int(Int64(perSession)), "per_period": .int(Int64(perPeriod)), "period": .double(periodSeconds),
            "min_gap": .double(minGapSeconds), "campaign_interval": .double(campaignIntervalSeconds)
        ]
    }
}
