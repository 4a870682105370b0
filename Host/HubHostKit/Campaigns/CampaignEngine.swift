import Foundation
import Logging
import Synchronization

/// The campaign engine (Rakuten In-App Messaging): campaigns from a ping-format list, triggers
/// satisfied by the events the event pipeline delivers, compared by trigger-operator plugins;
/// per-user caches with impressions and opt-outs; the queue of campaigns ready to show.
///
/// One concern per file: this one holds the engine's types, its state and the user;
/// CampaignSharedState.swift how that state is shared with other processes on the same data
/// directory (every change one write transaction, re-read when another process changed it);
/// CampaignEngine+Ping.swift loading the list (file, ping, configuration endpoint);
/// CampaignMatching.swift matching events against triggers; CampaignMessages.swift the queue and
/// the messages handed out.
///
/// Matching is indexed by event type and name, not a scan over every campaign per event. App start
/// is persistent for the launch (this engine's life): once logged it satisfies app-start triggers
/// and later app-start logs are ignored; a campaign needing only app start shows once per launch.
/// Unchecked Sendable: the campaign state (`loaded`, `cache`, `currentUser`, `nextPingAtMs` and the rest) is read and
/// written under `lock`, in this file and its extensions; `contextRule` and the endpoints are each behind a Mutex
/// of their own.
public final class CampaignEngine: @unchecked Sendable {
    /// A user: each combination of user id and tracking identifier has its own cache; both empty
    /// is the anonymous user.
    public struct User: Codable, Equatable, Sendable {
        /// The app's user id; empty for none.
        public var userID: String
        /// The user's tracking identifier; empty for none.
        public var idTrackingIdentifier: String
        /// The user's access token, kept with the user; not part of the cache key.
        public var accessToken: String?

        /// A user; the defaults are the anonymous user.
        public init(userID: String = "", idTrackingIdentifier: String = "", accessToken: String? = nil) {
            self.userID = userID
            self.idTrackingIdentifier = idTrackingIdentifier
            self.accessToken = accessToken
        }

        var cacheKey: String { userID.isEmpty && idTrackingIdentifier.isEmpty ? "anonymous" : "\(userID)|\(idTrackingIdentifier)" }
    }

    /// How a message with contexts may show (the In-App Messaging SDK's shouldShowCampaignWithContexts), from
    /// plugins.yaml `campaigns.context_rule`, against the contexts the caller allows now.
    public enum ContextRule: String, Codable, CaseIterable, Sendable {
        /// Every context of the campaign must be allowed (the default).
        case all
        /// One allowed context is enough.
        case any
        /// Campaigns with contexts never show.
        case none
    }

    /// One loaded campaign as it stands for the current user (`statuses()`).
    public struct Status: Codable, Equatable, Sendable {
        /// The campaign id.
        public var id: String
        /// The message title.
        public var title: String
        /// The title's contexts.
        public var contexts: [String]
        /// The impressions the campaign allows.
        public var maxImpressions: Int
        /// The impressions left for this user (never below 0).
        public var impressionsLeft: Int
        /// Whether this user opted out of it.
        public var optedOut: Bool
        /// Whether its end time has passed.
        public var expired: Bool
        /// Whether it is queued and may show now.
        public var ready: Bool
        /// How many of its triggers this user's events have satisfied.
        public var triggersSatisfied: Int
        /// How many triggers it has.
        public var triggers: Int
        /// Its priority: higher shows first.
        public var priority: Int = 0
        /// This user's group in its rollout and holdout (`treatment` when it has neither).
        public var group: Group = .treatment
    }

    /// No loaded campaign has the id given.
    public struct NotFound: Error, CustomStringConvertible {
        /// The reason, naming the campaign.
        public var description: String
    }

    /// The campaign does not allow the request (e.g. an opt-out it does not offer).
    public struct NotAllowed: Error, CustomStringConvertible {
        /// The reason, naming the campaign.
        public var description: String
    }

    /// The pause as last read, the frequency caps, the clock, the event tracker and the users'
    /// buckets (CampaignEngine+Holds.swift); taken after `lock` when both are, never before.
    let holds = Mutex(Holds())
    /// Guards everything below; held while the shared state is read or written. An NSLock, not a Mutex: the state it
    /// guards is spread over this file and its extensions, and logEvents(_:deadlineSeconds:) needs `try()`.
    let lock = NSLock()
    let shared: CampaignSharedState
    /// The calls into the trigger operators, one evaluation of a batch at a time (logEvents(_:deadlineSeconds:)).
    package let evaluation = PluginCallTracker()
    /// Events not evaluated while an evaluation was stuck.
    let evaluationSkipped = Mutex(0)
    /// The trigger operators conditions call; replaced by a reload (under `lock`).
    var operators: OperatorSet
    let logger: Logger
    /// How messages with contexts may show; set from `campaigns.context_rule` (a reload may change it).
    public var contextRule: ContextRule {
        get { liveContextRule.withLock { $0 } }
        set {
            liveContextRule.withLock { $0 = newValue }
            streams.changed()
        }
    }
    private let liveContextRule = Mutex(ContextRule.all)
    /// The config and ping endpoints the ping service asks (`campaigns.config_url` and `ping_url`,
    /// changed by a reload) and whether they changed since its last sync.
    let endpoints = Mutex<(configURL: String?, pingURL: String?, changed: Bool)>((nil, nil, false))
    /// The service made by `pingService` (weakly: the runtime owns it), woken when a reload changes
    /// the endpoints. Under `lock`.
    weak var pings: PeriodicService?
    /// The running message streams (CampaignMessageStream.swift), woken by every change `update` writes.
    let streams = MessageStreams()

