import Foundation
import HTTPTypes
import Synchronization
import XCTest

@testable import HubHostKit

/// What holds a ready message back, and who sees it: frequency caps (stored per user in the data
/// directory: across restarts, engines and processes), priority, pause and resume, display later,
/// rollout and holdout with their exposure events.
final class CampaignHoldsTests: FolderTestCase {
    /// A clock the tests move by hand, starting at the real time (so a CLI process beside the test,
    /// on the real clock, sees the same caps right after).
    final class FakeClock: Sendable {
        private let ms = Mutex<Int64>(Clock.wallMs())
        func now() -> Int64 { ms.withLock { $0 } }
        func advance(seconds: Double) { ms.withLock { $0 += Int64(seconds * 1000) } }
    }

    /// A campaign shown up to `max` times, triggered by the named event `trigger` (its id by default).
    /// `endTimeMillis`, when given, is its end time.
    func campaign(
        _ id: String, max: Int = 10, trigger: String? = nil, appStart: Bool = false, endTimeMillis: Int64? = nil, extra: [String: Any] = [:]
    ) -> [String: Any] {
        var display: [String: Any] = ["optOut": true]
        if let endTimeMillis { display["endTimeMillis"] = endTimeMillis }
        var data: [String: Any] = [
            "campaignId": id, "maxImpressions": max, "type": 1,
            "triggers": [
                appStart
                    ? ["type": 1, "eventType": 1, "eventName": "app_start", "attributes": []]
                    : ["type": 1, "eventType": 4, "eventName": trigger ?? id, "attributes": []]
            ],
            "messagePayload": ["title": id.capitalized, "messageSettings": ["displaySettings": display]]
        ]
        data.merge(extra) { _, new in new }
        return ["campaignData": data]
    }

