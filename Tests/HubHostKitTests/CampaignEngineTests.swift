import Foundation
import XCTest

@testable import HubHostKit

/// The campaign engine: triggers from tracked events through the operator plugins, impressions,
/// opt-outs, per-user caches, expiry, invalid campaigns skipped.
final class CampaignEngineTests: FolderTestCase {
    private func attribute(_ name: String, _ value: String, type: Int, op: Any) -> [String: Any] {
        ["name": name, "value": value, "type": type, "operator": op]
    }

    private func campaign(_ id: String, title: String, max: Int = 1, end: Int64? = nil, triggers: [[String: Any]]) -> [String: Any] {
        var display: [String: Any] = ["optOut": true, "delay": 0]
        if let end { display["endTimeMillis"] = end }
        return [
            "campaignData": [
                "campaignId": id, "maxImpressions": max, "type": 1, "isTest": false, "triggers": triggers,
                "messagePayload": [
                    "title": title, "header": "H", "messageBody": "B",
                    "messageSettings": ["displaySettings": display, "controlSettings": ["buttons": []]]
                ]
            ]
        ]
    }

    private func writeCampaigns(welcomeMax: Int = 2) throws {
        let list: [String: Any] = [
            "currentPingMillis": 1, "nextPingMillis": 3_600_000,
            "data": [
                campaign(
                    "welcome", title: "[home] Welcome", max: welcomeMax,
                    triggers: [["type": 1, "eventType": 1, "eventName": "app_start", "attributes": []]]),
                campaign(
                    "level", title: "Level up",
                    triggers: [
                        ["type": 1, "eventType": 2, "eventName": "login_successful", "attributes": []],
                        ["type": 1, "eventType": 4, "eventName": "level_up", "attributes": [attribute("level", "5", type: 2, op: 3)]]
                    ]),
                campaign(
                    "vip", title: "VIP",
                    triggers: [
                        [
                            "type": 1, "eventType": 3, "eventName": "purchase_successful",
                            "attributes": [attribute("tier", "gold, silver", type: 1, op: "IN_LIST")]
                        ]
                    ]),
                campaign("old", title: "Expired", end: 1000, triggers: [["type": 1, "eventType": 1, "eventName": "app_start", "attributes": []]]),
                campaign("bad-type", title: "x", triggers: [["type": 1, "eventType": 0, "eventName": "x", "attributes": []]]),
                campaign(
                    "bad-attr", title: "x",
                    triggers: [["type": 1, "eventType": 4, "eventName": "x", "attributes": [attribute("a", "1", type: 0, op: 1)]]]),
                campaign(
                    "bad-op", title: "x",
                    triggers: [["type": 1, "eventType": 4, "eventName": "x", "attributes": [attribute("a", "1", type: 1, op: "NOPE")]]])
            ]
        ]
        try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: folder + "/campaigns.json"))
    }

    private func host() throws -> (HubHost, CampaignEngine, EventEngine) {
        let host = try TestSupport.campaignsHost(in: folder, sections: "events: {cache_size: 1000}", extraOperators: true)
        addTeardownBlock { host.shutdown() }
        let campaigns = try XCTUnwrap(try host.campaigns())
        return (host, campaigns, try host.events())
    }

    func testTriggersImpressionsAndTheAppStartRule() throws {
        try writeCampaigns()
        let (_, campaigns, events) = try host()
        XCTAssertEqual(campaigns.campaigns.map(\.id), ["welcome", "level", "vip", "old"])
        XCTAssertEqual(campaigns.skipped.count, 3)
        XCTAssertEqual(
            campaigns.skipped[0],
            "campaign bad-type: trigger 1: eventType must be an integer: 1 (app start), 2 (login successful), 3 (purchase successful) or 4 (custom); got 0"
        )
        XCTAssertEqual(
            campaigns.skipped[1],
            "campaign bad-attr: trigger 1, attribute 'a': type must be an integer: 1 (string), 2 (integer), 3 (double), 4 (boolean) or 5 (time in ms); got 0"
        )
        XCTAssertEqual(campaigns.skipped[2], "campaign bad-op: operator 'NOPE' is not provided by any loaded trigger_operator plugin")
        XCTAssertEqual(campaigns.campaigns[0].contexts, ["home"])

        _ = try events.track(Event(type: .appStart))
        XCTAssertEqual(campaigns.ready().map(\.id), ["welcome"], "the expired campaign never shows")
        try campaigns.displayed("welcome")
        _ = try events.track(Event(type: .appStart))
        XCTAssertEqual(campaigns.ready().map(\.id), [], "a campaign needing only app start shows once per launch")

        _ = try events.track(Event(type: .loginSuccessful))
        _ = try events.track(Event(type: .custom, name: "level_up", attributes: [.init("level", .int(3))]))
        XCTAssertEqual(campaigns.ready().map(\.id), [], "3 is not GREATER_THAN 5")
        _ = try events.track(Event(type: .custom, name: "level_up", attributes: [.init("level", .string("7"))]))
        XCTAssertEqual(campaigns.ready().map(\.id), [], "a string is not compared with an integer")
        _ = try events.track(Event(type: .namedEvent, name: "level_up", attributes: [.init("level", .int(7))]))
        XCTAssertEqual(campaigns.ready().map(\.id), ["level"], "any tracked event counts by name")

        _ = try events.track(Event(type: .purchaseSuccessful, attributes: [.init("tier", .string("silver"))]))
        XCTAssertEqual(campaigns.ready().map(\.id), ["level", "vip"], "an operator from another plugin, named by string")

        try campaigns.optOut("level")
        XCTAssertEqual(campaigns.ready().map(\.id), ["vip"])
        let status = Dictionary(uniqueKeysWithValues: campaigns.statuses().map { ($0.id, $0) })
        XCTAssertEqual(status["welcome"]?.impressionsLeft, 1)
        XCTAssertEqual(status["level"]?.optedOut, true)
        XCTAssertEqual(status["old"]?.expired, true)
    }

    /// The campaign engine hears a tracked batch once (one re-read of its shared state per batch,
    /// not per event) with the same outcome as event by event: triggers satisfied by different
    /// events of one batch add up, in order, and so do those of concurrent grouped callers.
    func testABatchAndGroupedCallersSatisfyTriggersAsEventByEventDoes() async throws {
        try writeCampaigns()
        let (_, campaigns, events) = try host()
        _ = try events.trackBatch([
            Event(type: .loginSuccessful),
            Event(type: .custom, name: "level_up", attributes: [.init("level", .int(3))])
        ])
        XCTAssertEqual(campaigns.ready().map(\.id), [], "3 is not GREATER_THAN 5: one trigger of two")
        _ = try events.trackBatch([
            Event(type: .custom, name: "level_up", attributes: [.init("level", .int(9))]),
            Event(type: .namedEvent, name: "OTHER")
        ])
        XCTAssertEqual(campaigns.ready().map(\.id), ["level"], "the second trigger, in a later batch, completes it")
        XCTAssertEqual(campaigns.statuses().first { $0.id == "level" }?.triggersSatisfied, 2)

        // Grouped callers (POST /v1/events): a purchase among eight concurrent callers queues vip once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<8 {
                group.addTask {
                    _ = try await events.trackGrouped([
                        k == 5
                            ? Event(type: .purchaseSuccessful, attributes: [.init("tier", .string("gold"))])
                            : Event(type: .namedEvent, name: "TAP \(k)")
                    ])
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(campaigns.ready().map(\.id), ["level", "vip"])
    }

    func testEachUserHasItsOwnCacheAndMaxImpressionChangesAddTheDifference() throws {
        try writeCampaigns(welcomeMax: 1)
        let (_, campaigns, events) = try host()
        _ = try events.track(Event(type: .loginSuccessful))
        _ = try events.track(Event(type: .custom, name: "level_up", attributes: [.init("level", .int(9))]))
        XCTAssertEqual(campaigns.ready().map(\.id), ["level"])
        try campaigns.setUser(.init(userID: "u2", idTrackingIdentifier: "t2"))
        XCTAssertEqual(campaigns.ready().map(\.id), [], "a new user starts with an empty cache")
        try campaigns.setUser(.init())
        XCTAssertEqual(campaigns.ready().map(\.id), ["level"], "the anonymous user's cache is kept")

        _ = try events.track(Event(type: .appStart))
        try campaigns.displayed("welcome")
        XCTAssertEqual(campaigns.statuses().first { $0.id == "welcome" }?.impressionsLeft, 0)
        try writeCampaigns(welcomeMax: 4)
        try campaigns.loadFile(folder + "/campaigns.json")
        XCTAssertEqual(campaigns.statuses().first { $0.id == "welcome" }?.impressionsLeft, 3, "max 1 -> 4 adds 3")
    }

    func testCampaignStatePersistsAcrossRuns() throws {
        try writeCampaigns()
        do {
            let (host, campaigns, events) = try self.host()
            _ = try events.track(Event(type: .purchaseSuccessful, attributes: [.init("tier", .string("gold"))]))
            XCTAssertEqual(campaigns.ready().map(\.id), ["vip"])
            host.shutdown()
        }
        let result = try TestSupport.hubhost(["campaigns", "ready", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let ready = try result.json(as: [[String: Any]].self)
        XCTAssertEqual(ready.compactMap { $0["id"] as? String }, ["vip"])
        let list = try TestSupport.hubhost(["campaigns", "list", "--manifest", folder + "/plugins.yaml"])
        XCTAssertTrue(list.stdout.contains("vip"), list.stdout)
        XCTAssertTrue(list.stdout.contains("expired"), list.stdout)
    }

    func testMessagesOneAtATimeWithContextsCloseAndOptOut() throws {
        let list: [String: Any] = [
            "data": [
                campaign(
                    "ctx", title: "[checkout] Free shipping", triggers: [["type": 1, "eventType": 1, "eventName": "app_start", "attributes": []]]),
                campaign("plain", title: "Hello", triggers: [["type": 1, "eventType": 1, "eventName": "app_start", "attributes": []]])
            ]
        ]
        try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: folder + "/campaigns.json"))
        let (_, campaigns, events) = try host()
        _ = try events.track(Event(type: .appStart))
        XCTAssertEqual(campaigns.ready().map(\.id), ["ctx", "plain"])
        XCTAssertEqual(campaigns.next()?.id, "plain", "[checkout] may not show while the caller allows no context")
        XCTAssertEqual(campaigns.next()?.id, "plain", "the current message stays current until shown or closed")
        campaigns.close(clearQueue: false)
        XCTAssertEqual(campaigns.statuses().first { $0.id == "plain" }?.impressionsLeft, 1, "closing counts no impression")
        XCTAssertEqual(campaigns.next(allowedContexts: ["checkout"])?.id, "ctx")
        try campaigns.displayed("ctx")
        XCTAssertNil(campaigns.next(allowedContexts: ["checkout"]))
        campaigns.contextRule = .none
        XCTAssertThrowsError(try campaigns.optOut("nope"))
    }

    /// `hubhost campaigns sync --json` with `campaigns.config_url` at `url`.
    private func syncFromConfigEndpoint(_ url: String) throws -> CommandResult {
        try TestSupport.write(
            """
            data_dir: data
            campaigns: {config_url: "\(url)"}
            plugins:
              - id: operators
                use: \(TestSupport.plugin("StandardOperators"))
            """, to: folder + "/plugins.yaml")
        return try TestSupport.hubhost(["campaigns", "sync", "--json", "--manifest", folder + "/plugins.yaml"])
    }

    func testCampaignsFromRealConfigAndPingEndpoints() throws {
        let server = try TestCollector()
        defer { server.stop() }
        let list: [String: Any] = [
            "currentPingMillis": 0, "nextPingMillis": 60_000,
            "data": [
                campaign(
                    "net", title: "From the network", triggers: [["type": 1, "eventType": 2, "eventName": "login_successful", "attributes": []]]),
                campaign("broken", title: "x", triggers: [])
            ]
        ]
        let body = String(decoding: try JSONSerialization.data(withJSONObject: list), as: UTF8.self)
        server.routes = ["/config": (200, "{\"enabled\": true, \"pingUrl\": \"\(server.url("/ping"))\"}"), "/ping": (200, body)]
        let sync = try syncFromConfigEndpoint(server.url("/config"))
        XCTAssertEqual(sync.status, 0, sync.stderr)
        let report = try sync.json(as: [String: Any].self)
        XCTAssertEqual(report["loaded"] as? Int, 1)
        XCTAssertEqual((report["skipped"] as? [String])?.first, "campaign broken: no triggers")
        XCTAssertEqual(server.hits("/config"), 1)
        XCTAssertEqual(server.hits("/ping"), 1)
        _ = try TestSupport.hubhost(["track", "login_successful", "--manifest", folder + "/plugins.yaml"])
        let next = try TestSupport.hubhost(["messages", "next", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertTrue(next.stdout.contains("\"id\" : \"net\""), next.stdout)

        // The config endpoint turns messaging off: calls do nothing.
        server.routes["/config"] = (200, "{\"enabled\": false}")
        let off = try TestSupport.hubhost(["campaigns", "sync", "--manifest", folder + "/plugins.yaml"])
        XCTAssertTrue(off.stdout.contains("disabled by the configuration endpoint"), off.stdout)
        let none = try TestSupport.hubhost(["messages", "next", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stdout.contains("no message is ready"), none.stdout)
    }

    func testImpressionsOptOutsAndTheUserSurviveARestart() throws {
        try writeCampaigns(welcomeMax: 3)
        do {
            let (host, campaigns, events) = try self.host()
            try campaigns.setUser(.init(userID: "ann", idTrackingIdentifier: "t1"))
            _ = try events.track(Event(type: .appStart))
            try campaigns.displayed("welcome")
            _ = try events.track(Event(type: .loginSuccessful))
            _ = try events.track(Event(type: .custom, name: "level_up", attributes: [.init("level", .int(9))]))
            try campaigns.optOut("level")
            host.shutdown()
        }
        let (_, campaigns, _) = try host()
        XCTAssertEqual(campaigns.user, .init(userID: "ann", idTrackingIdentifier: "t1"))
        let status = Dictionary(uniqueKeysWithValues: campaigns.statuses().map { ($0.id, $0) })
        XCTAssertEqual(status["welcome"]?.impressionsLeft, 2)
        XCTAssertEqual(status["level"]?.optedOut, true)
        try campaigns.setUser(.init())
        let anonymous = Dictionary(uniqueKeysWithValues: campaigns.statuses().map { ($0.id, $0) })
        XCTAssertEqual(anonymous["welcome"]?.impressionsLeft, 3, "the anonymous user has its own counts")
        XCTAssertEqual(anonymous["level"]?.optedOut, false)
    }

    func testSkippedCampaignsAreErrorNotificationsOnTheStream() throws {
        try writeCampaigns()
        let host = try TestSupport.campaignsHost(in: folder, sections: "logging: {severity: warning}")
        defer { host.shutdown() }
        final class Heard: @unchecked Sendable { var list: [HostNotification] = [] }
        let heard = Heard()
        let lock = NSLock()
        host.notifications.subscribe { notification in lock.withLock { heard.list.append(notification) } }
        _ = try host.campaigns()
        let errors = lock.withLock { heard.list }.filter { $0.name == HostNotification.Name.error }
        XCTAssertTrue(errors.allSatisfy { $0.payload["source"] == "hubhost.campaigns" && $0.payload["severity"] == "warning" }, "\(errors)")
        for id in ["bad-type", "bad-attr", "bad-op", "vip"] {  // vip: IN_LIST has no plugin in this manifest
            XCTAssertTrue(
                errors.contains { $0.payload["message"]?.plainText.contains(id) ?? false },
                "\(id) in \(errors.map { $0.payload["message"]?.plainText ?? "" })")
        }
    }

    // MARK: Wrong types and out-of-range values

    private func load(_ fields: [String: Any], trigger: [String: Any]? = nil) throws -> CampaignParser.Parsed {
        var data: [String: Any] = [
            "campaignId": "c", "maxImpressions": 2, "type": 1, "messagePayload": ["title": "T"],
            "triggers": [trigger ?? ["type": 1, "eventType": 1, "eventName": "app_start", "attributes": []]]
        ]
        for (key, value) in fields { data[key] = value }
        return try CampaignParser.parse(try JSONSerialization.data(withJSONObject: ["data": [["campaignData": data]]]))
    }

    private func skipped(_ fields: [String: Any], trigger: [String: Any]? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String
    {
        let parsed = try load(fields, trigger: trigger)
        XCTAssertEqual(parsed.campaigns.count, 0, "loaded \(fields)", file: file, line: line)
        return parsed.skipped.first ?? ""
    }

    func testWrongTypesAndOutOfRangeValuesSkipTheCampaignNamingTheValueSent() throws {
        let impressions = "campaign c: maxImpressions must be an integer from 1 to 2147483647; got "
        XCTAssertEqual(try skipped(["maxImpressions": "three"]), impressions + "\"three\" (a string)")
        XCTAssertEqual(try skipped(["maxImpressions": -2]), impressions + "-2")
        XCTAssertEqual(try skipped(["maxImpressions": 2.5]), impressions + "2.5")
        XCTAssertEqual(try skipped(["maxImpressions": 0]), impressions + "0")
        XCTAssertEqual(try skipped(["maxImpressions": true]), impressions + "true (a boolean)")
        XCTAssertEqual(try skipped(["maxImpressions": 1e300]), impressions + "1e+300")
        let types = "campaign c: type must be an integer: 1 (modal), 2 (full screen), 3 (slide-up) or 4 (HTML); got "
        XCTAssertEqual(try skipped(["type": "2"]), types + "\"2\" (a string)", "the value sent, not '0 is invalid'")
        XCTAssertEqual(try skipped(["type": 0]), types + "0")
        XCTAssertEqual(try skipped(["type": 5]), types + "5")
        XCTAssertEqual(try skipped(["isTest": "no"]), "campaign c: isTest must be true or false; got \"no\" (a string)")
        XCTAssertEqual(try skipped(["campaignId": 7]), "campaign #1: campaignId must be a non-empty string; got 7")
        XCTAssertEqual(try skipped(["messagePayload": NSNull()]), "campaign c: messagePayload must be an object; got null")
        XCTAssertEqual(try skipped(["messagePayload": ["header": "no title"]]), "campaign c: missing messagePayload.title (a string)")
        XCTAssertEqual(
            try skipped(["messagePayload": ["title": "T", "messageSettings": ["displaySettings": ["optOut": "yes"]]]]),
            "campaign c: messagePayload.messageSettings.displaySettings.optOut must be true or false; got \"yes\" (a string)")
        XCTAssertEqual(try skipped([:], trigger: ["type": 0, "eventType": 1]), "campaign c: trigger 1: type must be an integer: 1 (event); got 0")
        XCTAssertEqual(
            try skipped([:], trigger: ["type": 1, "eventType": 5]),
            "campaign c: trigger 1: eventType must be an integer: 1 (app start), 2 (login successful), 3 (purchase successful) or 4 (custom); got 5")
        XCTAssertEqual(
            try skipped([:], trigger: ["type": 1, "eventType": "4", "eventName": "x"]),
            "campaign c: trigger 1: eventType must be an integer: 1 (app start), 2 (login successful), 3 (purchase successful) or 4 (custom); got \"4\" (a string)"
        )
        XCTAssertEqual(
            try skipped(
                [:],
                trigger: [
                    "type": 1, "eventType": 4, "eventName": "x",
                    "attributes": [["name": "a", "value": "1", "type": 2, "operator": 2.5]]
                ]),
            "campaign c: trigger 1, attribute 'a': operator must be an integer from 1 to 2147483647; got 2.5")

        // The valid forms still load, with the values sent.
        let loaded = try load(["maxImpressions": 3, "type": 4, "isTest": true])
        XCTAssertEqual(loaded.skipped, [])
        XCTAssertEqual(loaded.campaigns.first?.maxImpressions, 3)
        XCTAssertEqual(loaded.campaigns.first?.type, 4)
        XCTAssertEqual(loaded.campaigns.first?.isTest, true)
    }

    func testImpressionsStopAtZeroAndARaisedMaximumStartsFromThere() throws {
        try writeCampaigns(welcomeMax: 2)
        let (_, campaigns, events) = try host()
        _ = try events.track(Event(type: .appStart))
        for _ in 0..<5 { try campaigns.displayed("welcome") }  // three past the limit
        XCTAssertEqual(campaigns.statuses().first { $0.id == "welcome" }?.impressionsLeft, 0, "never below zero")
        try writeCampaigns(welcomeMax: 3)
        try campaigns.loadFile(folder + "/campaigns.json")
        XCTAssertEqual(campaigns.statuses().first { $0.id == "welcome" }?.impressionsLeft, 1, "max 2 -> 3 adds 1 to 0, not to -3")
        try writeCampaigns(welcomeMax: 1)
        try campaigns.loadFile(folder + "/campaigns.json")
        XCTAssertEqual(campaigns.statuses().first { $0.id == "welcome" }?.impressionsLeft, 0, "a lowered maximum takes away, down to zero")
    }

    func testTheInAppMessagingServicesOwnConfigShapeIsRead() throws {
        let server = try TestCollector()
        defer { server.stop() }
        let list: [String: Any] = [
            "nextPingMillis": 60_000,
            "data": [
                campaign(
                    "real", title: "From the service", triggers: [["type": 1, "eventType": 2, "eventName": "login_successful", "attributes": []]])
            ]
        ]
        server.routes = [
            "/config": (
                200,
                """
                {"data": {"rolloutPercentage": 100, "enabled": true,
                          "endpoints": {"ping": "\(server.url("/ping"))", "impression": "\(server.url("/impression"))"}}}
                """
            ),
            "/ping": (200, String(decoding: try JSONSerialization.data(withJSONObject: list), as: UTF8.self))
        ]
        let sync = try syncFromConfigEndpoint(server.url("/config"))
        XCTAssertEqual(sync.status, 0, sync.stderr)
        XCTAssertEqual((try sync.json as? [String: Any])?["loaded"] as? Int, 1, sync.stdout)
        XCTAssertEqual(server.hits("/ping"), 1)

        // Disabled in the service's shape turns messaging off.
        server.routes["/config"] = (200, #"{"data": {"enabled": false, "endpoints": {}}}"#)
        let off = try TestSupport.hubhost(["campaigns", "sync", "--manifest", folder + "/plugins.yaml"])
        XCTAssertTrue(off.stdout.contains("disabled by the configuration endpoint"), off.stdout + off.stderr)
        XCTAssertEqual(server.hits("/ping"), 1, "no ping while disabled")

        // A wrong type is refused with the value sent, not taken for "enabled".
        server.routes["/config"] = (200, #"{"data": {"enabled": "no"}}"#)
        let wrong = try TestSupport.hubhost(["campaigns", "sync", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stderr.contains("config endpoint: data.enabled must be true or false; got \"no\" (a string)"), wrong.stderr)
    }

    /// The campaign file in docs/campaigns.md: every field, valid, loaded as written.
    func testTheDocumentedCampaignFileLoadsWithEveryField() throws {
        let text = try DocumentationText.block(after: "<!-- campaign-file -->")
        let parsed = try CampaignParser.parse(Data(text.utf8))
        XCTAssertEqual(parsed.skipped, [])
        XCTAssertEqual(parsed.nextPingMillis, 3_600_000)
        let campaign = try XCTUnwrap(parsed.campaigns.first)
        XCTAssertEqual(campaign.id, "summer-sale")
        XCTAssertEqual(campaign.maxImpressions, 3)
        XCTAssertEqual(campaign.type, 1)
        XCTAssertEqual(campaign.isTest, false)
        XCTAssertEqual(campaign.priority, 10)
        XCTAssertEqual(campaign.rollout, 50)
        XCTAssertEqual(campaign.holdout, 10)
        XCTAssertEqual(campaign.title, "[home] Summer sale")
        XCTAssertEqual(campaign.contexts, ["home"])
        XCTAssertEqual(campaign.header, "Half price")
        XCTAssertEqual(campaign.body, "Every level pack at half price until Sunday.")
        XCTAssertEqual(campaign.imageURL, "https://cdn.example.com/sale.png")
        XCTAssertEqual(campaign.endTimeMillis, 4_102_444_800_000)
        XCTAssertEqual(campaign.optOut, true)
        XCTAssertEqual(campaign.delay, 0)
        XCTAssertEqual(
            campaign.buttons,
            [
                .init(text: "Shop now", action: 2, uri: "myapp://shop", textColor: "#ffffff", backgroundColor: "#1a73e8"),
                .init(text: "Later", action: 3, uri: nil)
            ])
        XCTAssertEqual(
            campaign.colors, Campaign.Colors(title: "#1b1b1b", header: "#c62828", body: "#333333", background: "#ffffff", frame: "#000000"))
        XCTAssertEqual(campaign.slideFrom, 1)
        XCTAssertEqual(campaign.triggers.map(\.eventType), [2, 4])
        XCTAssertEqual(
            campaign.triggers[1].attributes,
            [
                .init(name: "level", value: .int(5), op: "3"),
                .init(name: "mode", value: .string("arcade, story"), op: "IN_LIST")
            ])

        // And through the CLI, with the operators it names loaded.
        try TestSupport.write(text, to: folder + "/campaigns.json")
        try TestSupport.write(
            """
            data_dir: data
            plugins:
              - id: operators
                use: \(TestSupport.plugin("StandardOperators"))
              - id: extra
                use: \(TestSupport.plugin("ExtraOperators"))
            """, to: folder + "/plugins.yaml")
        let sync = try TestSupport.hubhost(["campaigns", "sync", "--file", folder + "/campaigns.json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(sync.status, 0, sync.stderr)
        XCTAssertEqual(sync.stdout, "loaded 1 campaign\n")
    }
}

/// A ping endpoint that is down is asked again after a backoff (5 s, doubling, at most 10 min), not
/// at every check, and a ping that works resets it.
final class CampaignPingBackoffTests: XCTestCase {
    func testFailedSyncsBackOffAndASuccessfulOneResetsTheBackoff() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let server = try TestCollector()
        defer { server.stop() }
        let dead = try TestCollector()
        let deadURL = dead.url("/ping")
        dead.stop()
        try TestSupport.write(
            "data_dir: data\ncampaigns: {ping_url: \"\(deadURL)\"}\nplugins:\n  - id: operators\n    use: \(TestSupport.plugin("StandardOperators"))\n",
            to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let engine = try XCTUnwrap(try host.campaigns())
        XCTAssertThrowsError(try engine.sync(configURL: nil, pingURL: deadURL, http: HTTPFetcher()))
        XCTAssertEqual(engine.pingFailed(nowMs: 1_000), 6_000)
        XCTAssertFalse(engine.isPingDue(nowMs: 5_999))
        XCTAssertEqual(engine.pingFailed(nowMs: 6_000), 16_000)
        XCTAssertEqual(engine.pingFailed(nowMs: 16_000), 36_000)
        XCTAssertEqual((1...40).map { CampaignEngine.pingRetryDelayMs(afterFailures: $0) }.max(), 600_000)
        XCTAssertEqual(CampaignEngine.pingRetryDelayMs(afterFailures: Int.max), 600_000)
        server.routes = ["/ping": (200, "{\"currentPingMillis\": 0, \"nextPingMillis\": 60000, \"data\": []}")]
        let report = try engine.sync(configURL: nil, pingURL: server.url("/ping"), http: HTTPFetcher(), nowMs: 100_000)
        XCTAssertEqual(report.nextPingAtMs, 160_000)
        XCTAssertEqual(engine.pingFailed(nowMs: 200_000), 205_000, "the backoff starts again at 5 s")
    }
}