    // The shared state as this process last read or wrote it (CampaignSharedState.swift keeps it
    // current: every public call re-reads it when another process changed it).
    /// The loaded campaigns (from the stored list) and the ones skipped while loading, with why.
    var loaded: [Campaign] = []
    var loadedSkipped: [String] = []
    /// Campaign id -> its position in `loaded`.
    var positions: [String: Int] = [:]
    /// The triggers matching looks at, compiled once per list (CampaignMatching.swift).
    var compiled = CompiledTriggers()
    var currentUser = User()
    var cache = UserCache()
    /// The ids in `cache.queue`, for membership tests in the event path.
    var queuedIDs = Set<String>()
    /// The current user's rollout and holdout groups as last worked out (CampaignExperiment.swift).
    var groups = Groups()
    var enabled = true
    /// The `campaigns.version` and `campaigns.listVersion` this memory reflects; -1: read everything.
    var seenVersion: Int64 = -1
    var seenListVersion: Int64 = -1
    /// The event store's data_version when the event path last looked (`refreshForEvents`); nil: never.
    var seenDataVersion: Int64?

    // The launch (this engine's life), never shared.
    var appStartLogged = false
    var shownThisLaunch: Set<String> = []
    var nextPingAtMs: Int64 = 0
    /// Failed syncs in a row, for the backoff (`pingFailed`).
    var pingFailures = 0

    /// Uses `operators` from now on (a reload changed the trigger_operator instances): the triggers
    /// are compiled again; an evaluation in progress finishes with the old ones first.
    package func replaceOperators(_ operators: OperatorSet) {
        lock.withLock {
            self.operators = operators
            rebuildIndex()
        }
    }

    package init(state: KeyValueState, operators: OperatorSet, pipeline: LogPipeline) throws {
        shared = CampaignSharedState(state: state)
        self.operators = operators
        logger = Logger(label: "hubhost.campaigns", pipeline: pipeline)
        try lock.withLock { try refresh() }
    }

    // MARK: What is loaded, for the current user

    /// The loaded campaigns, as stored now (another process may have loaded a new list).
    public var campaigns: [Campaign] {
        lock.withLock {
            refreshQuietly()
            return loaded
        }
    }

    /// Campaigns skipped while loading the stored list, with why.
    public var skipped: [String] {
        lock.withLock {
            refreshQuietly()
            return loadedSkipped
        }
    }

    /// The current user, shared by every process on the data directory.
    public var user: User {
        lock.withLock {
            refreshQuietly()
            return currentUser
        }
    }

    /// False when the configuration endpoint says messaging is disabled: every call does nothing.
    public var isEnabled: Bool {
        lock.withLock {
            refreshQuietly()
            return enabled
        }
    }

    /// Changes the user: their own cache is loaded (and the campaigns re-evaluated for them). Every
    /// process on the data directory follows.
    public func setUser(_ newUser: User) throws {
        try lock.withLock {
            try update { db, wrote in
                currentUser = newUser
                cache = try shared.cache(db, for: newUser) ?? UserCache()
                reconcile()
                try shared.setUser(db, newUser)
                wrote = true
            }
        }
    }

    /// Every loaded campaign's status for the current user, in list order (re-reads the shared
    /// state first when another process changed it).
    public func statuses() -> [Status] {
        lock.withLock {
            refreshQuietly()
            let now = nowMs()
            return loaded.map { c in
                let satisfied = c.triggers.indices.filter {
                    c.triggers[$0].eventType == 1 ? appStartLogged : (cache.satisfied[c.id] ?? []).contains($0)
                }.count
                return Status(
                    id: c.id, title: c.title, contexts: c.contexts, maxImpressions: c.maxImpressions,
                    impressionsLeft: max(0, cache.impressionsLeft[c.id] ?? c.maxImpressions), optedOut: cache.optedOut.contains(c.id),
                    expired: c.isExpired(nowMs: now), ready: queuedIDs.contains(c.id) && eligible(c, in: cache, now: now),
                    triggersSatisfied: satisfied, triggers: c.triggers.count, priority: c.priority, group: group(of: c))
            }
        }
    }

    /// Kept for callers of the engine before every change was written at once: nothing is left to
    /// save, so this only re-reads the shared state.
    public func saveIfChanged() throws {
        try lock.withLock { try refresh() }
    }
}