    func writeList(_ campaigns: [[String: Any]]) throws {
        let list: [String: Any] = ["nextPingMillis": 3_600_000, "data": campaigns]
        try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: folder + "/campaigns.json"))
    }

    func manifest(caps: String, events: String) -> String {
        """
        data_dir: data
        events: \(events)
        campaigns: {file: campaigns.json, frequency_caps: \(caps)}
        plugins:
          - id: operators
            use: \(TestSupport.plugin("StandardOperators"))
        """
    }

    /// A host on `folder`'s data directory (another one may be open beside it), its campaign engine
    /// on `clock` when given.
    func host(
        caps: String = "{}", events: String = "{cache_size: 1000}", clock: FakeClock? = nil
    ) throws -> (HubHost, CampaignEngine, EventEngine) {
        try TestSupport.write(manifest(caps: caps, events: events), to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        let campaigns = try XCTUnwrap(try host.campaigns())
        if let clock { campaigns.setClock { clock.now() } }
        return (host, campaigns, try host.events())
    }

    func track(_ events: EventEngine, _ names: String...) throws {
        for name in names { try events.track(Event(type: .namedEvent, name: name)) }
    }

    // MARK: Frequency caps

    /// 8 clients of one user in two processes on one data directory, 4 over HTTP to a serve and 4
    /// on an engine in this process, take the next message and report it shown while the
    /// campaigns are loaded again and again: never more distinct messages are shown than
    /// `per_period` allows (a message two clients both report counts twice, so fewer may show,
    /// never more), the cap then holds every client in both processes, and no call fails.
    func testEightClientsInTwoProcessesNeverShowMoreMessagesThanTheCap() throws {
        try writeList((0..<12).map { campaign("c\($0)", max: 100, trigger: "go") })
        try TestSupport.write(
            manifest(caps: "{per_period: 4, period: 1h}", events: "{cache_size: 1000}") + "\nserver: {host: 127.0.0.1, port: 0}\n",
            to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        let campaigns = try XCTUnwrap(try host.campaigns())
        try track(try host.events(), "go")
        XCTAssertEqual(campaigns.ready().count, 12, "every campaign is ready")
        let serve = try ServeProcess(manifest: folder + "/plugins.yaml")
        let list = try Data(contentsOf: URL(fileURLWithPath: folder + "/campaigns.json"))

        let shown = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for client in 0..<9 {
            group.enter()
            Thread {
                defer { group.leave() }
                for round in 0..<25 {
                    do {
                        switch client {
                        case 8:  // the campaigns loaded again, as a sync does
                            try campaigns.load(list)
                        case 0..<4:  // over HTTP, to serve
                            // A connection per request (RawHTTPClient closes it): a 204 has no body to parse.
                            let (status, body) = try RawHTTPClient(port: serve.port).request("GET", "/v1/messages/next")
                            guard status == 200, let id = try TestSupport.json(body, as: [String: Any].self)["id"] as? String else {
                                if status != 204 { failures.withLock { $0.append("next: \(status) \(body)") } }
                                continue
                            }
                            let (shownStatus, answer) = try RawHTTPClient(port: serve.port).request("POST", "/v1/messages/\(id)/impression")
                            // A message another client reported first is no longer current: still counted, never refused.
                            guard shownStatus == 200 else {
                                failures.withLock { $0.append("impression \(id): \(shownStatus) \(answer)") }
                                continue
                            }
                            shown.withLock { $0.append(id) }
                        default:  // in this process
                            guard let message = campaigns.nextMessage().message else { continue }
                            _ = try campaigns.displayed(message.id)
                            shown.withLock { $0.append(message.id) }
                        }
                    } catch {
                        failures.withLock { $0.append("client \(client) round \(round): \(error)") }
                    }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success, "the clients finished")
        XCTAssertEqual(failures.withLock { $0 }, [])
        let distinct = Set(shown.withLock { $0 })
        XCTAssertTrue((1...4).contains(distinct.count), "at most per_period messages, by both processes together: \(shown.withLock { $0 })")
        XCTAssertTrue(shown.withLock { $0 }.count >= 4, "the clients reported the cap full: \(shown.withLock { $0 })")
        XCTAssertEqual(campaigns.nextMessage().held, .perPeriod, "the cap holds this process")
        let answer = try RawHTTPClient(port: serve.port).request("GET", "/v1/messages/next")
        XCTAssertEqual(answer.status, 204, "and serve: \(answer.body)")
        XCTAssertEqual(campaigns.ready().count, 12 - distinct.count, "the other campaigns stay queued")
    }

    func testCapsHoldAMessageUntilTheGapAndThePeriodPassAcrossARestartASecondEngineAndAProcess() throws {
        try writeList([campaign("a"), campaign("b"), campaign("c")])
        let clock = FakeClock()
        let caps = "{per_period: 2, period: 1h, min_gap: 10m}"
        var (host, campaigns, events) = try self.host(caps: caps, clock: clock)
        XCTAssertEqual(campaigns.frequencyCaps, FrequencyCaps(perPeriod: 2, periodSeconds: 3600, minGapSeconds: 600))
        try track(events, "a", "b", "c")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "a")
        try campaigns.displayed("a")
        var next = campaigns.nextMessage()
        XCTAssertNil(next.message)
        XCTAssertEqual(next.held, .minGap)
        XCTAssertEqual(campaigns.ready().map(\.id), ["b", "c"], "a capped message stays queued")

        // Another process on the data directory (the CLI, on the real clock) is held by the same gap.
        let cli = try TestSupport.hubhost(["messages", "next", "--json"], manifest: folder + "/plugins.yaml")
        XCTAssertEqual(cli.status, 1, cli.stderr)
        XCTAssertEqual(try TestSupport.json(cli.stdout, as: [String: String].self), ["held": "frequency_caps.min_gap"])

        clock.advance(seconds: 600)
        XCTAssertEqual(campaigns.nextMessage().message?.id, "b", "the gap has passed")
        try campaigns.displayed("b")
        clock.advance(seconds: 20 * 60)
        XCTAssertEqual(campaigns.nextMessage().held, .perPeriod, "two in the last hour")

        host.shutdown()
        (host, campaigns, events) = try self.host(caps: caps, clock: clock)
        next = campaigns.nextMessage()
        XCTAssertNil(next.message)
        XCTAssertEqual(next.held, .perPeriod, "after a restart the stored impressions still count")

        let (_, second, _) = try self.host(caps: caps, clock: clock)
        XCTAssertEqual(second.nextMessage().held, .perPeriod, "a second engine on the data directory agrees")
        clock.advance(seconds: 30 * 60 + 1)  // the first impression is more than an hour old
        XCTAssertEqual(second.nextMessage().message?.id, "c", "the period has passed: the capped message shows")
        try second.displayed("c")
        try track(events, "a")
        XCTAssertEqual(campaigns.nextMessage().held, .perPeriod, "the first engine counts the second one's impression")
        clock.advance(seconds: 40 * 60)  // b's impression leaves the hour; c's is 40 minutes old
        XCTAssertEqual(campaigns.nextMessage().message?.id, "a")
    }

    func testThePerSessionCapEndsWithTheEventEnginesSession() throws {
        try writeList([campaign("a"), campaign("b")])
        let (_, campaigns, events) = try host(caps: "{per_session: 1}", events: "{cache_size: 1000, session_timeout: 60}")
        try track(events, "a", "b")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "a")
        try campaigns.displayed("a")
        XCTAssertEqual(campaigns.nextMessage().held, .perSession)
        try track(events, "tap")
        XCTAssertEqual(campaigns.nextMessage().held, .perSession, "the same session")
        // More than session_timeout after the last event: a new session starts.
        try events.track(Event(type: .namedEvent, name: "tap", timestampMs: Clock.wallMs() + 120_000))
        XCTAssertEqual(campaigns.nextMessage().message?.id, "b")
    }

    func testPriorityComesFirstAndTheCampaignIntervalHoldsOnlyItsCampaign() throws {
        try writeList([campaign("low"), campaign("high", extra: ["priority": 10]), campaign("mid", extra: ["priority": 5])])
        let clock = FakeClock()
        let (_, campaigns, events) = try host(caps: "{campaign_interval: 1d}", clock: clock)
        try track(events, "low", "high", "mid")
        XCTAssertEqual(campaigns.ready().map(\.id), ["high", "mid", "low"], "higher priority first, then the queue's order")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "high")
        try campaigns.displayed("high")
        try track(events, "high")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "mid", "high showed less than a day ago; the others may")
        try campaigns.displayed("mid")
        try campaigns.displayed("low")
        let held = campaigns.nextMessage()
        XCTAssertNil(held.message)
        XCTAssertEqual(held.held, .campaignInterval)
        clock.advance(seconds: 86_400)
        XCTAssertEqual(campaigns.nextMessage().message?.id, "high")
    }

    func testFrequencyCapsAreRangeCheckedInPluginsYAML() throws {
        try writeList([campaign("a")])
        try TestSupport.write(
            manifest(caps: "{per_period: -1, period: 0, min_gap: 2 fortnights, per_sessions: 3}", events: "{}"), to: folder + "/plugins.yaml")
        let refused = try HostManifest.load(path: folder + "/plugins.yaml")
        let keys = Set(refused.diagnostics.map(\.key))
        for key in ["per_period", "period", "min_gap", "per_sessions"] {
            XCTAssertTrue(keys.contains("campaigns.frequency_caps.\(key)"), "\(key) not refused: \(refused.diagnostics)")
        }
        XCTAssertEqual(refused.campaigns.frequencyCaps, FrequencyCaps(), "a refused value keeps the default")

        try TestSupport.write(
            manifest(caps: "{per_session: 3, per_period: 5, period: 1 day, min_gap: 90}", events: "{}"), to: folder + "/plugins.yaml")
        let accepted = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(accepted.diagnostics.map(\.key), [])
        XCTAssertEqual(accepted.campaigns.frequencyCaps, FrequencyCaps(perSession: 3, perPeriod: 5, periodSeconds: 86_400, minGapSeconds: 90))
        let effective = Dictionary(uniqueKeysWithValues: accepted.campaigns.effectiveValues.map { ($0.key, $0) })
        XCTAssertEqual(effective["campaigns.frequency_caps.per_period"]?.value, .number(5))
        XCTAssertNotNil(effective["campaigns.frequency_caps.per_period"]?.line)
        XCTAssertNil(effective["campaigns.frequency_caps.campaign_interval"]?.line, "left at its default")
    }

    // MARK: Pause and later

    func testAPauseHoldsEveryMessageInEveryEngineUntilItEndsOrIsResumed() throws {
        try writeList([campaign("a"), campaign("b")])
        let clock = FakeClock()
        let (_, campaigns, events) = try host(clock: clock)
        let (_, second, _) = try host(clock: clock)
        try track(events, "a", "b")
        try campaigns.pause()
        XCTAssertEqual(campaigns.pauseState, .init(paused: true, untilMs: nil))
        XCTAssertEqual(campaigns.nextMessage().held, .paused)
        XCTAssertEqual(second.nextMessage().held, .paused, "the pause is stored in the data directory")
        XCTAssertEqual(campaigns.ready().map(\.id), ["a", "b"], "paused messages stay queued")
        try second.resume()
        XCTAssertEqual(campaigns.nextMessage().message?.id, "a")

        let until = clock.now() + 60_000
        try campaigns.pause(untilMs: until)
        XCTAssertEqual(second.pauseState, .init(paused: true, untilMs: until))
        XCTAssertEqual(campaigns.nextMessage().held, .paused, "the current message is held too")
        clock.advance(seconds: 61)
        XCTAssertEqual(campaigns.nextMessage().message?.id, "a", "the pause ended by itself; a is still the current message")
        XCTAssertEqual(campaigns.pauseState, .init())
        XCTAssertThrowsError(try campaigns.pause(untilMs: clock.now())) { XCTAssertTrue($0 is CampaignEngine.Refused, "\($0)") }
        XCTAssertThrowsError(try campaigns.pause(untilMs: Int64.max)) { XCTAssertTrue($0 is CampaignEngine.Refused, "\($0)") }
    }

    func testLaterPutsTheMessageBackAndChecksItAgainWhenItComesUp() throws {
        let clock = FakeClock()
        let end = clock.now() + 3_600_000
        try writeList([
            campaign("a"), campaign("b"),
            campaign("ends", extra: ["messagePayload": ["title": "Ends", "messageSettings": ["displaySettings": ["endTimeMillis": end]]]]),
            campaign("start", appStart: true)
        ])
        var (host, campaigns, events) = try self.host(clock: clock)
        try track(events, "a", "b")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "a")
        try campaigns.later("a")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "b", "a went to the back of the queue")
        try campaigns.later("b")
        XCTAssertEqual(campaigns.ready().map(\.id), ["a", "b"])
        XCTAssertEqual(campaigns.nextMessage().message?.id, "a")
        try campaigns.displayed("a")
        XCTAssertThrowsError(try campaigns.later("a"), "neither current nor queued") { XCTAssertTrue($0 is CampaignEngine.NotAllowed, "\($0)") }
        XCTAssertThrowsError(try campaigns.later("nope")) { XCTAssertTrue($0 is CampaignEngine.NotFound, "\($0)") }
        try campaigns.displayed("b")

        // The end time is checked again.
        try track(events, "ends")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "ends")
        try campaigns.later("ends")
        clock.advance(seconds: 3601)
        XCTAssertNil(campaigns.nextMessage().message, "it ended while it waited")

        // So are its triggers: app start belongs to a launch.
        try events.track(Event(type: .appStart))
        XCTAssertEqual(campaigns.nextMessage().message?.id, "start")
        try campaigns.later("start")
        host.shutdown()
        (host, campaigns, events) = try self.host(clock: clock)
        XCTAssertEqual(campaigns.ready().map(\.id), ["start"], "still queued")
        XCTAssertNil(campaigns.nextMessage().message, "but not shown before this launch's app start")
        try events.track(Event(type: .appStart))
        XCTAssertEqual(campaigns.nextMessage().message?.id, "start")
    }

    // MARK: Rollout and holdout

    func testBucketsAreStableAndCloseToThePercentOverTenThousandUsers() throws {
        // SHA-256, not Swift's per-process Hasher: the same numbers on every machine, every run.
        XCTAssertEqual(CampaignEngine.bucket("rollout", campaign: "summer-sale", user: "u1|t1"), 27.773386295964187, accuracy: 1e-9)
        XCTAssertEqual(CampaignEngine.bucket("holdout", campaign: "summer-sale", user: "u1|t1"), 48.41846271979268, accuracy: 1e-9)
        let parsed = try CampaignParser.parse(
            JSONSerialization.data(withJSONObject: ["data": [campaign("exp", extra: ["rollout": 30, "holdout": 20.5])]]))
        let experiment = try XCTUnwrap(parsed.campaigns.first)
        XCTAssertEqual(experiment.rollout, 30)
        XCTAssertEqual(experiment.holdout, 20.5)
        var counts: [CampaignEngine.Group: Int] = [:]
        for n in 0..<10_000 {
            let user = CampaignEngine.User(userID: "user-\(n)", idTrackingIdentifier: "t")
            let group = CampaignEngine.group(of: experiment, user: user)
            XCTAssertEqual(CampaignEngine.group(of: experiment, user: user), group)
            counts[group, default: 0] += 1
        }
        // 70% excluded (sd 46), 30% x 20.5% = 6.15% control (sd 24): five standard deviations.
        XCTAssertEqual(Double(counts[.excluded] ?? 0), 7_000, accuracy: 230, "\(counts)")
        XCTAssertEqual(Double(counts[.control] ?? 0), 615, accuracy: 120, "\(counts)")
        XCTAssertEqual(Double(counts[.treatment] ?? 0), 2_385, accuracy: 220, "\(counts)")
    }

    func testOutOfRangeExperimentValuesSkipTheCampaignAndOldCampaignsStayValid() throws {
        let parsed = try CampaignParser.parse(
            JSONSerialization.data(withJSONObject: [
                "data": [
                    campaign("old"), campaign("r", extra: ["rollout": 101]), campaign("h", extra: ["holdout": "10"]),
                    campaign("p", extra: ["priority": 1.5])
                ]
            ]))
        XCTAssertEqual(parsed.campaigns.map(\.id), ["old"])
        XCTAssertEqual(parsed.campaigns.first?.priority, 0)
        XCTAssertNil(parsed.campaigns.first?.rollout)
        XCTAssertEqual(
            parsed.skipped,
            [
                "campaign r: rollout must be a number from 0 to 100; got 101",
                "campaign h: holdout must be a number from 0 to 100; got \"10\" (a string)",
                "campaign p: priority must be an integer from -1000000 to 1000000; got 1.5"
            ])
    }

    func testAHeldOutUserIsTrackedAsExposedAndAShownMessageAsTreatment() throws {
        try writeList([
            campaign("control", max: 2, extra: ["holdout": 100]), campaign("shown", extra: ["rollout": 100, "holdout": 0]),
            campaign("nobody", extra: ["rollout": 0])
        ])
        let (_, campaigns, events) = try host()
        try track(events, "control", "shown", "nobody")
        XCTAssertEqual(campaigns.ready().map(\.id), ["control", "shown"], "outside its rollout a campaign never queues")
        XCTAssertEqual(campaigns.nextMessage().message?.id, "shown", "the held-out campaign is passed over")
        let statuses = Dictionary(uniqueKeysWithValues: campaigns.statuses().map { ($0.id, $0) })
        XCTAssertEqual(statuses["control"]?.group, .control)
        XCTAssertEqual(statuses["control"]?.impressionsLeft, 1, "the exposure counts as the impression it replaced")
        XCTAssertEqual(statuses["control"]?.ready, false)
        XCTAssertEqual(statuses["shown"]?.group, .treatment)
        XCTAssertEqual(statuses["nobody"]?.group, .excluded)
        try campaigns.displayed("shown")

        let stored = try events.store.list(limit: 100).map(\.event)
        let exposures = stored.filter { $0.name == CampaignEngine.holdoutEventName }
        XCTAssertEqual(exposures.count, 1, "\(stored.map(\.name))")
        XCTAssertEqual(exposures.first?[attribute: "Campaign Id"], .string("control"))
        XCTAssertEqual(exposures.first?[attribute: "Campaign Group"], .string("control"))
        let shown = stored.filter { $0.name == CampaignEngine.shownEventName }
        XCTAssertEqual(shown.count, 1, "\(stored.map(\.name))")
        XCTAssertEqual(shown.first?[attribute: "Campaign Id"], .string("shown"))
        XCTAssertEqual(shown.first?[attribute: "Campaign Group"], .string("treatment"))

        // Triggered again, the held-out user is exposed again (as often as it would have shown).
        try track(events, "control")
        XCTAssertNil(campaigns.nextMessage().message)
        XCTAssertEqual(try events.store.list(limit: 100).filter { $0.event.name == CampaignEngine.holdoutEventName }.count, 2)
    }

    // MARK: HTTP

    func testTheRoutesNameTheHoldAndPauseResumeAndPutMessagesBack() async throws {
        try writeList([campaign("a"), campaign("b", extra: ["priority": -1])])
        let yaml = manifest(caps: "{min_gap: 1h}", events: "{cache_size: 1000}")
        try await InProcessAPI.test(manifest: yaml, in: folder) { client, _ in
            for name in ["a", "b"] {
                let tracked = try await client.send(.post, "/v1/events", json: #"{"name":"\#(name)"}"#)
                XCTAssertEqual(tracked.status, .created, tracked.text)
            }
            var answer = try await client.send(.get, "/v1/messages/next")
            XCTAssertEqual((answer.json as? [String: Any])?["id"] as? String, "a", answer.text)
            XCTAssertEqual((answer.json as? [String: Any])?["priority"] as? Int, 0, answer.text)
            answer = try await client.send(.post, "/v1/messages/a/later")
            XCTAssertEqual(answer.status, .ok, answer.text)
            answer = try await client.send(.get, "/v1/messages/next")
            XCTAssertEqual((answer.json as? [String: Any])?["id"] as? String, "a", "b has the lower priority: \(answer.text)")

            answer = try await client.send(.post, "/v1/messages/pause", json: #"{"for": "5m"}"#)
            XCTAssertEqual(answer.status, .ok, answer.text)
            XCTAssertEqual((answer.json as? [String: Any])?["paused"] as? Bool, true, answer.text)
            XCTAssertNotNil((answer.json as? [String: Any])?["untilMs"] as? Int64, answer.text)
            answer = try await client.send(.get, "/v1/messages/next")
            XCTAssertEqual(answer.status, .noContent)
            XCTAssertEqual(answer.headers[HTTPField.Name("Hubhost-Hold-Reason")!], "paused")
            for refused in [#"{"for": "0s"}"#, #"{"for": "400 days"}"#, #"{"for": "soon"}"#, #"{"until": 5}"#, #"{"until": 5, "for": "1m"}"#] {
                answer = try await client.send(.post, "/v1/messages/pause", json: refused)
                XCTAssertEqual(answer.status, .badRequest, "\(refused): \(answer.text)")
                XCTAssertNotNil(answer.errorCode, answer.text)
            }
            answer = try await client.send(.post, "/v1/messages/resume")
            XCTAssertEqual((answer.json as? [String: Any])?["paused"] as? Bool, false, answer.text)
            answer = try await client.send(.get, "/v1/messages/pause")
            XCTAssertEqual((answer.json as? [String: Any])?["paused"] as? Bool, false, answer.text)

            answer = try await client.send(.post, "/v1/messages/a/impression")
            XCTAssertEqual(answer.status, .ok, answer.text)
            answer = try await client.send(.get, "/v1/messages/next")
            XCTAssertEqual(answer.status, .noContent)
            XCTAssertEqual(answer.headers[HTTPField.Name("Hubhost-Hold-Reason")!], "frequency_caps.min_gap")
            answer = try await client.send(.post, "/v1/messages/nope/later")
            XCTAssertEqual(answer.status, .notFound, answer.text)
            answer = try await client.send(.post, "/v1/messages/a/later")
            XCTAssertEqual(answer.status, .conflict, "a was shown: neither current nor queued: \(answer.text)")
        }
    }
}
