import Foundation
import HubHostABI
import HubHostTools
import XCTest

@testable import HubHostKit

/// WebAssembly event sinks and the host HTTP service a guest reaches: one C source built as a `.so`
/// and as a `.wasm` answers alike, posts alike under its instance's `http_allow`, and a `.wasm` sink
/// delivers tracked events through the event engine.
final class WasmSinkTests: FolderTestCase {
    /// Builds Tests/Fixtures/`source` both ways into `folder`/`id`/ with one plugin.yaml per build
    /// (`config` its schema lines); returns the two plugin.yaml paths, the `.so` first.
    private func bothBuilds(_ source: String, id: String, pluginID: String, config: String) throws -> (native: String, wasm: String) {
        func manifest(_ dir: String, library: String) throws -> String {
            try TestSupport.write(
                """
                abi: "1.1"
                id: \(id)
                name: \(id)
                version: 1.0.0
                library: \(library)
                exports:
                  - {id: \(pluginID), kind: event_sink}
                config:
                \(config)
                """, to: dir + "/plugin.yaml")
            return dir + "/plugin.yaml"
        }
        let nativeDir = "\(folder)/\(id)-so"
        _ = try TestSupport.compileFixture(source, into: nativeDir, name: "lib\(id).so")
        let wasmDir = "\(folder)/\(id)-wasm"
        try FileManager.default.createDirectory(atPath: wasmDir, withIntermediateDirectories: true)
        let built = try TestSupport.run(
            "\(TestSupport.repository)/scripts/build-wasm-plugin",
            ["\(wasmDir)/\(id).wasm", "\(TestSupport.repository)/Tests/Fixtures/\(source)", "--", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        XCTAssertEqual(built.status, 0, built.stderr)
        return (try manifest(nativeDir, library: "lib\(id).so"), try manifest(wasmDir, library: "\(id).wasm"))
    }

    private func registry(_ instances: String, capture: LogCapture? = nil) throws -> PluginRegistry {
        try TestSupport.write("data_dir: data\nplugins:\n\(instances)\n", to: folder + "/plugins.yaml")
        let pipeline = LogPipeline(filter: LogFilter(severity: .info, verbosity: .info))
        if let capture { pipeline.attach([capture]) }
        let registry = PluginRegistry(manifest: try HostManifest.load(path: folder + "/plugins.yaml"), pipeline: pipeline)
        registry.loadAll()
        addTeardownBlock { registry.shutdown() }
        return registry
    }

    private func sink(_ registry: PluginRegistry, _ instance: String) throws -> EventSinkPlugin {
        XCTAssertEqual(registry.entry(id: instance)?.state, .loaded, instance)
        return EventSinkPlugin(try XCTUnwrap(registry.plugins(of: .eventSink).first { $0.instanceID == instance }, instance))
    }

    private func batch(_ names: [String]) -> [SinkEvent] {
        names.enumerated().map { n, name in
            let key = "e-\(n)"
            let json = #"{"attributes":[{"name":"Event Name","value":"\#(name)"}],"eventTypeCode":"17","idempotencyKey":"\#(key)"}"#
            return SinkEvent(
                idempotencyKey: key, typeCode: 17, timeMs: 1_402_358_400_000 + Int64(n), json: Data(json.utf8), mobileUserID: "user-\(n)")
        }
    }

    func testTheTestSinkAnswersAlikeBuiltAsSharedLibraryAndAsWasm() throws {
        let (native, wasm) = try bothBuilds(
            "test_sink.c", id: "test-sink", pluginID: "test-sink",
            config: "  - {key: mode, type: string, default: deliver}\n  - {key: record_file, type: string}")
        var instances: [String] = []
        for mode in ["deliver", "garbage", "fail", "broken"] {
            instances.append("  - {id: so-\(mode), use: \(native), config: {mode: \(mode)}}")
            instances.append("  - {id: wasm-\(mode), use: \(wasm), config: {mode: \(mode)}}")
        }
        instances.append("  - {id: wasm-hang, use: \(wasm), config: {mode: hang}, wasm_fuel: 2000000}")
        let registry = try registry(instances.joined(separator: "\n"))
        XCTAssertEqual(registry.entry(id: "wasm-deliver")?.runsIn, "wasm")
        let events = batch(["GOOD", "reject-me", "retry-me", "ALSO GOOD"])
        for mode in ["deliver", "garbage", "fail", "broken"] {
            let a = try sink(registry, "so-\(mode)").deliver(events, timeoutMs: 1000)
            let b = try sink(registry, "wasm-\(mode)").deliver(events, timeoutMs: 1000)
            XCTAssertEqual(a, b, mode)
        }
        let delivered = try sink(registry, "wasm-deliver").deliver(events, timeoutMs: 1000)
        XCTAssertEqual(
            delivered.outcomes, [.delivered, .rejected(reason: "refused: reject-me"), .retry(reason: "asked to retry: retry-me"), .delivered])
        XCTAssertEqual(try sink(registry, "wasm-garbage").deliver(events, timeoutMs: 1000).undefinedOutcomes, [12345, 12345, 12345, 12345])

        // The largest batch the header allows crosses into the guest and back.
        let largest = batch((0..<EventSinkPlugin.maxBatch).map { "E\($0)" })
        let all = try sink(registry, "wasm-deliver").deliver(largest, timeoutMs: 1000)
        XCTAssertEqual(all.outcomes, Array(repeating: .delivered, count: EventSinkPlugin.maxBatch))

        // A sink that never returns runs out of fuel: every event is a retry, none is lost, and the
        // instance (instantiated again) answers the next batch.
        let hang = try sink(registry, "wasm-hang")
        let stuck = hang.deliver(events, timeoutMs: 1000)
        XCTAssertNotEqual(stuck.status, HH_OK)
        XCTAssertTrue(stuck.message.contains("ran out of fuel"), stuck.message)
        XCTAssertEqual(stuck.outcomes.count, events.count)
        XCTAssertTrue(stuck.outcomes.allSatisfy { if case .retry = $0 { return true } else { return false } }, "\(stuck.outcomes)")
        XCTAssertEqual(hang.deliver(events, timeoutMs: 1000).outcomes.count, events.count)
    }

    /// "hubhost.event_trace.v1" in every runtime: the test sink in `trace` mode answers with each
    /// event's traceparent as it read it, in process, in a worker and as `.wasm` alike.
    func testEveryRuntimeOffersASinkItsEventsTraceparents() throws {
        let (native, wasm) = try bothBuilds(
            "test_sink.c", id: "test-sink", pluginID: "test-sink",
            config: "  - {key: mode, type: string, default: deliver}\n  - {key: record_file, type: string}")
        let registry = try registry(
            [
                "  - {id: here, use: \(native), config: {mode: trace}}",
                "  - {id: worker, use: \(native), isolation: process, config: {mode: trace}}",
                "  - {id: guest, use: \(wasm), config: {mode: trace}}"
            ].joined(separator: "\n"))
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        var traced = SinkBatch()
        for (n, event) in batch(["A", "B", "C"]).enumerated() {
            traced.append(event)
            if n == 1 { traced.setTraceparentOfLast(traceparent) }
        }
        for instance in ["here", "worker", "guest"] {
            let answer = try sink(registry, instance).deliver(traced, timeoutMs: 1000)
            XCTAssertEqual(
                answer.outcomes, [.retry(reason: "trace: none"), .retry(reason: "trace: \(traceparent)"), .retry(reason: "trace: none")],
                "\(instance): \(answer.message)")
            // A batch without traceparents: none for every event.
            let plain = try sink(registry, instance).deliver(batch(["D"]), timeoutMs: 1000)
            XCTAssertEqual(plain.outcomes, [.retry(reason: "trace: none")], instance)
        }
    }

    func testAGuestReachesTheHostHTTPServiceOnlyUnderItsAllowList() throws {
        let received = Received()
        let server = try LoopbackHTTPServer(address: "127.0.0.1")
        let port = server.port
        server.start { fd, request in
            received.add(request)
            switch request.path {
            case "/gone": LoopbackHTTPServer.respond(fd, 410, Data("gone".utf8))
            case "/to-localhost": LoopbackHTTPServer.respond(fd, 302, headers: ["Location": "http://localhost:\(port)/collect"], Data())
            default: LoopbackHTTPServer.respond(fd, 202, Data("{}".utf8))
            }
        }
        addTeardownBlock { server.stop() }
        let (native, wasm) = try bothBuilds("http_post_sink.c", id: "post", pluginID: "http-post-sink", config: "  - {key: url, type: string}")
        let base = "http://127.0.0.1:\(port)"
        let capture = LogCapture()
        let registry = try registry(
            """
              - {id: so, use: \(native), config: {url: "\(base)/collect"}, http_allow: [127.0.0.1]}
              - {id: guest, use: \(wasm), config: {url: "\(base)/collect"}, http_allow: [127.0.0.1]}
              - {id: guest-gone, use: \(wasm), config: {url: "\(base)/gone"}, http_allow: [127.0.0.1]}
              - {id: guest-redirect, use: \(wasm), config: {url: "\(base)/to-localhost"}, http_allow: [127.0.0.1]}
              - {id: guest-refused, use: \(wasm), config: {url: "\(base)/collect"}, http_allow: [collector.example]}
            """, capture: capture)
        let events = batch(["PLAYER LOADED", "LEVEL UP"])

        let a = try sink(registry, "so").deliver(events, timeoutMs: 2000)
        let b = try sink(registry, "guest").deliver(events, timeoutMs: 2000)
        XCTAssertEqual(a, b)
        XCTAssertEqual(b.outcomes, [.delivered, .delivered])
        let posts = received.requests.filter { $0.path == "/collect" }
        XCTAssertEqual(posts.count, 2, "one batch from each build")
        XCTAssertEqual(posts.first?.body, posts.last?.body, "the same bytes from both builds")
        XCTAssertEqual(posts.last?.headers["x-batch-size"], "2")
        XCTAssertEqual(posts.last?.method, "POST")
        let body = try XCTUnwrap(JSONSerialization.jsonObject(with: try XCTUnwrap(posts.last?.body)) as? [String: Any])
        XCTAssertEqual((body["events"] as? [[String: Any]])?.count, 2)

        XCTAssertEqual(
            try sink(registry, "guest-gone").deliver(events, timeoutMs: 2000).outcomes, Array(repeating: .rejected(reason: "HTTP 410"), count: 2))

        // A redirect to a host outside http_allow is refused before anything is sent to it, and the
        // host's report is the call's message though the plugin reported nothing itself.
        let before = received.requests.count
        let redirected = try sink(registry, "guest-redirect").deliver(events, timeoutMs: 2000)
        XCTAssertEqual(redirected.status, HH_ERR_UNSUPPORTED)
        XCTAssertTrue(
            redirected.message.contains("a redirect to localhost was refused: not in http_allow of instance 'guest-redirect'"), redirected.message)
        XCTAssertEqual(received.requests.count, before + 1, "only the redirecting request reached a server")

        let refused = try sink(registry, "guest-refused").deliver(events, timeoutMs: 2000)
        XCTAssertEqual(refused.status, HH_ERR_UNSUPPORTED)
        XCTAssertEqual(received.requests.count, before + 1, "nothing sent to a host outside http_allow")
        XCTAssertTrue(
            capture.records.contains { $0.message.contains("HTTP request to 127.0.0.1 refused: not in http_allow of instance 'guest-refused'") },
            "\(capture.records.map(\.message))")
    }

    func testAWasmSinkDeliversTrackedEventsThroughTheEventEngine() throws {
        let received = Received()
        let server = try LoopbackHTTPServer(address: "127.0.0.1")
        server.start { fd, request in
            received.add(request)
            LoopbackHTTPServer.respond(fd, 200, Data("{}".utf8))
        }
        addTeardownBlock { server.stop() }
        let (_, wasm) = try bothBuilds("http_post_sink.c", id: "post", pluginID: "http-post-sink", config: "  - {key: url, type: string}")
        try TestSupport.write(
            """
            data_dir: data
            events:
              sink: out
              retry_base_delay: 0
            plugins:
              - id: out
                use: \(wasm)
                config: {url: "http://127.0.0.1:\(server.port)/collect"}
                http_allow: [127.0.0.1]
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        let engine = try host.events()
        let tracked = try (0..<3).map { try engine.track(Event(type: .namedEvent, name: "WASM \($0)"), autoFlush: false) }
        let report = engine.flush()
        XCTAssertEqual(report.posted, 4, "three events and the session start: \(report)")
        for event in tracked { XCTAssertEqual(try engine.store.event(id: event.id)?.event.status, .successfullyPosted) }
        let keys = received.requests.flatMap { request -> [String] in
            let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            return ((object?["events"] as? [[String: Any]]) ?? []).compactMap { $0["idempotencyKey"] as? String }
        }
        XCTAssertEqual(Set(tracked.map(\.id)).subtracting(keys), [], "every tracked event reached the collector through the guest")
    }
}

/// Requests a loopback server's handler records. Safe to share: `all` is read and written under `lock`.
private final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var all: [LoopbackHTTPServer.Request] = []
    func add(_ request: LoopbackHTTPServer.Request) { lock.withLock { all.append(request) } }
    var requests: [LoopbackHTTPServer.Request] { lock.withLock { all } }
}
