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

    init(state: KeyValueState, operators: OperatorSet, pipeline: LogPipeline) throws {
        self.state = state
        self.operators = operators
        logger = Logger(label: "hubhost.campaigns", pipeline: pipeline)
        user = try state.get("campaigns.user") ?? User()
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

    /// Impressions left for new campaigns, max-impression changes, queue clean-up.
    private func reconcile() {
        let now = Clock.wallMs()
        for campaign in campaigns {
            let known = cache.knownMaxImpressions[campaign.id]
            if known == nil { cache.impressionsLeft[campaign.id] = campaign.maxImpressions }
            else if known != campaign.maxImpressions {
                cache.impressionsLeft[campaign.id, default: 0] += campaign.maxImpressions - known!
            }
            cache.knownMaxImpressions[campaign.id] = campaign.maxImpressions
        }
        cache.queue = cache.queue.filter { id in campaigns.first { $0.id == id }.map { eligible($0, now: now) } ?? false }
    }

    static func key(_ eventType: Int, _ name: String) -> String { eventType == 4 ? "4:\(name)" : String(eventType) }

    // MARK: Events in

    /// Called by the event pipeline for every tracked event.
    public func logEvent(_ event: Event) {
        lock.withLock {
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
            for c in touched.sorted() where isReady(campaigns[c]) && eligible(campaigns[c], now: now) && !cache.queue.contains(campaigns[c].id) {
                cache.queue.append(campaigns[c].id)
            }
            try? saveCache()
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
            cache.impressionsLeft[id, default: campaign.maxImpressions] -= 1
            cache.queue.removeAll { $0 == id }
            cache.satisfied[id] = nil
            shownThisLaunch.insert(id)
            try saveCache()
            return campaign
        }
    }

    /// The user opted out of the campaign: it never shows to them again.
    public func optOut(_ id: String) throws {
        try lock.withLock {
            guard campaigns.contains(where: { $0.id == id }) else { throw NotFound(description: "no campaign \(id)") }
            cache.optedOut.insert(id)
            cache.queue.removeAll { $0 == id }
            try saveCache()
        }
    }

    public func statuses() -> [Status] {
        lock.withLock {
            let now = Clock.wallMs()
            return campaigns.map { c in
                let satisfied = c.triggers.indices.filter { c.triggers[$0].eventType == 1 ? appStartLogged : (cache.satisfied[c.id] ?? []).contains($0) }.count
                return Status(id: c.id, title: c.title, contexts: c.contexts, maxImpressions: c.maxImpressions,
                              impressionsLeft: cache.impressionsLeft[c.id] ?? c.maxImpressions, optedOut: cache.optedOut.contains(c.id),
                              expired: c.isExpired(nowMs: now), ready: cache.queue.contains(c.id) && eligible(c, now: now),
                              triggersSatisfied: satisfied, triggers: c.triggers.count)
            }
        }
    }

    private func saveCache() throws {
        try state.set("campaigns.cache.\(user.cacheKey)", cache)
    }
}
