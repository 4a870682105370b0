import Foundation
import HTTPTypes
import HubHostABI
import HummingbirdTesting
import Logging
import XCTest

@testable import HubHostKit

/// A plugin that keeps failing costs only its own work, and only for a while: beside a healthy
/// augmentation, a looping one (a .wasm out of fuel, an in-process one past augmentation_timeout)
/// drops only its own edits, is ejected after `eject_after` failed calls in a row, is not called
/// while ejected, and gets one probe call once `eject_for` is over.
final class PluginEjectionTests: FolderTestCase {
    /// The editing fixture as an in-process library with its plugin.yaml: the healthy plugin (it adds "Seen Name").
    private func healthyPlugin() throws -> String { try TestSupport.editingFixture(in: folder + "/healthy") }

    /// The faulty fixture built as .wasm with FAULT_HANG (a loop: each call runs out of its fuel).
    private func loopingWasmPlugin() throws -> String {
        let dir = folder + "/looping"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let result = try TestSupport.run(
            "\(TestSupport.repository)/scripts/build-wasm-plugin",
            [dir + "/looping.wasm", "\(TestSupport.repository)/Tests/Fixtures/faulty_plugins.c", "--", "-DFAULT_HANG"])
        XCTAssertEqual(result.status, 0, result.stderr)
        return try TestSupport.writeFaultyManifest(library: "looping.wasm", in: dir)
    }

