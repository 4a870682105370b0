import Synchronization
import XCTest

@testable import HubHostKit
@testable import HubHostTools

/// The hub benchmark's parts that can be checked without timing anything.
final class HubBenchmarkTests: XCTestCase {
    func testSelectionAgreesWithTheSQLBaseline() throws {
        let result = try HubSelectionBenchmark(hubs: 40, articles: 400, selections: 30).run()
        XCTAssertEqual(result.selections, 30)
        XCTAssertEqual(result.agreeing, 30, "tailoring and the SQL query must choose the same hub for every user")
    }

    func testSyntheticBundleShape() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let ids = try SyntheticBundle(hubs: 3, channelsPerHub: 5, articles: 32).write(to: folder + "/b.sqlite3")
        let bundle = try ContentBundle(path: folder + "/b.sqlite3")
        XCTAssertEqual(bundle.hubs.count, 3)
        XCTAssertEqual(bundle.hubs.flatMap(\.channels).count, 15)
        XCTAssertEqual(bundle.hubs.flatMap(\.channels).flatMap(\.articles).map(\.id).sorted(), ids.sorted())
        XCTAssertNotNil(bundle.body(ofArticle: ids[0]))
    }

    /// `bench floor-server`, the HTTP framework alone that bench hub and bench ingest measure beside
    /// serve: every exported page by its path, byte for byte; 404 for any other; POST /v1/events
    /// answers 201 with the body it was sent.
    func testFloorServerAnswersFromMemory() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let pages = [
            "/hub": "<html>hub</html>", "/hub/article/a1": "<html>article \u{00e9}</html>", "/hub/channel/c1": String(repeating: "x", count: 70_000)
        ]
        for (path, body) in pages {
            try FileManager.default.createDirectory(atPath: folder + "/pages" + path, withIntermediateDirectories: true)
            try TestSupport.write(body, to: folder + "/pages" + path + "/index.html")
        }
        let server = try ServeProcess(command: ["bench", "floor-server", "--pages", folder + "/pages", "--port", "0"])
        for (path, body) in pages {
            let response = try server.http.fetch("GET", server.base + path, timeoutSeconds: 10).get()
            XCTAssertEqual(response.status, 200, path)
            XCTAssertEqual(response.body, Data(body.utf8), path)
        }
        XCTAssertEqual(try server.http.fetch("GET", server.base + "/hub/nothing", timeoutSeconds: 10).get().status, 404)
        let event = #"{"type":"named_event","name":"E"}"#
        let posted = try server.http.fetch(
            "POST", server.base + "/v1/events", headers: ["Content-Type": "application/json"],
            body: Data(event.utf8), timeoutSeconds: 10
        ).get()
        XCTAssertEqual(posted.status, 201)
        XCTAssertEqual(posted.body, Data(event.utf8))
        // A port out of range is refused before anything listens.
        let refused = try TestSupport.hubhost(["bench", "floor-server", "--port", "70000"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("--port must be 0 to 65535"), refused.stderr)
        // A --pages folder that is missing, or holds no page, is refused before anything listens.
        let missing = try TestSupport.hubhost(["bench", "floor-server", "--pages", folder + "/none"], timeout: 20)
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("not a folder that can be read"), missing.stderr)
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        let empty = try TestSupport.hubhost(["bench", "floor-server", "--pages", folder + "/empty"], timeout: 20)
        XCTAssertNotEqual(empty.status, 0)
        XCTAssertTrue(empty.stderr.contains("no <path>/index.html"), empty.stderr)
    }

    func testWrkOutputIsRead() throws {
        let output = """
            Running 5s test @ http://127.0.0.1:8080
              2 threads and 16 connections
              Thread Stats   Avg      Stdev     Max   +/- Stdev
                Latency   512.31us  100.00us   3.00ms   90.00%
              Latency Distribution
                 50%  480.00us
                 75%  600.00us
                 90%  700.00us
                 99%    1.25ms
              150000 requests in 5.00s, 100.00MB read
              Non-2xx or 3xx responses: 12
            Requests/sec:  30000.50
            Transfer/sec:     20.00MB
            """
        let figures = try PageServingBenchmark.parseWrk(output)
        XCTAssertEqual(figures.requestsPerSecond, 30000.50)
        XCTAssertEqual(figures.p50Ms, 0.48, accuracy: 1e-9)
        XCTAssertEqual(figures.p99Ms, 1.25, accuracy: 1e-9)
        XCTAssertEqual(figures.non2xx, 12)
        XCTAssertThrowsError(try PageServingBenchmark.parseWrk("unable to connect"))
    }

    /// A /proc stat line is read from the last ')' on (a thread's name may hold spaces and
    /// parentheses); a line that is not one is refused.
    func testAThreadsStatLineIsRead() {
        let line = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 75 0 0 20 0 9 0 100 1000000 300"
        XCTAssertEqual(ThreadCPU.parse(stat: line), ThreadCPU.ThreadTime(name: "a (weird) name", ticks: 325))
        XCTAssertNil(ThreadCPU.parse(stat: "4242 (short) S 1 2 3"))
        XCTAssertNil(ThreadCPU.parse(stat: "no name here"))
        XCTAssertEqual(ThreadCPU.Role(threadName: "NIO-ELT-0-#3"), .eventLoops)
        XCTAssertEqual(ThreadCPU.Role(threadName: "oot.default-qos"), .tasks)
        XCTAssertEqual(ThreadCPU.Role(threadName: HubViewRecorder.threadName), .viewRecorder)
        XCTAssertEqual(ThreadCPU.Role(threadName: GroupCommit.threadName), .eventWriter)
        XCTAssertEqual(ThreadCPU.Role(threadName: PluginCallThreads.threadName), .pluginCalls)
        XCTAssertEqual(ThreadCPU.Role(threadName: "TP-#1"), .other)
    }

    /// A thread named with `ThreadName` shows that name in /proc (cut to 15 bytes), and the CPU it
    /// spends between two snapshots is counted under its role: here a thread named as the page-view
    /// recorder spins for at least 300 ms of its own CPU time.
    func testANamedThreadsCPUIsCountedUnderItsRole() throws {
        let before = ThreadCPU.of(pid: getpid())
        XCTAssertFalse(before.threads.isEmpty, "this process's threads are listed")
        let done = DispatchSemaphore(value: 0)
        let names = Mutex<[String]>([])
        let thread = Thread {
            ThreadName.set("a name longer than fifteen bytes")
            names.withLock { $0.append((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "") }
            ThreadName.set(HubViewRecorder.threadName)
            // This thread's own CPU time, in milliseconds.
            func cpuMs() -> Int {
                var now = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
                return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
            }
            var spun = 0
            repeat {  // bounded: at most 5e9 additions
                for _ in 0..<100_000 { spun &+= 1 }
            } while cpuMs() < 300 && spun < 5_000_000_000
            let after = ThreadCPU.of(pid: getpid())
            names.withLock { $0.append(String(after.seconds(since: before)[.viewRecorder] ?? 0)) }
            done.signal()
        }
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let seen = names.withLock { $0 }
        XCTAssertEqual(seen.first, "a name longer t\n", "cut to 15 bytes")
        let seconds = try XCTUnwrap(Double(seen.last ?? ""))
        XCTAssertGreaterThanOrEqual(seconds, 0.25, "the spinning thread's CPU, counted as the recorder's")
        XCTAssertLessThan(seconds, 30)
    }
}
