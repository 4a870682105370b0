import Foundation
import HubHostKit

/// `hubhost bench campaigns`: event evaluations per second through the campaign engine (indexed by
/// event type and name) beside a naive evaluation that checks every campaign's triggers for every
/// event, in the same run, with the same operator plugins (standard-operators, in-process).
///
/// By default the engine runs as a deployment would: frequency caps set (`campaigns.frequency_caps`
/// read from a plugins.yaml, as `hubhost serve` reads it) and every other campaign bucketed (a
/// rollout, a holdout or both), so the user's rollout and holdout buckets are part of what is
/// measured. `capsAndBuckets: false` measures the plain engine, as before they existed.
public struct CampaignBenchmark {
    public struct Result: Encodable, Sendable {
        public var campaigns: Int
        public var events: Int
        public var engineEventsPerSecond: Double
        public var naiveEventsPerSecond: Double
        /// engine / naive.
        public var ratio: Double
        /// Trigger matches found by each (they must agree).
        public var engineMatches: Int
        public var naiveMatches: Int
        /// Whether the engine had frequency caps set (`campaigns.frequency_caps`).
        public var frequencyCaps: Bool
        /// Whether campaigns had rollout and holdout percentages (the user bucketed per campaign).
        public var buckets: Bool
        /// The campaigns with a rollout, a holdout or both.
        public var bucketedCampaigns: Int
        /// The campaigns queued for the user at the end (those outside their rollout are not).
        public var queued: Int
        /// Rounds of the engine's evaluation; `engineEventsPerSecond` is the fastest.
        public var rounds: Int
    }

    /// The caps the benchmark sets, as plugins.yaml gives them.
    public static let frequencyCapsYAML = "{per_session: 3, per_period: 10, period: 24h, min_gap: 1m, campaign_interval: 1h}"

    public var campaignCount: Int
    public var eventCount: Int
    public var operatorsLibrary: String
    /// Frequency caps set and every other campaign with a rollout and/or a holdout.
    public var capsAndBuckets: Bool
    /// Rounds of the engine's evaluation, each on a new engine; the fastest is reported.
    public var rounds: Int

    public init(campaigns: Int, events: Int, operatorsLibrary: String, capsAndBuckets: Bool = true, rounds: Int = 5) {
        campaignCount = campaigns
        eventCount = events
        self.operatorsLibrary = operatorsLibrary
        self.capsAndBuckets = capsAndBuckets
        self.rounds = max(1, rounds)
    }

    /// The rollout and holdout of campaign `i` (every other campaign has one or both).
    static func experiment(_ i: Int) -> (rollout: Double?, holdout: Double?) {
        switch i % 6 {
        case 1: return (80, nil)
        case 3: return (nil, 10)
        case 5: return (90, 20)
        default: return (nil, nil)
        }
    }

    /// The campaigns list (campaigns.json's form): one custom trigger each, on one of `names` event
    /// names, "level" GREATER_THAN a threshold; with the number given a rollout or a holdout.
    private func campaignList(names: Int) throws -> (list: Data, bucketed: Int) {
        var bucketed = 0
        let data: [[String: Any]] = (0..<campaignCount).map { i in
            var campaign: [String: Any] = [
                "campaignId": "c\(i)", "maxImpressions": 1, "type": 1, "isTest": false,
                "messagePayload": ["title": "Campaign \(i)"],
                "triggers": [
                    [
                        "type": 1, "eventType": 4, "eventName": "event_\(i % names)",
                        "attributes": [["name": "level", "value": String(i % 10), "type": 2, "operator": 3]]
                    ]
                ]
            ]
            if capsAndBuckets {
                let (rollout, holdout) = Self.experiment(i)
                if let rollout { campaign["rollout"] = rollout }
                if let holdout { campaign["holdout"] = holdout }
                if rollout != nil || holdout != nil { bucketed += 1 }
            }
            return ["campaignData": campaign]
        }
        return (try JSONSerialization.data(withJSONObject: ["data": data]), bucketed)
    }

    /// campaigns.frequency_caps as `hubhost serve` sets them: read from a plugins.yaml in `folder`.
    private static func frequencyCaps(in folder: String) throws -> FrequencyCaps {
        let manifestPath = folder + "/plugins.yaml"
        try "campaigns:\n  frequency_caps: \(Self.frequencyCapsYAML)\n".write(toFile: manifestPath, atomically: true, encoding: .utf8)
        let manifest = try HostManifest.load(path: manifestPath)
        let refused = manifest.diagnostics.filter { $0.key.hasPrefix("campaigns") }
        guard refused.isEmpty, !manifest.campaigns.frequencyCaps.isEmpty else {
            throw BenchmarkSetupError(description: "campaigns.frequency_caps not accepted: \(refused)")
        }
        return manifest.campaigns.frequencyCaps
    }

