import Foundation
import XCTest

@testable import HubHostKit

/// 8 clients post events to serve (in this process, on a loopback port) while one augmentation per
/// runtime misbehaves: a `.wasm` that loops (out of fuel on every call), an in-process one that
/// answers past augmentation_timeout (1.5 s against 1 s), and a worker (`isolation: process`) that
/// crashes once and then works.
/// Beside them a healthy augmentation edits every event. No request fails; every event keeps the
/// healthy edits; the two that keep failing are ejected; the worker recovers and its edits come
/// back; health answers at once throughout; and GET /v1/plugins, `plugins list`, `status` and
/// health agree on every instance's state.
final class PluginFaultCrowdTests: FolderTestCase {
    override func tearDown() {
        unsetenv("FAULTY_CRASH_MARKER")
        unsetenv("FAULTY_SLOW_MS")
    }

    /// faulty_plugins.c built with `defines` into `name`/ with its plugin.yaml; the plugin.yaml's path.
    private func faulty(_ name: String, _ defines: [String], wasm: Bool = false) throws -> String {
        let dir = folder + "/" + name
        let library: String
        if wasm {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let built = try TestSupport.run(
                "\(TestSupport.repository)/scripts/build-wasm-plugin",
                [dir + "/faulty.wasm", "\(TestSupport.repository)/Tests/Fixtures/faulty_plugins.c", "--"] + defines.map { "-D" + $0 })
            XCTAssertEqual(built.status, 0, built.stderr)
            library = "faulty.wasm"
        } else {
            _ = try TestSupport.compileFixture("faulty_plugins.c", defines: defines, into: dir, name: "libfaulty.so")
            library = "libfaulty.so"
        }
        return try TestSupport.writeFaultyManifest(library: library, in: dir)
    }

