import Foundation
import Logging

/// The campaign engine (Rakuten In-App Messaging): campaigns from a ping-format list, triggers
/// satisfied by the events the event pipeline delivers, compared by trigger-operator plugins;
/// per-user caches with impressions and opt-outs; the queue of campaigns ready to show.
///
/// Matching is indexed by event type and name, not a scan over every campaign per event. App start
/// is persistent for the launch (this engine's life): once logged it satisfies app-start triggers
/// and later app-start logs are ignored; a campaign needing only app start shows once per launch.
public final class CampaignEngine: @unchecked Sendable {
    /// A user: each combination of user id and tracking identifier has its own cache; both empty
    /// is the anonymous user.
    public struct User: Codable, Equatable, Sendable {
        public var userID: String
        public var idTrackingIdentifier: String
        public var accessToken: String?

        public init(userID: String = "", idTrackingIdentifier: String = "", accessToken: String? = nil) {
            self.userID = userID
            self.idTrackingIdentifier = idTrackingIdentifier
            self.accessToken = accessToken
        }

        var cacheKey: String { userID.isEmpty && idTrackingIdentifier.isEmpty ? "anonymous" : "\(userID)|\(idTrackingIdentifier)" }
    }

    struct UserCache: Codable {
        var impressionsLeft: [String: Int] = [:]
        var knownMaxImpressions: [String: Int] = [:]
        var optedOut: Set<String> = []
        /// Campaign id -> indexes of its satisfied triggers (app-start ones live in the launch only).
        var satisfied: [String: Set<Int>] = [:]
        var queue: [String] = []
        /// The message handed out by `next` and not yet reported shown or closed.
        var current: String?
    }

    /// How a message with contexts may show (the seed's shouldShowCampaignWithContexts), from
    /// plugins.yaml `campaigns.context_rule`, against the contexts the caller allows now.
    public enum ContextRule: String, Codable, CaseIterable, Sendable {
        /// Every context of the campaign must be allowed (the default).
        case all
        /// One allowed context is enough.
        case any
        /// Campaigns with contexts never show.
        case none
    }

    public struct Status: Codable, Equatable, Sendable {
        public var id: String
        public var title: String
        public var contexts: [String]
        public var maxImpressions: Int
        public var impressionsLeft: Int
        public var optedOut: Bool
        public var expired: Bool
        public var ready: Bool
        public var triggersSatisfied: Int
        public var triggers: Int
    }

    private let lock = NSLock()
    private let state: KeyValueState
    private let operators: OperatorSet
    private let logger: Logger
    public private(set) var campaigns: [Campaign] = []
    /// Campaigns skipped while loading, with why.
    public private(set) var skipped: [String] = []
    private var index: [String: [(campaign: Int, trigger: Int)]] = [:]
    private var appStartLogged = false
    private var shownThisLaunch: Set<String> = []
    public private(set) var user = User()
    private var cache = UserCache()
    public var contextRule: ContextRule = .all
    /// False when the configuration endpoint says messaging is disabled: every call does nothing.
    public private(set) var isEnabled = true
    private var nextPingAtMs: Int64 = 0

    init(state: KeyValueState, operators: OperatorSet, pipeline: LogPipeline) throws {
        self.state = state
        self.operators = operators
        logger = Logger(label: "hubhost.campaigns", pipeline: pipeline)
        user = try state.get("campaigns.user") ?? User()
        isEnabled = try state.get("campaigns.enabled") ?? true
        cache = try state.get("campaigns.cache.\(user.cacheKey)") ?? UserCache()
        if let stored: Data = try state.get("campaigns.list") { try load(stored, persist: false) }
    }

    // MARK: Campaigns in

    /// Replaces the campaign list with a ping response (or a local file in its format). Invalid
    /// campaigns are skipped with a log line; a changed maxImpressions adds the difference to the
    /// impressions left.
    public func load(_ data: Data, persist: Bool = true) throws {
        let parsed = try CampaignParser.parse(data)
        try lock.withLock {
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
            for line in skipped where persist { logger.warning("skipped \(line)") }
            campaigns = valid
            self.skipped = skipped
            rebuildIndex()
            reconcile()
            if persist {
                try state.set("campaigns.list", data)
                try saveCache()
            }
        }
    }

