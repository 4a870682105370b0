import Foundation

/// Loading the campaign list: a ping response from the service (after asking the configuration
/// endpoint whether messaging is enabled and where to ping), or a local file in its format. The
/// list is stored in the shared state, so every process on the data directory uses it.
extension CampaignEngine {
    /// What a `sync` did.
    public struct SyncReport: Codable, Equatable, Sendable {
        /// False when the configuration endpoint disabled messaging (nothing was pinged).
        public var enabled: Bool
        /// How many campaigns are loaded now.
        public var loaded: Int
        /// The campaigns skipped, with why.
        public var skipped: [String]
        /// When the next ping is due (ms since 1970); 0 when disabled.
        public var nextPingAtMs: Int64
    }

    /// Replaces the campaign list with a ping response (or a local file in its format). Invalid
    /// campaigns are skipped with a log line; a changed maxImpressions adds the difference to the
    /// impressions left. The list is stored (in the same transaction as the current user's
    /// reconciled cache) and every process follows; loading the list already stored changes nothing.
    public func load(_ data: Data) throws {
        let parsed = try parse(data)
        for line in parsed.skipped { logger.warning("skipped \(line)") }
        try lock.withLock {
            try update { db, wrote in
                if try shared.list(db) != data {
                    seenListVersion = try shared.setList(db, data)
                    wrote = true
                }
                use(parsed)
                reconcile()
            }
        }
    }

    /// Asks the configuration endpoint (when set) whether messaging is enabled and where to ping,
    /// then pings and loads the campaign list; the next ping is due after `nextPingMillis`.
    package func sync(configURL: String?, pingURL: String?, http: HTTPFetcher, nowMs: Int64 = Clock.wallMs()) throws -> SyncReport {
        var ping = pingURL
        if let configURL {
            let response = try http.fetch("GET", configURL, timeoutSeconds: 15, maxBodyBytes: HTTPFetcher.maxSmallAnswerBytes).mapError {
                CampaignParser.Problem(description: "config endpoint: \($0)")
            }.get()
            guard response.status == 200 else {
                throw CampaignParser.Problem(description: "config endpoint answered HTTP \(response.status)")
            }
            let (isEnabled, named) = try CampaignParser.config(response.body)
            try lock.withLock {
                try update { db, wrote in
                    enabled = isEnabled
                    try shared.setEnabled(db, isEnabled)
                    wrote = true
                }
            }
            if !isEnabled {
                logger.notice("in-app messaging is disabled by the configuration endpoint")
                return SyncReport(enabled: false, loaded: 0, skipped: [], nextPingAtMs: 0)
            }
            if let named { ping = named }
        }
        guard let ping else {
            throw CampaignParser.Problem(
                description: "no ping endpoint: set campaigns.ping_url, or have the config endpoint name one (data.endpoints.ping, or pingUrl)")
        }
        let response = try http.fetch("GET", ping, timeoutSeconds: 15, maxBodyBytes: HTTPFetcher.maxSmallAnswerBytes).mapError {
            CampaignParser.Problem(description: "ping endpoint: \($0)")
        }.get()
        guard response.status == 200 else { throw CampaignParser.Problem(description: "ping endpoint answered HTTP \(response.status)") }
        try load(response.body)
        let next = (try? CampaignParser.parse(response.body).nextPingMillis) ?? nil
        let due = nowMs + (next ?? 3_600_000)
        return lock.withLock {
            nextPingAtMs = due
            pingFailures = 0
            return SyncReport(enabled: true, loaded: loaded.count, skipped: loadedSkipped, nextPingAtMs: due)
        }
    }

    /// The wait before asking again after `failures` failed syncs in a row: 5 s, doubling, at most
    /// 10 minutes, so an endpoint that is down is not asked every few seconds for as long as it is.
    public static func pingRetryDelayMs(afterFailures failures: Int) -> Int64 {
        min(Int64(5_000) << Int64(min(max(failures, 1) - 1, 16)), 600_000)
    }

    /// Records a failed sync and moves the next one on by the backoff; returns when it is due.
    @discardableResult
    public func pingFailed(nowMs: Int64 = Clock.wallMs()) -> Int64 {
        lock.withLock {
            pingFailures += 1
            nextPingAtMs = nowMs + Self.pingRetryDelayMs(afterFailures: pingFailures)
            return nextPingAtMs
        }
    }

    /// Whether `nextPingMillis` has passed since this process's last ping.
    public func isPingDue(nowMs: Int64 = Clock.wallMs()) -> Bool { lock.withLock { nowMs >= nextPingAtMs } }

    /// Loads the campaign list from a file in the ping format (as `load`). Throws Problem when the
    /// file cannot be read or the list is unusable.
    public func loadFile(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CampaignParser.Problem(description: "cannot read the campaign file \(path)")
        }
        try load(data)
    }

    /// The campaigns of a list this process can run (every operator they name is provided by a
    /// loaded plugin) and the skipped ones with why.
    func parse(_ data: Data) throws -> (campaigns: [Campaign], skipped: [String]) {
        let parsed = try CampaignParser.parse(data)
        var valid: [Campaign] = []
        var skipped = parsed.skipped
        for campaign in parsed.campaigns {
            let missing = campaign.triggers.flatMap(\.attributes).map(\.op).filter { operators.find($0) == nil }
            if let op = missing.first {
                skipped.append("campaign \(campaign.id): operator '\(op)' is not provided by any loaded trigger_operator plugin")
                continue
            }
            valid.append(campaign)
        }
        return (valid, skipped)
    }

    /// Makes `parsed` the loaded list and rebuilds the trigger index (the caller holds `lock`).
    func use(_ parsed: (campaigns: [Campaign], skipped: [String])) {
        loaded = parsed.campaigns
        loadedSkipped = parsed.skipped
        positions = Dictionary(loaded.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        rebuildIndex()
    }
}
