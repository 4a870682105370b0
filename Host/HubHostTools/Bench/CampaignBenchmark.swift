import Foundation
import HubHostKit

/// `hubhost bench campaigns`: event evaluations per second through the campaign engine (indexed by
/// event type and name) beside a naive evaluation that checks every campaign's triggers for every
/// event, in the same run, with the same operator plugins (standard-operators, in-process).
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
    }

    public var campaignCount: Int
    public var eventCount: Int
    public var operatorsLibrary: String

    public init(campaigns: Int, events: Int, operatorsLibrary: String) {
        campaignCount = campaigns
        eventCount = events
        self.operatorsLibrary = operatorsLibrary
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

        // Campaigns: one custom trigger each, on one of `names` event names, "level" GREATER_THAN a threshold.
        let data: [[String: Any]] = (0..<campaignCount).map { i in
            [
                "campaignData": [
                    "campaignId": "c\(i)", "maxImpressions": 1, "type": 1, "isTest": false,
                    "messagePayload": ["title": "Campaign \(i)"],
                    "triggers": [
                        [
                            "type": 1, "eventType": 4, "eventName": "event_\(i % names)",
                            "attributes": [["name": "level", "value": String(i % 10), "type": 2, "operator": 3]]
                        ]
                    ]
                ]
            ]
        }
        let list = try JSONSerialization.data(withJSONObject: ["data": data])
        let store = try EventStore.open(path: folder + "/bench.sqlite").store
        let engine = try CampaignEngine(state: try KeyValueState(store: store), operators: operators, pipeline: quiet)
        try engine.load(list)
        let campaigns = engine.campaigns
        var generator = SplitMix(seed: 42)
        let events = (0..<eventCount).map { _ in
            Event(
                type: .custom, name: "event_\(Int(generator.next() % UInt64(names)))",
                attributes: [.init("level", .int(Int64(generator.next() % 12)))])
        }

        progress("engine: \(eventCount) events against \(campaignCount) campaigns")
        var start = Clock.monotonicNs()
        engine.logEvents(events)  // evaluated in order; what they change is written once, at the end
        let engineSeconds = Double(Clock.monotonicNs() - start) / 1e9
        let engineMatches = engine.statuses().reduce(0) { $0 + $1.triggersSatisfied }

        progress("naive: every campaign's triggers for every event")
        var satisfied = Set<Int>()
        start = Clock.monotonicNs()
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
        let naiveSeconds = Double(Clock.monotonicNs() - start) / 1e9
        let engineRate = Double(eventCount) / engineSeconds
        let naiveRate = Double(eventCount) / naiveSeconds
        return Result(
            campaigns: campaignCount, events: eventCount, engineEventsPerSecond: engineRate, naiveEventsPerSecond: naiveRate,
            ratio: engineRate / naiveRate, engineMatches: engineMatches, naiveMatches: satisfied.count)
    }
}