    public struct SyncReport: Codable, Equatable, Sendable {
        public var enabled: Bool
        public var loaded: Int
        public var skipped: [String]
        public var nextPingAtMs: Int64
    }

    /// Asks the configuration endpoint (when set) whether messaging is enabled and where to ping,
    /// then pings and loads the campaign list; the next ping is due after `nextPingMillis`.
    public func sync(configURL: String?, pingURL: String?, http: HTTPFetcher, nowMs: Int64 = Clock.wallMs()) throws -> SyncReport {
        var ping = pingURL
        if let configURL {
            let response = try http.fetch("GET", configURL, timeoutSeconds: 15).mapError { CampaignParser.Problem(description: "config endpoint: \($0)") }.get()
            guard response.status == 200 else {
                throw CampaignParser.Problem(description: "config endpoint answered HTTP \(response.status)")
            }
            let (enabled, named) = try CampaignParser.config(response.body)
            lock.withLock { isEnabled = enabled }
            try state.set("campaigns.enabled", enabled)
            if !enabled {
                logger.notice("in-app messaging is disabled by the configuration endpoint")
                return SyncReport(enabled: false, loaded: 0, skipped: [], nextPingAtMs: 0)
            }
            if let named { ping = named }
        }
        guard let ping else { throw CampaignParser.Problem(description: "no ping endpoint: set campaigns.ping_url, or have the config endpoint name one (data.endpoints.ping, or pingUrl)") }
        let response = try http.fetch("GET", ping, timeoutSeconds: 15).mapError { CampaignParser.Problem(description: "ping endpoint: \($0)") }.get()
        guard response.status == 200 else { throw CampaignParser.Problem(description: "ping endpoint answered HTTP \(response.status)") }
        try load(response.body)
        let next = (try? CampaignParser.parse(response.body).nextPingMillis) ?? nil
        let due = nowMs + (next ?? 3_600_000)
        lock.withLock { nextPingAtMs = due }
        return SyncReport(enabled: true, loaded: campaigns.count, skipped: skipped, nextPingAtMs: due)
    }

    /// Whether `nextPingMillis` has passed since the last ping.
    public func isPingDue(nowMs: Int64 = Clock.wallMs()) -> Bool { lock.withLock { nowMs >= nextPingAtMs } }