    /// The yardstick: every campaign's triggers checked for every event; the campaigns satisfied and
    /// the seconds it took.
    private static func naive(_ events: [Event], _ campaigns: [Campaign], _ operators: OperatorSet) -> (Set<Int>, Double) {
        var satisfied = Set<Int>()
        let start = Clock.monotonicNs()
        for event in events {
            for (c, campaign) in campaigns.enumerated() {
                for trigger in campaign.triggers where trigger.eventType == 4 && trigger.eventName == event.name {
                    let all = trigger.attributes.allSatisfy { attribute in
                        guard let value = event[attribute: attribute.name], let op = operators.find(attribute.op) else { return false }
                        return op.compare(event: value, trigger: attribute.value).result
                    }
                    if all { satisfied.insert(c) }
                }
            }
        }
        return (satisfied, Double(Clock.monotonicNs() - start) / 1e9)
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let folder = NSTemporaryDirectory() + "hubhost-bench-campaigns-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let quiet = LogPipeline(filter: LogFilter(severity: .none))
        let library = try PluginLibrary.open(path: operatorsLibrary)
        let handles = try library.descriptors.map {
            PluginHandle(try PluginInstance.create($0, of: library, instanceID: "bench", config: [:], dataDirectory: folder, pipeline: quiet))
        }
        defer { handles.forEach { $0.destroy() } }
        let operators = OperatorSet(handles)
        let names = max(1, campaignCount / 10)  // ten campaigns per event name

        let (list, bucketed) = try campaignList(names: names)
        let caps = capsAndBuckets ? try Self.frequencyCaps(in: folder) : FrequencyCaps()
        var generator = SplitMix(seed: 42)
        let events = (0..<eventCount).map { _ in
            Event(
                type: .custom, name: "event_\(Int(generator.next() % UInt64(names)))",
                attributes: [.init("level", .int(Int64(generator.next() % 12)))])
        }

        // Each round a new engine on a new store, so every round does the same work (the first
        // batch queues the campaigns it satisfies); the fastest round is reported. The user's
        // rollout and holdout buckets are worked out before the timer, as a running serve has
        // them after the user's first batch (they are kept per user and campaign).
        var engineSeconds = Double.infinity
        var campaigns: [Campaign] = []
        var statuses: [CampaignEngine.Status] = []
        for round in 1...rounds {
            progress(
                "engine, round \(round) of \(rounds): \(eventCount) events against \(campaignCount) campaigns"
                    + (capsAndBuckets ? " (frequency caps \(Self.frequencyCapsYAML); \(bucketed) campaigns with a rollout or holdout)" : ""))
            let store = try EventStore.open(path: folder + "/bench-\(round).sqlite").store
            let engine = try CampaignEngine(state: try KeyValueState(store: store), operators: operators, pipeline: quiet)
            if capsAndBuckets {
                engine.frequencyCaps = caps
                try engine.setUser(CampaignEngine.User(userID: "bench-user", idTrackingIdentifier: "bench-device"))
            }
            try engine.load(list)
            _ = engine.statuses()  // the user's buckets, and the state read once
            let start = Clock.monotonicNs()
            engine.logEvents(events)  // evaluated in order; what they change is written once, at the end
            engineSeconds = min(engineSeconds, Double(Clock.monotonicNs() - start) / 1e9)
            campaigns = engine.campaigns
            statuses = engine.statuses()
        }
        let engineMatches = statuses.reduce(0) { $0 + $1.triggersSatisfied }
        let queued = statuses.filter(\.ready).count

        progress("naive: every campaign's triggers for every event")
        let (satisfied, naiveSeconds) = Self.naive(events, campaigns, operators)
        let engineRate = Double(eventCount) / engineSeconds
        let naiveRate = Double(eventCount) / naiveSeconds
        return Result(
            campaigns: campaignCount, events: eventCount, engineEventsPerSecond: engineRate, naiveEventsPerSecond: naiveRate,
            ratio: engineRate / naiveRate, engineMatches: engineMatches, naiveMatches: satisfied.count, frequencyCaps: capsAndBuckets,
            buckets: capsAndBuckets && bucketed > 0, bucketedCampaigns: bucketed, queued: queued, rounds: rounds)
    }
}

/// The benchmark could not set up what it measures.
public struct BenchmarkSetupError: Error, CustomStringConvertible {
    public var description: String
}
