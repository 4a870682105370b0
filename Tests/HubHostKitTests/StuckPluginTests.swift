import Foundation
import HubHostABI
import XCTest

@testable import HubHostKit

/// A plugin that never returns from a call, in process (it cannot be stopped): it must not take
/// the server's answers with it. Its instance is reported stuck and skipped until the call returns.
final class StuckPluginTests: XCTestCase {
    func testATrackerIsStuckOnlyWhileACallIsPastItsDeadline() {
        let calls = PluginCallTracker()
        XCTAssertFalse(calls.isStuck)
        let slow = calls.begin(deadlineSeconds: 0.05)
        let quick = calls.begin(deadlineSeconds: 60)
        XCTAssertFalse(calls.isStuck, "within its deadline a call is not overdue")
        usleep(120_000)
        XCTAssertTrue(calls.isStuck)
        XCTAssertEqual(calls.callsInFlight, 2)
        calls.end(slow)
        XCTAssertFalse(calls.isStuck, "healthy again once the overdue call returned")
        calls.end(quick)
        XCTAssertEqual(calls.callsInFlight, 0)
        _ = calls.begin(deadlineSeconds: -5)  // an out-of-range deadline counts as none left
        XCTAssertTrue(calls.isStuck)
    }

    /// A tracker keeps its instance's call metrics rather than making them per call, and makes
    /// them again once a metrics backend is bootstrapped after them (as `serve` bootstraps
    /// Prometheus after the host made its plugins' trackers): kept ones would count into the old one.
    func testATrackerRemakesItsMetricsWhenABackendIsBootstrapped() {
        let calls = PluginCallTracker(instance: "tracker-metrics-\(UUID().uuidString)", kind: "augmentation")
        XCTAssertNil(calls.metricsGeneration, "none made before the first call")
        calls.end(calls.begin(deadlineSeconds: 60))
        let before = RuntimeMetrics.generation
        XCTAssertEqual(calls.metricsGeneration, before)
        RuntimeMetrics.backendChanged()
        XCTAssertEqual(calls.metricsGeneration, before, "kept until the next call")
        calls.end(calls.begin(deadlineSeconds: 60))
        XCTAssertEqual(calls.metricsGeneration, RuntimeMetrics.generation)
        XCTAssertNotEqual(calls.metricsGeneration, before)
        XCTAssertNil(PluginCallTracker().metricsGeneration, "a tracker of no instance counts nothing")
    }

    /// A job that never returns (here: until released) never delays another: each waits for no
    /// one, and finished threads beyond the idle limit end.
    func testABlockedPluginCallThreadNeverDelaysTheNext() {
        let release = DispatchSemaphore(value: 0)
        let blockedStarted = DispatchSemaphore(value: 0)
        for _ in 0..<3 {
            PluginCallThreads.run {
                blockedStarted.signal()
                release.wait()
            }
        }
        for _ in 0..<3 { XCTAssertEqual(blockedStarted.wait(timeout: .now() + 5), .success) }
        let quick = DispatchSemaphore(value: 0)
        let start = Date()
        for _ in 0..<20 { PluginCallThreads.run { quick.signal() } }
        for _ in 0..<20 { XCTAssertEqual(quick.wait(timeout: .now() + 5), .success, "a job ran beside the blocked ones") }
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        for _ in 0..<3 { release.signal() }
        let deadline = Date().addingTimeInterval(5)
        while PluginCallThreads.threadCount > PluginCallThreads.idleLimit, Date() < deadline { usleep(10_000) }
        XCTAssertLessThanOrEqual(PluginCallThreads.threadCount, PluginCallThreads.idleLimit, "idle threads beyond the limit end")
    }