    func testEightClientsWhileAPluginPerRuntimeLoopsOrCrashesKeepEveryHealthyEditAndEverySurfaceAgrees() async throws {
        let folder = self.folder  // for the closure below, which does not capture the test case
        // serve (in this process) and its worker get these from this process's environment.
        setenv("FAULTY_CRASH_MARKER", folder + "/crashed-once", 1)
        setenv("FAULTY_SLOW_MS", "1500", 1)
        let manifest = folder + "/plugins.yaml"
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: error}
            server: {host: 127.0.0.1, port: 0}
            events: {cache_size: 1000000, augmentation_timeout: 1s}
            plugins:
              - id: healthy
                use: \(try TestSupport.editingFixture(in: folder + "/healthy"))
              - id: looping-wasm
                use: \(try faulty("looping", ["FAULT_HANG"], wasm: true))
                wasm_fuel: 2000000
                eject_after: 3
                eject_for: 10m
              - id: late-in-process
                use: \(try faulty("late", ["FAULT_SLOW"]))
                eject_after: 3
                eject_for: 10m
              - id: crash-once-worker
                use: \(try faulty("crash-once", ["FAULT_CRASH_ONCE", #"FIXTURE_VALUE="worker""#]))
                isolation: process
                environment: [FAULTY_CRASH_MARKER]
                eject_after: 3
                eject_for: 1s
            """, to: manifest)
        let loaded = try HostManifest.load(path: manifest)
        XCTAssertEqual(loaded.diagnostics, [], "\(loaded.diagnostics)")
        try await InProcessAPI.listening(manifestPath: manifest) { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                let (_, before) = try serve.call("GET", "/v1/plugins")
                let loadedStates = ((before as? [String: Any])?["instances"] as? [[String: Any]])?.map {
                    "\($0["id"] ?? ""): \($0["state"] ?? "") \($0["reason"] ?? "")"
                }
                XCTAssertEqual(loadedStates?.filter { !$0.contains(": loaded") }, [], "every instance loads")
                let crowd = EventCrowd(serve: serve, perClient: 150)

                // Health answers at once while the plugins misbehave (it never waits on a plugin). Asked
                // on a connection of its own: the crowd's 8 clients hold this process's HTTP client's 8
                // pooled connections to serve, and a request queued behind them would time the pool.
                var slowestHealthMs = 0.0
                for _ in 0..<20 {
                    let started = Clock.monotonicNs()
                    let (status, _) = try RawHTTPClient(port: serve.port).request("GET", "/v1/health")
                    XCTAssertEqual(status, 200)
                    slowestHealthMs = max(slowestHealthMs, Double(Clock.monotonicNs() - started) / 1e6)
                    usleep(100_000)
                }
                XCTAssertTrue(crowd.finish(), "the clients stopped")
                XCTAssertLessThan(slowestHealthMs, 500, "health never waits on a plugin (debug build, 2 cores, under load)")
                print("slowest GET /v1/health under the faulty crowd: \(Int(slowestHealthMs)) ms")
                XCTAssertEqual(crowd.failures, [], "no request failed")
                let ids = crowd.ids
                XCTAssertGreaterThan(ids.count, 100)

                // Every acknowledged event is stored once with the healthy plugin's edit; the worker's
                // edit is back once it recovered.
                let listed = try TestSupport.hubhost(["events", "list", "--limit", "100000", "--json"], manifest: manifest, in: folder)
                let stored = Dictionary(grouping: try TestSupport.json(listed.stdout, as: [[String: Any]].self), by: { $0["id"] as? String ?? "" })
                var fromWorker = 0
                for id in ids {
                    XCTAssertEqual(stored[id]?.count, 1, "\(id) stored once")
                    let event = stored[id]?.first
                    let attributes = event?["attributes"] as? [String: Any]
                    XCTAssertEqual(
                        attributes?["Seen Name"] as? String, event?["name"] as? String, "\(id) (\(event?["status"] ?? "")) keeps the healthy edit")
                    if attributes?["Fixture"] as? String == "worker" { fromWorker += 1 }
                }
                XCTAssertGreaterThan(fromWorker, 0, "the worker recovered after its crash and augmented events again")

                // The two that kept failing were ejected; the worker crashed once and was restarted.
                let metrics = PrometheusText.samples(
                    String(decoding: try serve.http.fetch("GET", serve.base + "/metrics", timeoutSeconds: 10).get().body, as: UTF8.self))
                for id in ["looping-wasm", "late-in-process"] {
                    XCTAssertGreaterThanOrEqual(metrics[PrometheusText.key("hubhost_plugin_ejections_total", ["instance": id])] ?? 0, 1, id)
                }
                XCTAssertGreaterThanOrEqual(metrics[PrometheusText.key("hubhost_worker_restarts_total", ["instance": "crash-once-worker"])] ?? 0, 1)
                XCTAssertGreaterThanOrEqual(
                    metrics[PrometheusText.key("hubhost_plugin_call_errors_total", ["instance": "crash-once-worker", "kind": "crash"])] ?? 0, 1)
                // What each runtime holds and spends: the worker's resident memory, the guest's memory and fuel.
                XCTAssertGreaterThan(
                    metrics[PrometheusText.key("hubhost_worker_resident_memory_bytes", ["instance": "crash-once-worker"])] ?? 0, 1_048_576)
                XCTAssertGreaterThan(metrics[PrometheusText.key("hubhost_wasm_memory_bytes", ["instance": "looping-wasm"])] ?? 0, 0)
                XCTAssertGreaterThanOrEqual(
                    metrics[PrometheusText.key("hubhost_wasm_fuel_consumed_total", ["instance": "looping-wasm"])] ?? 0, 1_000_000,
                    "each looping call used most of its 2,000,000 fuel")

                // One truth: the serve's list, plugins list, status and health say the same of each instance.
                let (_, served) = try serve.call("GET", "/v1/plugins")
                let instances = try XCTUnwrap((served as? [String: Any])?["instances"] as? [[String: Any]])
                let states = Dictionary(uniqueKeysWithValues: instances.map { ($0["id"] as? String ?? "", $0["state"] as? String ?? "") })
                XCTAssertEqual(states["healthy"], "loaded")
                XCTAssertEqual(states["looping-wasm"], "ejected")
                XCTAssertEqual(states["late-in-process"], "ejected")
                XCTAssertEqual(states["crash-once-worker"], "loaded")
                let list = try TestSupport.hubhost(["plugins", "list", "--url", serve.base, "--json"], manifest: manifest, in: folder)
                let rows = try TestSupport.json(list.stdout, as: [[String: Any]].self)
                XCTAssertEqual(Dictionary(uniqueKeysWithValues: rows.map { ($0["id"] as? String ?? "", $0["state"] as? String ?? "") }), states)
                let status = try TestSupport.hubhost(["status", "--url", serve.base, "--json"], manifest: manifest, in: folder)
                let report = try TestSupport.json(status.stdout, as: [String: Any].self)
                let statusRows = try XCTUnwrap(report["plugins"] as? [[String: Any]], status.stdout)
                XCTAssertEqual(Dictionary(uniqueKeysWithValues: statusRows.map { ($0["id"] as? String ?? "", $0["state"] as? String ?? "") }), states)
                let (_, health) = try serve.call("GET", "/v1/health")
                let body = try XCTUnwrap(health as? [String: Any])
                XCTAssertEqual(body["status"] as? String, "degraded")
                let ejected = Set(((body["ejected"] as? [[String: Any]]) ?? []).compactMap { $0["instance"] as? String })
                XCTAssertEqual(ejected, ["looping-wasm", "late-in-process"])
            }
        }
    }
}