    public func loadFile(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CampaignParser.Problem(description: "cannot read the campaign file \(path)")
        }
        try load(data)
    }

    /// Changes the user: their own cache is loaded (and the campaigns re-evaluated for them).
    public func setUser(_ newUser: User) throws {
        try lock.withLock {
            try saveCache()
            user = newUser
            cache = try state.get("campaigns.cache.\(newUser.cacheKey)") ?? UserCache()
            try state.set("campaigns.user", newUser)
            reconcile()
            try saveCache()
        }
    }

    private func rebuildIndex() {
        index = [:]
        for (c, campaign) in campaigns.enumerated() {
            for (t, trigger) in campaign.triggers.enumerated() {
                index[Self.key(trigger.eventType, trigger.eventName), default: []].append((c, t))
            }
        }
    }

    /// Impressions left for new campaigns, max-impression changes, queue clean-up. A changed
    /// maxImpressions adds the difference to what is left, and what is left stays between 0 and
    /// the new maximum (a count stored below zero by an older hubhost counts as 0).
    private func reconcile() {
        let now = Clock.wallMs()
        for campaign in campaigns {
            let known = cache.knownMaxImpressions[campaign.id]
            if known == nil { cache.impressionsLeft[campaign.id] = campaign.maxImpressions }
            else if known != campaign.maxImpressions {
                let left = max(0, cache.impressionsLeft[campaign.id] ?? 0)
                cache.impressionsLeft[campaign.id] = min(campaign.maxImpressions, max(0, left + campaign.maxImpressions - known!))
            }
            cache.knownMaxImpressions[campaign.id] = campaign.maxImpressions
        }
        let byID = Dictionary(campaigns.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        cache.queue = cache.queue.filter { id in byID[id].map { eligible($0, now: now) } ?? false }
        queuedIDs = Set(cache.queue)
    }

    static func key(_ eventType: Int, _ name: String) -> String { eventType == 4 ? "4:\(name)" : String(eventType) }

    // MARK: Events in

    /// Called by the event pipeline for every tracked event.
    public func logEvent(_ event: Event) {
        lock.withLock {
            guard isEnabled else { return }
            var keys: [String] = []
            switch event.type {
            case .appStart:
                if appStartLogged { return }  // persistent for the launch: later logs are ignored
                appStartLogged = true
                keys.append("1")
            case .loginSuccessful: keys.append("2")
            case .purchaseSuccessful: keys.append("3")
            default: break
            }
            if !event.name.isEmpty { keys.append(Self.key(4, event.name)) }
            var touched = Set<Int>()
            for key in keys {
                for (c, t) in index[key] ?? [] where matches(campaigns[c].triggers[t], event) {
                    if campaigns[c].triggers[t].eventType != 1 { cache.satisfied[campaigns[c].id, default: []].insert(t) }
                    touched.insert(c)
                }
            }
            if appStartLogged && event.type == .appStart {
                for (c, campaign) in campaigns.enumerated() where campaign.triggers.contains(where: { $0.eventType == 1 }) { touched.insert(c) }
            }
            let now = Clock.wallMs()
            for c in touched.sorted() where !queuedIDs.contains(campaigns[c].id) && isReady(campaigns[c]) && eligible(campaigns[c], now: now) {
                cache.queue.append(campaigns[c].id)
                queuedIDs.insert(campaigns[c].id)
            }
            // Written at the next save point (display, opt-out, user change, saveIfChanged at
            // shutdown), not on every event: a hot event path must not cost a commit.
            if !touched.isEmpty { dirty = true }
        }
    }

    /// Persists the user's cache when events changed it since the last save.
    public func saveIfChanged() throws {
        try lock.withLock {
            if dirty { try saveCache() }
        }
    }

    private func matches(_ trigger: Campaign.Trigger, _ event: Event) -> Bool {
        for attribute in trigger.attributes {
            guard let value = event[attribute: attribute.name], let op = operators.find(attribute.op) else { return false }
            let answer = op.compare(event: value, trigger: attribute.value)
            if answer.status != 0 {
                logger.info("trigger attribute '\(attribute.name)' \(op.operatorName) answered false: \(answer.reason)")
                return false
            }
            if !answer.result { return false }
        }
        return true
    }

    private func isReady(_ campaign: Campaign) -> Bool {
        let satisfied = cache.satisfied[campaign.id] ?? []
        return campaign.triggers.indices.allSatisfy { t in
            campaign.triggers[t].eventType == 1 ? appStartLogged : satisfied.contains(t)
        }
    }

    private func eligible(_ campaign: Campaign, now: Int64) -> Bool {
        if campaign.isExpired(nowMs: now) || cache.optedOut.contains(campaign.id) { return false }
        if (cache.impressionsLeft[campaign.id] ?? campaign.maxImpressions) <= 0 { return false }
        // A campaign that needs only app start shows once per launch.
        if campaign.triggers.allSatisfy({ $0.eventType == 1 }) && shownThisLaunch.contains(campaign.id) { return false }
        return true
    }

    // MARK: Messages out

    /// The campaigns ready to show, in the order they became ready (expired ones never show).
    public func ready() -> [Campaign] {
        lock.withLock {
            guard isEnabled else { return [] }
            let now = Clock.wallMs()
            return cache.queue.compactMap { id in campaigns.first { $0.id == id } }.filter { eligible($0, now: now) }
        }
    }

    public struct NotFound: Error, CustomStringConvertible {
        public var description: String
    }

    /// The campaign was shown: one impression, out of the queue, its triggers must be met again.
    @discardableResult
    public func displayed(_ id: String) throws -> Campaign {
        try lock.withLock {
            guard let campaign = campaigns.first(where: { $0.id == id }) else { throw NotFound(description: "no campaign \(id)") }
            // Impressions stop at zero: a display past the limit does not count below it.
            cache.impressionsLeft[id] = max(0, (cache.impressionsLeft[id] ?? campaign.maxImpressions) - 1)
            cache.queue.removeAll { $0 == id }
            queuedIDs.remove(id)
            if cache.current == id { cache.current = nil }
            cache.satisfied[id] = nil
            shownThisLaunch.insert(id)
            try saveCache()
            return campaign
        }
    }

    /// Hands out the next message that may show now, given the contexts the caller allows; it stays
    /// the current message until it is reported shown (`displayed`) or closed. Nil when none.
    public func next(allowedContexts: [String] = []) -> Campaign? {
        lock.withLock {
            guard isEnabled else { return nil }
            let now = Clock.wallMs()
            if let current = cache.current, let campaign = campaigns.first(where: { $0.id == current }), eligible(campaign, now: now) {
                return campaign
            }
            for id in cache.queue {
                guard let campaign = campaigns.first(where: { $0.id == id }), eligible(campaign, now: now) else { continue }
                let contexts = campaign.contexts
                let allowed: Bool
                switch (contexts.isEmpty, contextRule) {
                case (true, _): allowed = true
                case (false, .all): allowed = contexts.allSatisfy(allowedContexts.contains)
                case (false, .any): allowed = contexts.contains(where: allowedContexts.contains)
                case (false, .none): allowed = false
                }
                if !allowed { continue }
                cache.current = id
                try? saveCache()
                return campaign
            }
            return nil
        }
    }

    /// Closes the current message without counting an impression; `clearQueue` also empties the queue.
    public func close(clearQueue: Bool) {
        lock.withLock {
            if let current = cache.current { cache.queue.removeAll { $0 == current } }
            cache.current = nil
            if clearQueue { cache.queue = [] }
            queuedIDs = Set(cache.queue)
            try? saveCache()
        }
    }

    public struct NotAllowed: Error, CustomStringConvertible {
        public var description: String
    }

    /// The user opted out of the campaign (when its message allows it): it never shows to them again.
    public func optOut(_ id: String) throws {
        try lock.withLock {
            guard let campaign = campaigns.first(where: { $0.id == id }) else { throw NotFound(description: "no campaign \(id)") }
            guard campaign.optOut else { throw NotAllowed(description: "campaign \(id) does not offer an opt-out") }
            if cache.current == id { cache.current = nil }
            cache.optedOut.insert(id)
            cache.queue.removeAll { $0 == id }
            queuedIDs.remove(id)
            try saveCache()
        }
    }

    public func statuses() -> [Status] {
        lock.withLock {
            let now = Clock.wallMs()
            return campaigns.map { c in
                let satisfied = c.triggers.indices.filter { c.triggers[$0].eventType == 1 ? appStartLogged : (cache.satisfied[c.id] ?? []).contains($0) }.count
                return Status(id: c.id, title: c.title, contexts: c.contexts, maxImpressions: c.maxImpressions,
                              impressionsLeft: max(0, cache.impressionsLeft[c.id] ?? c.maxImpressions), optedOut: cache.optedOut.contains(c.id),
                              expired: c.isExpired(nowMs: now), ready: cache.queue.contains(c.id) && eligible(c, now: now),
                              triggersSatisfied: satisfied, triggers: c.triggers.count)
            }
        }
    }

    private var dirty = false
    /// The ids in `cache.queue`, for membership tests in the event path.
    private var queuedIDs = Set<String>()

    private func saveCache() throws {
        try state.set("campaigns.cache.\(user.cacheKey)", cache)
        dirty = false
    }
}