    /// A location delegate and a content provider that take too long, in process: the caller gets
    /// a timeout at its deadline, the instance is stuck and later calls answer at once, and what a
    /// provider writes after its deadline reaches nothing.
    func testASlowLocationDelegateAndContentProviderAreGivenUpOnAtTheirDeadline() throws {
        let folder = try TestSupport.temporaryFolder(self)
        _ = try TestSupport.slowKindsFixture(in: folder + "/slow")
        try TestSupport.write(
            """
            data_dir: data
            plugins:
              - id: stuck
                use: slow/plugin.yaml
                config: {delay_ms: -1}
              - id: late
                use: slow/plugin.yaml
                config: {delay_ms: 400}
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }

        var start = Date()
        let first = host.registry.locationService.current(maxAgeMs: 0, timeoutMs: 300)
        XCTAssertEqual(first, .failed(status: HH_ERR_TIMEOUT, message: "no location delegate answered within 300 ms"))
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.25, "it waited out the deadline")
        XCTAssertLessThan(Date().timeIntervalSince(start), 2, "and no longer")
        XCTAssertTrue(host.stuckPlugins.contains { $0.instance == "stuck" && $0.kind == "location" }, "\(host.stuckPlugins)")
        start = Date()
        let second = host.registry.locationService.current(maxAgeMs: 0, timeoutMs: 5000)
        XCTAssertEqual(second, .location(Location(latitude: 1, longitude: 2)), "the next delegate (400 ms) answers")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.5, "the stuck one was skipped at once, not waited for 5 s")

        let providers = host.registry.plugins(of: .contentProvider).map(ContentProviderPlugin.init)
        let late = try XCTUnwrap(providers.first { $0.handle.instanceID == "late" })
        final class Received: @unchecked Sendable {  // Safe to share: every access holds `lock`.
            let lock = NSLock()
            var bytes = 0
        }
        let received = Received()
        start = Date()
        let streamed = late.stream(
            "bundle",
            into: ContentProviderPlugin.Sink(write: { bytes in
                received.lock.withLock { received.bytes += bytes.count }
                return true
            }), deadlineSeconds: 0.1)
        XCTAssertEqual(streamed.status, HH_ERR_TIMEOUT, streamed.message)
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.35, "given up on at the deadline, not after the plugin's 400 ms")
        usleep(700_000)  // the plugin has written "late" by now
        XCTAssertEqual(received.lock.withLock { received.bytes }, 0, "a write after the deadline never reaches the sink")
        XCTAssertEqual(late.fetch("bundle", deadlineSeconds: 2).data, Data("late".utf8), "healthy again once its call returned")
        start = Date()
        let stuck = try XCTUnwrap(providers.first { $0.handle.instanceID == "stuck" })
        XCTAssertEqual(stuck.fetch("bundle", deadlineSeconds: 0.1).status, HH_ERR_TIMEOUT)
        XCTAssertEqual(stuck.fetch("bundle", deadlineSeconds: 5).status, HH_ERR_TIMEOUT, "stuck: answered at once")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)
    }

    /// A create that does not return within create_timeout, at start and in a reload: the
    /// instance is not loaded (its reason says so), the others are, and neither the start nor the
    /// reload waits longer than the deadline.
    func testACreateThatHangsFailsItsInstanceAtCreateTimeout() throws {
        let folder = try TestSupport.temporaryFolder(self)
        _ = try TestSupport.slowKindsFixture(in: folder + "/slow")
        func manifest(_ extra: String) -> String {
            """
            data_dir: data
            plugins:
              - id: hangs
                use: slow/plugin.yaml
                create_timeout: 0.3 sec
                config: {create_delay_ms: -1}
              - id: fine
                use: slow/plugin.yaml
            """ + extra
        }
        try TestSupport.write(manifest(""), to: folder + "/plugins.yaml")
        var start = Date()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        XCTAssertLessThan(Date().timeIntervalSince(start), 3, "the start waited for the deadline only")
        func reason(_ id: String) -> String {
            if case .failed(let error)? = host.registry.entry(id: id)?.state { return error.description }
            return "\(id) did not fail"
        }
        XCTAssertTrue(reason("hangs").contains("create did not return within 0.3 s (create_timeout)"), reason("hangs"))
        XCTAssertNotNil(host.registry.entry(id: "fine")?.plugins.first, "the other instance loaded")

        try TestSupport.write(
            manifest(
                """

                  - id: late
                    use: slow/plugin.yaml
                    create_timeout: 0.2 sec
                    config: {create_delay_ms: 500}
                """), to: folder + "/plugins.yaml")
        start = Date()
        let report = host.reload()
        XCTAssertLessThan(Date().timeIntervalSince(start), 3, "the reload waited for the deadlines only: \(report)")
        // An instance the reload adds must load: the reload is refused, naming it, and nothing changes.
        XCTAssertEqual(report.outcome, .refused, "\(report)")
        XCTAssertTrue(
            report.problems.first?.contains("instance 'late'") == true && report.problems.first?.contains("within 0.2 s") == true, "\(report)")
        XCTAssertNil(host.registry.entry(id: "late"))
    }

    /// `hubhost serve` with an in-process augmentation that loops forever: the first event waits
    /// out augmentation_timeout and is EXPIRED; from then on events are acknowledged at once
    /// (NOT_POSTED, the stuck plugin skipped), and health answers "degraded" naming the instance, quickly,
    /// throughout. Only one thread is left looping.
    func testALoopingInProcessAugmentationLeavesEveryRouteAnswering() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let plugin = try TestSupport.faultyFixture("HANG", in: folder)
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {augmentation_timeout: 1}
            plugins:
              - id: looping
                use: \(plugin)
            """, to: folder + "/plugins.yaml")
        let server = try ServeProcess(manifest: folder + "/plugins.yaml")
        func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
            let start = Date()
            let value = try body()
            return (value, Date().timeIntervalSince(start))
        }
        let (first, firstSeconds) = try timed { try server.call("POST", "/v1/events", #"{"name":"first"}"#) }
        XCTAssertEqual(first.0, 201)
        XCTAssertLessThan(firstSeconds, 5, "the first event waits out augmentation_timeout (1 s), no more")
        for i in 0..<20 {
            let (answer, seconds) = try timed { try server.call("POST", "/v1/events", #"{"name":"later \#(i)"}"#) }
            XCTAssertEqual(answer.0, 201)
            XCTAssertLessThan(seconds, 0.5, "event \(i): the stuck plugin is skipped, not waited for")
            let (health, healthSeconds) = try timed { try server.call("GET", "/v1/health") }
            XCTAssertEqual(health.0, 200)
            XCTAssertLessThan(healthSeconds, 0.5, "health answers at once")
            let body = try XCTUnwrap(health.1 as? [String: Any])
            XCTAssertEqual(body["status"] as? String, "degraded")
            let instances = try XCTUnwrap(body["instances"] as? [[String: Any]])
            XCTAssertEqual(instances.first?["instance"] as? String, "looping")
            XCTAssertEqual(instances.first?["kind"] as? String, "augmentation")
        }
        let (statsStatus, stats) = try server.call("GET", "/v1/events/stats")
        XCTAssertEqual(statsStatus, 200, "\(stats)")
        let counts = try XCTUnwrap(stats as? [String: Any])
        // The 21 posted, and the session-start event the pipeline adds: the first EXPIRED by the
        // timeout, the 20 later ones gone on without the stuck plugin (NOT_POSTED).
        let expired = (counts["EXPIRED"] as? NSNumber)?.intValue ?? 0
        let notPosted = (counts["NOT_POSTED"] as? NSNumber)?.intValue ?? 0
        XCTAssertEqual(expired + notPosted, 22, "\(counts)")
        XCTAssertGreaterThanOrEqual(expired, 1, "\(counts)")
        XCTAssertGreaterThanOrEqual(notPosted, 20, "\(counts)")
        // Other routes answer too.
        XCTAssertEqual(try server.call("GET", "/v1/events?limit=1").0, 200)
        // /metrics and GET /v1/plugins name it too.
        let metrics = try server.http.fetch("GET", server.base + "/metrics", timeoutSeconds: 5).get()
        let text = String(decoding: metrics.body, as: UTF8.self)
        XCTAssertTrue(text.contains(#"hubhost_plugin_stuck{instance="looping",kind="augmentation"} 1"#), text)
        XCTAssertTrue(text.contains("hubhost_plugins_stuck 1"), text)
        let (_, plugins) = try server.call("GET", "/v1/plugins")
        let listed = (plugins as? [String: Any])?["instances"] as? [[String: Any]]
        let looping = try XCTUnwrap(listed?.first { $0["id"] as? String == "looping" }?["plugins"] as? [[String: Any]])
        XCTAssertTrue(looping.contains { $0["kind"] as? String == "augmentation" && $0["stuck"] as? Bool == true }, "\(looping)")
        // One looping thread, not one per event: the process uses about one core.
        let threads =
            try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("Threads:") }.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? 0
        XCTAssertLessThan(threads, 40, "threads do not pile up behind the stuck plugin")
    }
    /// `hubhost serve` with an in-process trigger operator that loops forever, called by a
    /// campaign's trigger: the event that reaches it waits out augmentation_timeout, later events
    /// are acknowledged at once (not evaluated meanwhile), and health reports the campaign
    /// evaluation stuck.
    func testALoopingTriggerOperatorDoesNotHoldTheEventPath() throws {
        let folder = try TestSupport.temporaryFolder(self)
        // Its augmentation loops too (every call of the fixture does): both are reported.
        let plugin = try TestSupport.faultyFixture("HANG", in: folder)
        let campaign: [String: Any] = [
            "campaignData": [
                "campaignId": "stuck", "maxImpressions": 1, "type": 1, "isTest": false,
                "triggers": [
                    [
                        "type": 1, "eventType": 4, "eventName": "level_up",
                        "attributes": [["name": "level", "value": "5", "type": 2, "operator": "FAULTY_EQUALS"]]
                    ]
                ],
                "messagePayload": [
                    "title": "T", "header": "H", "messageBody": "B",
                    "messageSettings": ["displaySettings": ["optOut": true, "delay": 0], "controlSettings": ["buttons": []]]
                ]
            ]
        ]
        try JSONSerialization.data(withJSONObject: ["currentPingMillis": 1, "nextPingMillis": 3_600_000, "data": [campaign]]).write(
            to: URL(fileURLWithPath: folder + "/campaigns.json"))
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {augmentation_timeout: 1}
            campaigns: {file: campaigns.json}
            plugins:
              - id: looping-operator
                use: \(plugin)
            """, to: folder + "/plugins.yaml")
        let server = try ServeProcess(manifest: folder + "/plugins.yaml")
        // The second arrives while the first's evaluation holds the campaigns and is not yet overdue
        // (the augmentation takes the first second): it too is answered, not held by the lock.
        let start = Date()
        let firsts = try TestSupport.concurrently(2) { index in
            if index == 1 { usleep(1_500_000) }
            return try server.call("POST", "/v1/events", #"{"name":"level_up","attributes":{"level":5}}"#).0
        }
        XCTAssertEqual(firsts, [201, 201])
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "augmentation and evaluation each waited for at most augmentation_timeout")
        for i in 0..<10 {
            let began = Date()
            let (status, _) = try server.call("POST", "/v1/events", #"{"name":"level_up","attributes":{"level":\#(i)}}"#)
            XCTAssertEqual(status, 201)
            XCTAssertLessThan(Date().timeIntervalSince(began), 0.5, "event \(i): not held by the stuck evaluation")
        }
        let (healthStatus, health) = try server.call("GET", "/v1/health")
        XCTAssertEqual(healthStatus, 200)
        let body = try XCTUnwrap(health as? [String: Any])
        XCTAssertEqual(body["status"] as? String, "degraded")
        let instances = try XCTUnwrap(body["instances"] as? [[String: Any]])
        let campaigns = try XCTUnwrap(instances.first { $0["instance"] as? String == "campaigns" }, "\(instances)")
        XCTAssertEqual(campaigns["kind"] as? String, "trigger_operator")
    }
}