    private func registry(_ yaml: String) throws -> PluginRegistry {
        try TestSupport.write(yaml, to: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(manifest.diagnostics, [], "\(manifest.diagnostics)")
        let registry = PluginRegistry(manifest: manifest, pipeline: LogPipeline())
        registry.loadAll()
        addTeardownBlock { registry.shutdown() }
        return registry
    }

    private func event(_ n: Int) -> Event {
        var event = Event(type: .namedEvent, name: "E\(n)", timestampMs: 1_402_358_400_000)
        event.set("Level", .int(1))
        return event
    }

    func testALoopingWasmAugmentationCostsOnlyItsOwnEditsIsEjectedAndProbedLater() throws {
        let registry = try registry(
            """
            data_dir: data
            plugins:
              - id: healthy
                use: \(try healthyPlugin())
              - id: looping
                use: \(try loopingWasmPlugin())
                wasm_fuel: 2000000
                eject_after: 3
                eject_for: 1s
                eject_max: 4s
            """)
        let handles = registry.plugins(of: .augmentation)
        XCTAssertEqual(handles.map(\.instanceID), ["healthy", "looping"])
        let looping = try XCTUnwrap(handles.last)
        XCTAssertEqual(looping.ejection.consecutiveFailures, 0)
        let timeline = AugmentationTimeline(plugins: handles.map(AugmentationPlugin.init), timeoutSeconds: 60, logger: Logger(label: "test"))

        // Three failed calls: each event keeps the healthy plugin's edits, without the looping one's.
        for n in 1...3 {
            XCTAssertNil(looping.ejection.ejected, "not ejected before its third failure (event \(n))")
            let done = timeline.run(event(n))
            XCTAssertEqual(done.status, .notPosted, "a failing plugin does not EXPIRE the event")
            XCTAssertEqual(done[attribute: "Seen Name"], .string("E\(n)"), "the healthy plugin's edit is kept")
            XCTAssertEqual(done[attribute: "Level"], .int(2))
            XCTAssertNil(done[attribute: "Fixture"])
            XCTAssertEqual(looping.ejection.consecutiveFailures, n)
        }
        let ejected = try XCTUnwrap(looping.ejection.ejected, "ejected after eject_after failures")
        XCTAssertEqual(ejected.count, 1)
        XCTAssertTrue(ejected.reason.contains("HH_ERR_TIMEOUT"), ejected.reason)
        XCTAssertGreaterThan(ejected.until, Date())

        // Ejected: not called (its failure count does not move), the event keeps the healthy edits.
        let batch = timeline.run(batch: (4...9).map(event))
        XCTAssertEqual(batch.map(\.status), Array(repeating: .notPosted, count: 6))
        XCTAssertEqual(batch.map { $0[attribute: "Seen Name"] }, (4...9).map { .string("E\($0)") })
        XCTAssertEqual(looping.ejection.consecutiveFailures, 3, "an ejected plugin is not called")
        XCTAssertEqual(timeline.run(event(10))[attribute: "Seen Name"], .string("E10"))
        XCTAssertEqual(looping.ejection.consecutiveFailures, 3)

        // Every surface names it.
        let shown = try XCTUnwrap(PluginInstanceList(registry, manifest: "").instances.first { $0.id == "looping" })
        XCTAssertEqual(shown.state, "ejected")
        XCTAssertNotNil(shown.ejectedUntil)
        XCTAssertTrue(shown.reason?.contains("HH_ERR_TIMEOUT") == true, "\(String(describing: shown.reason))")
        XCTAssertEqual(shown.plugins.first { $0.kind == "augmentation" }?.ejected, true)
        XCTAssertEqual(PluginInstanceList(registry, manifest: "").instances.first { $0.id == "healthy" }?.state, "loaded")
        XCTAssertEqual(registry.ejectedPlugins.map(\.instance), ["looping"])

        // Once eject_for is over, one probe call is made; it fails, so it is ejected again, for longer.
        XCTAssertTrue(TestSupport.waitUntil(timeout: 10) { Date() >= ejected.until }, "the ejection ends")
        let probed = timeline.run(event(11))
        XCTAssertEqual(probed[attribute: "Seen Name"], .string("E11"))
        XCTAssertEqual(looping.ejection.consecutiveFailures, 4, "one probe call")
        let again = try XCTUnwrap(looping.ejection.ejected, "a failed probe ejects it again")
        XCTAssertEqual(again.count, 2)
        XCTAssertGreaterThan(again.until.timeIntervalSince(Date()), 1.2, "the second ejection lasts twice as long (2 s)")
        _ = timeline.run(event(12))
        XCTAssertEqual(looping.ejection.consecutiveFailures, 4, "ejected again: not called")
    }

    /// An in-process augmentation that answers after augmentation_timeout: the first events are
    /// EXPIRED but keep the healthy plugin's edits; after eject_after late answers it is ejected,
    /// and events are NOT_POSTED with the healthy edits and no wait; a probe that answers in
    /// time un-ejects it.
    func testAnInProcessAugmentationPastItsTimeoutIsEjectedAndAProbeInTimeBringsItBack() throws {
        setenv("FAULTY_SLOW_MS", "400", 1)
        defer { unsetenv("FAULTY_SLOW_MS") }
        let registry = try registry(
            """
            data_dir: data
            plugins:
              - id: healthy
                use: \(try healthyPlugin())
              - id: slow
                use: \(try TestSupport.faultyFixture("SLOW", in: folder))
                eject_after: 2
                eject_for: 1s
            """)
        let handles = registry.plugins(of: .augmentation)
        let slow = try XCTUnwrap(handles.first { $0.instanceID == "slow" })
        let plugins = handles.map(AugmentationPlugin.init)
        let strict = AugmentationTimeline(plugins: plugins, timeoutSeconds: 0.1, logger: Logger(label: "test"))
        for n in 1...2 {
            let done = strict.run(event(n))
            XCTAssertEqual(done.status, .expired, "past augmentation_timeout the event is EXPIRED")
            XCTAssertEqual(done[attribute: "Seen Name"], .string("E\(n)"), "with the edits of the plugins that answered in time")
            XCTAssertNil(done[attribute: "Fixture"])
            // The late answer comes back (and counts as a failure) before the next event.
            XCTAssertTrue(TestSupport.waitUntil(timeout: 10) { slow.ejection.consecutiveFailures == n }, "\(slow.ejection.consecutiveFailures)")
        }
        let ejected = try XCTUnwrap(slow.ejection.ejected)
        XCTAssertTrue(ejected.reason.contains("augmentation_timeout"), ejected.reason)
        let skipped = strict.run(event(3))
        XCTAssertEqual(skipped.status, .notPosted, "the ejected plugin is not waited for")
        XCTAssertEqual(skipped[attribute: "Seen Name"], .string("E3"))
        XCTAssertEqual(slow.calls.callsInFlight, 0, "not called")

        // The probe, with a timeout it meets: answered in time, so called again from then on.
        XCTAssertTrue(TestSupport.waitUntil(timeout: 10) { Date() >= ejected.until })
        let patient = AugmentationTimeline(plugins: plugins, timeoutSeconds: 30, logger: Logger(label: "test"))
        let probed = patient.run(event(4))
        XCTAssertEqual(probed.status, .notPosted)
        XCTAssertEqual(probed[attribute: "Fixture"], .string("augmented"), "the probe's edits are kept")
        XCTAssertNil(slow.ejection.ejected, "a probe that succeeds un-ejects")
        XCTAssertEqual(slow.ejection.consecutiveFailures, 0)
    }

    /// Under the HTTP API: health is degraded naming it, GET /v1/plugins says ejected with until
    /// when, and /metrics counts the ejection with its HELP text.
    func testAnEjectionIsShownInHealthThePluginListAndMetrics() async throws {
        let yaml = """
            data_dir: data
            server: {port: 0}
            events: {cache_size: 1000}
            plugins:
              - id: healthy
                use: \(try healthyPlugin())
              - id: ejected-under-http
                use: \(try loopingWasmPlugin())
                wasm_fuel: 2000000
                eject_after: 1
                eject_for: 10m
            """
        try await InProcessAPI.test(manifest: yaml, in: folder) { client, _ in
            let posted = try await client.send(.post, "/v1/events", json: #"{"name":"one"}"#)
            XCTAssertEqual(posted.status.code, 201, posted.text)
            let health = try await client.send(.get, "/v1/health")
            let body = try XCTUnwrap(health.json as? [String: Any], health.text)
            XCTAssertEqual(body["status"] as? String, "degraded")
            let ejected = try XCTUnwrap(body["ejected"] as? [[String: Any]], health.text)
            XCTAssertEqual(ejected.first?["instance"] as? String, "ejected-under-http")
            XCTAssertEqual(ejected.first?["kind"] as? String, "augmentation")
            XCTAssertNotNil(ejected.first?["until"] as? String)
            let plugins = try await client.send(.get, "/v1/plugins")
            let instances = try XCTUnwrap((plugins.json as? [String: Any])?["instances"] as? [[String: Any]], plugins.text)
            let entry = try XCTUnwrap(instances.first { $0["id"] as? String == "ejected-under-http" })
            XCTAssertEqual(entry["state"] as? String, "ejected")
            XCTAssertNotNil(entry["ejectedUntil"] as? String)
            XCTAssertEqual(instances.first { $0["id"] as? String == "healthy" }?["state"] as? String, "loaded")
            let metrics = try await client.send(.get, "/metrics").text
            XCTAssertTrue(metrics.contains(#"hubhost_plugin_ejections_total{instance="ejected-under-http"} 1"#), metrics)
            XCTAssertTrue(metrics.contains("# HELP hubhost_plugin_ejections_total "), metrics)
        }
    }

    func testTheEjectionKeysAreRangeChecked() throws {
        let plugin = try healthyPlugin()
        func problems(_ keys: String) throws -> [String] {
            try TestSupport.write("data_dir: data\nplugins:\n  - id: a\n    use: \(plugin)\n\(keys)", to: folder + "/plugins.yaml")
            return try HostManifest.load(path: folder + "/plugins.yaml").diagnostics.map(\.message)
        }
        XCTAssertEqual(try problems("    eject_after: 0\n    eject_for: 10s\n    eject_max: 1m\n"), [])
        XCTAssertEqual(try problems("    eject_after: -1\n").count, 1)
        XCTAssertEqual(try problems("    eject_after: 99999999999\n").count, 1)
        XCTAssertEqual(try problems("    eject_for: 0\n").count, 1)
        XCTAssertEqual(try problems("    eject_for: 2 days\n").count, 1)
        XCTAssertEqual(try problems("    eject_for: 1m\n    eject_max: 10s\n").count, 1)
        try TestSupport.write("data_dir: data\nplugins:\n  - id: a\n    use: \(plugin)\n    eject_for: 10m\n", to: folder + "/plugins.yaml")
        let policy = try XCTUnwrap(try HostManifest.load(path: folder + "/plugins.yaml").instances.first?.ejection)
        XCTAssertEqual(policy.afterFailures, 5)
        XCTAssertEqual(policy.forSeconds, 600)
        XCTAssertEqual(policy.maxSeconds, 600, "an eject_for above the default eject_max is the longest too")
    }

    /// The policy alone: the doubling, its cap, one probe at a time, and eject_after 0.
    func testTheEjectionDoublesUpToItsCapLetsOneProbeThroughAndCanBeTurnedOff() {
        let ejection = PluginEjection(instanceID: "x", pluginID: "x")
        var policy = EjectionPolicy()
        policy.afterFailures = 2
        policy.forSeconds = 0.05
        policy.maxSeconds = 0.1
        ejection.configure(policy, logger: nil)
        XCTAssertTrue(ejection.admit())
        ejection.failed("one")
        XCTAssertNil(ejection.ejected)
        ejection.failed("two")
        XCTAssertEqual(ejection.ejected?.reason, "two")
        XCTAssertFalse(ejection.admit())
        usleep(80_000)
        XCTAssertTrue(ejection.admit(), "the probe")
        XCTAssertFalse(ejection.admit(), "one probe at a time")
        ejection.failed("three")
        let second = try? XCTUnwrap(ejection.ejected)
        XCTAssertEqual(second?.count, 2)
        XCTAssertLessThanOrEqual(second.map { $0.until.timeIntervalSinceNow } ?? 1, 0.1 + 0.01, "capped at eject_max")
        usleep(120_000)
        XCTAssertTrue(ejection.admit())
        ejection.succeeded()
        XCTAssertNil(ejection.ejected)
        XCTAssertTrue(ejection.admit())

        // A call refused during a worker's restart backoff never reached the plugin: it neither
        // counts nor ends the run, and a probe refused so leaves the probing to the next call.
        let restarting = WorkerFailure.restarting("hung past its 200 ms call deadline (killed)").description
        XCTAssertEqual(PluginEjection.verdict(status: HH_ERR_UNAVAILABLE, message: restarting), .notCalled)
        XCTAssertEqual(
            PluginEjection.verdict(status: HH_ERR_UNAVAILABLE, message: WorkerFailure.crashed("exited").description),
            .failed("HH_ERR_UNAVAILABLE: exited"))
        XCTAssertEqual(PluginEjection.verdict(status: HH_ERR_NOT_FOUND, message: "no such thing"), .answered)
        let crashing = PluginEjection(instanceID: "z", pluginID: "z")
        crashing.configure(policy, logger: nil)
        crashing.failed("crashed")
        for _ in 0..<10 { crashing.record(.notCalled) }
        XCTAssertEqual(crashing.consecutiveFailures, 1)
        XCTAssertNil(crashing.ejected, "one crash, then calls refused while its worker restarts: one failure")
        crashing.failed("crashed again")
        XCTAssertNotNil(crashing.ejected)
        usleep(120_000)
        XCTAssertTrue(crashing.admit(), "the probe")
        crashing.record(.notCalled)
        XCTAssertNotNil(crashing.ejected, "a refused probe decides nothing")
        XCTAssertTrue(crashing.admit(), "the next call is the probe")

        let never = PluginEjection(instanceID: "y", pluginID: "y")
        policy.afterFailures = 0
        never.configure(policy, logger: nil)
        for _ in 0..<50 { never.failed("again") }
        XCTAssertNil(never.ejected)
        XCTAssertTrue(never.admit())
    }

    /// Ejection is not only for augmentations: a location plugin that times out, in process and
    /// in a worker, is ejected after `eject_after` timeouts and then answers HH_ERR_UNAVAILABLE at
    /// once, naming the ejection, until its probe; a handle made outside plugins.yaml (the
    /// plugin's side of a worker, `plugins test`) never ejects.
    func testARequestPathPluginThatTimesOutIsEjectedInProcessAndInAWorker() throws {
        _ = try TestSupport.slowKindsFixture(in: folder + "/slow")
        let registry = try registry(
            """
            data_dir: data
            plugins:
              - id: here
                use: slow/plugin.yaml
                config: {delay_ms: 300}
                eject_after: 2
                eject_for: 1s
              - id: worker
                use: slow/plugin.yaml
                isolation: process
                call_timeout: 0.2s
                config: {delay_ms: 2000}
                eject_after: 2
                eject_for: 1s
            """)
        for instance in ["here", "worker"] {
            let handle = try XCTUnwrap(registry.plugins(of: .location).first { $0.instanceID == instance })
            let location = LocationPlugin(handle)
            var n = 0
            for _ in 0..<200 where n < 2 {
                // In process the call overruns a 0.1 s deadline and is stuck until it returns at 0.3 s.
                XCTAssertTrue(TestSupport.waitUntil(timeout: 5) { !handle.calls.isStuck }, "\(instance): the last call returned")
                guard case .failed(let status, let message) = location.current(deadlineSeconds: 0.1) else {
                    return XCTFail("\(instance): call \(n + 1) should time out")
                }
                // A call refused in the hung worker's restart backoff never reached the plugin: it
                // does not count (the crash before it did, once).
                if message.hasPrefix("worker restarting after: ") {
                    XCTAssertEqual(handle.ejection.consecutiveFailures, n, "\(instance): a refused call is not a failure")
                    XCTAssertNil(handle.ejection.ejected, "\(instance): not ejected by calls refused during one restart")
                    usleep(20_000)
                    continue
                }
                n += 1
                // A hung worker is killed and restarted: its call fails as unavailable.
                XCTAssertEqual(status, instance == "here" ? HH_ERR_TIMEOUT : HH_ERR_UNAVAILABLE, "\(instance) call \(n)")
                XCTAssertEqual(handle.ejection.consecutiveFailures, n, "\(instance) call \(n)")
            }
            let ejected = try XCTUnwrap(handle.ejection.ejected, "\(instance): ejected after two timeouts")
            XCTAssertTrue(ejected.reason.contains(instance == "here" ? "HH_ERR_TIMEOUT" : "hung past its 200 ms call deadline"), ejected.reason)
            XCTAssertTrue(TestSupport.waitUntil(timeout: 5) { !handle.calls.isStuck })
            let started = Date()
            guard case .failed(let status, let message) = location.current(deadlineSeconds: 0.1) else {
                return XCTFail("\(instance): an ejected plugin answers a failure")
            }
            XCTAssertLessThan(Date().timeIntervalSince(started), 0.05, "\(instance): skipped at once, without its deadline")
            XCTAssertEqual(status, HH_ERR_UNAVAILABLE)
            XCTAssertTrue(message.contains("ejected until"), message)
            XCTAssertEqual(handle.ejection.consecutiveFailures, 2, "\(instance): not called while ejected")
            XCTAssertEqual(PluginInstanceList(registry, manifest: "").instances.first { $0.id == instance }?.state, "ejected")
        }
        XCTAssertEqual(registry.ejectedPlugins.map(\.instance), ["here", "worker"])

        // The probe, once eject_for is over: given time, the in-process one answers, and is back.
        let here = try XCTUnwrap(registry.plugins(of: .location).first { $0.instanceID == "here" })
        XCTAssertTrue(TestSupport.waitUntil(timeout: 5) { here.ejection.ejected.map { Date() >= $0.until } ?? true })
        guard case .location = LocationPlugin(here).current(deadlineSeconds: 2) else { return XCTFail("the probe answers") }
        XCTAssertNil(here.ejection.ejected, "a probe that answers brings it back")
        XCTAssertEqual(registry.ejectedPlugins.map(\.instance), ["worker"])

        // Outside plugins.yaml nothing ejects: ten failures in a row, each one called.
        let bare = LocationPlugin(PluginHandle(here.instance!))
        for _ in 0..<3 {
            XCTAssertTrue(TestSupport.waitUntil(timeout: 5) { !bare.handle.calls.isStuck })
            _ = bare.current(deadlineSeconds: 0.01)
        }
        XCTAssertNil(bare.handle.ejection.ejected)
        XCTAssertEqual(bare.handle.ejection.consecutiveFailures, 3)
    }

    /// A .wasm trigger operator that loops (each call spends its fuel) is ejected after
    /// `eject_after` calls, and then answers false with HH_ERR_UNAVAILABLE at once.
    func testALoopingWasmOperatorIsEjected() throws {
        let registry = try registry(
            """
            data_dir: data
            plugins:
              - id: looping
                use: \(try loopingWasmPlugin())
                wasm_fuel: 2000000
                eject_after: 2
            """)
        let handle = try XCTUnwrap(registry.plugins(of: .triggerOperator).first)
        let op = TriggerOperatorPlugin(handle)
        for n in 1...2 {
            let answer = op.compare(event: .int(1), trigger: .int(1))
            XCTAssertEqual(answer.status, HH_ERR_TIMEOUT, "call \(n): \(answer.reason)")
        }
        XCTAssertNotNil(handle.ejection.ejected)
        let started = Date()
        let skipped = op.compare(event: .int(1), trigger: .int(1))
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.05, "no fuel spent")
        XCTAssertFalse(skipped.result)
        XCTAssertEqual(skipped.status, HH_ERR_UNAVAILABLE)
        XCTAssertTrue(skipped.reason.contains("ejected until"), skipped.reason)
        XCTAssertEqual(handle.ejection.consecutiveFailures, 2)
    }
}
