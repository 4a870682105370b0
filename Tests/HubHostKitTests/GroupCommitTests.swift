import Foundation
import GRDB
import XCTest

@testable import HubHostKit

/// `POST /v1/events` commits concurrent requests together (GroupCommit): an acknowledged event is
/// still on disk after kill -9 mid-load, a request whose id is already stored fails alone, and
/// the Swift entry point answers every concurrent caller with its own events.
final class GroupCommitTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: none}
            server: {port: 0}
            events: {cache_size: 1000000}
            plugins:
              - id: noop
                use: \(TestSupport.plugin("Noop"))
            """, to: folder + "/plugins.yaml")
    }

    /// Outcomes that several client threads record.
    private final class Outcomes: @unchecked Sendable {
        let lock = NSLock()
        var acknowledged: [String] = []
        var statuses: [String: Int] = [:]
        var stop = false
    }

    private static func post(_ http: HTTPFetcher, _ base: String, _ body: String) -> Int? {
        guard
            case .success(let response) = http.fetch(
                "POST", base + "/v1/events", headers: ["Content-Type": "application/json"],
                body: Data(body.utf8), timeoutSeconds: 10)
        else { return nil }
        return response.status
    }

    func testEveryEventAcknowledgedUnderConcurrentLoadSurvivesKillDashNine() throws {
        try killDashNineUnderLoad(durability: .fsync)
    }

    /// `events.durability: process` skips the fsync of each commit, but a commit is still in the
    /// OS's page cache before it is acknowledged: kill -9 of serve loses nothing either.
    func testWithProcessDurabilityEveryAcknowledgedEventSurvivesKillDashNineToo() throws {
        try killDashNineUnderLoad(durability: .process)
    }

    /// The store's connections run `synchronous` as `events.durability` says (FULL = 2, NORMAL = 1).
    func testDurabilitySetsTheStoresSynchronousMode() throws {
        for (durability, expected) in [(EventDurability.fsync, 2), (.process, 1)] {
            let store = try EventStore.open(path: folder + "/\(durability.rawValue).sqlite", durability: durability).store
            XCTAssertEqual(try store.pool.write { try Int.fetchOne($0, sql: "PRAGMA synchronous") }, expected, "\(durability) writer")
            XCTAssertEqual(try store.pool.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") }, expected, "\(durability) reader")
        }
        try TestSupport.write("data_dir: data\nevents: {durability: sometimes}\nplugins: []\n", to: folder + "/bad.yaml")
        let problems = try HostManifest.load(path: folder + "/bad.yaml").diagnostics.map(\.message)
        XCTAssertTrue(problems.contains { $0.contains("sometimes") && $0.contains("fsync") && $0.contains("process") }, "\(problems)")
    }

    private func killDashNineUnderLoad(durability: EventDurability) throws {
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: none}
            server: {port: 0}
            events: {cache_size: 1000000, durability: \(durability.rawValue)}
            plugins:
              - id: noop
                use: \(TestSupport.plugin("Noop"))
            """, to: folder + "/plugins.yaml")
        let server = try ServeProcess(manifest: folder + "/plugins.yaml")
        let outcomes = Outcomes()
        let clients = 8
        let done = DispatchGroup()
        for client in 0..<clients {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let http = HTTPFetcher()
                for i in 0..<5_000 {  // bounded; the kill below ends it long before
                    if outcomes.lock.withLock({ outcomes.stop }) { return }
                    let id = "c\(client)-\(i)"
                    guard let status = Self.post(http, server.base, #"{"id":"\#(id)","name":"LOAD","attributes":{"n":\#(i)}}"#) else { return }
                    if status == 201 { outcomes.lock.withLock { outcomes.acknowledged.append(id) } }
                }
            }
        }
        // Kill -9 while requests are in flight, once enough were acknowledged (bounded in time).
        let start = Date()
        while outcomes.lock.withLock({ outcomes.acknowledged.count }) < 400, Date().timeIntervalSince(start) < 30 { usleep(10_000) }
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        outcomes.lock.withLock { outcomes.stop = true }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let acknowledged = outcomes.lock.withLock { outcomes.acknowledged }
        XCTAssertGreaterThanOrEqual(acknowledged.count, 400)

        let store = try EventStore.open(path: folder + "/data/events.sqlite").store
        var seen: [String: Int] = [:]
        for stored in try store.list(limit: 1_000_000) { seen[stored.event.id, default: 0] += 1 }
        for id in acknowledged { XCTAssertEqual(seen[id], 1, "acknowledged event \(id) must be stored exactly once") }
    }

    func testARequestWithAStoredIDFailsAloneInItsGroup() async throws {
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml") { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                XCTAssertEqual(Self.post(server.http, server.base, #"{"id":"taken","name":"FIRST"}"#), 201)
                let outcomes = Outcomes()
                for round in 0..<5 {
                    DispatchQueue.concurrentPerform(iterations: 12) { k in
                        let id = k == 0 ? "taken" : "r\(round)-\(k)"
                        let status = Self.post(HTTPFetcher(), server.base, #"[{"id":"\#(id)","name":"AGAIN"},{"name":"SECOND"}]"#) ?? -1
                        outcomes.lock.withLock { outcomes.statuses["\(round)-\(k)"] = status }
                    }
                }
                for (key, status) in outcomes.statuses {
                    XCTAssertEqual(status, key.hasSuffix("-0") ? 409 : 201, "request \(key)")
                }
                let (_, stats) = try server.call("GET", "/v1/events/stats")
                // 1 + 5 rounds x 11 requests x 2 events, and the session start.
                XCTAssertEqual((stats as? [String: Int])?["NOT_POSTED"], 1 + 5 * 11 * 2 + 1)
            }
        }
    }

    func testConcurrentSwiftCallersEachGetTheirOwnEvents() async throws {
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let engine = try host.events()
        let answers = try await withThrowingTaskGroup(of: (Int, [Event]).self) { group in
            for caller in 0..<64 {
                group.addTask {
                    let events = (0..<(1 + caller % 3)).map { i in
                        Event(
                            id: "caller\(caller)-\(i)", type: .namedEvent, name: "CALL", timestampMs: 1_700_000_000_000,
                            attributes: [.init("caller", .int(Int64(caller)))])
                    }
                    return (caller, try await engine.trackGrouped(events))
                }
            }
            var answers: [Int: [Event]] = [:]
            for try await (caller, events) in group { answers[caller] = events }
            return answers
        }
        XCTAssertEqual(answers.count, 64)
        for (caller, events) in answers {
            XCTAssertEqual(events.map(\.id), (0..<(1 + caller % 3)).map { "caller\(caller)-\($0)" })
            XCTAssertTrue(events.allSatisfy { $0[attribute: "caller"] == .int(Int64(caller)) && $0.status == .notPosted })
        }
        XCTAssertEqual(try engine.store.stats()[.notPosted], (0..<64).reduce(0) { $0 + 1 + $1 % 3 } + 1, "and the session start")
    }
}
