import Foundation
import XCTest

@testable import HubHostKit
@testable import HubHostTools

/// The soak test: serve's API and services on loopback (in this process, InProcessAPI) beside CLI
/// writers (child processes) on the same data directory, under a mix of valid and hostile requests
/// from several clients at once.
/// It ends with every acknowledged event stored exactly once, nothing of a refused request stored,
/// no CLI run failing with "database is locked", the collector never given one event twice, and
/// the server alive and stopping cleanly as on SIGTERM (its services stopped without an error).
///
/// Bounded: every loop runs a fixed number of times (no loop waits on the clock); the only waits
/// are the socket and process bounds below, which end a stuck run instead of hanging the suite.
/// Deterministic in what it sends (seeded per client), not in the interleaving.
final class SoakTests: XCTestCase {
    static let httpClients = 8
    static let requestsPerClient = 120
    static let cliWriters = 2
    static let cliRoundsPerWriter = 25
    static let maxBodySize = 65_536

    /// What one sender saw; merged at the end.
    final class Ledger: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var acknowledged: [String] = []
        /// Ids of requests the server refused (or CLI runs that failed): none may be stored.
        private(set) var refused: Set<String> = []
        /// Ids of requests whose answer never came (connection reset before an answer): not judged.
        private(set) var unknown: Set<String> = []
        private(set) var problems: [String] = []
        private(set) var statuses: [String: Int] = [:]

        func ack(_ ids: [String]) { lock.withLock { acknowledged += ids } }
        func refuse(_ ids: [String]) { lock.withLock { refused.formUnion(ids) } }
        func unknown(_ ids: [String]) { lock.withLock { unknown.formUnion(ids) } }
        func problem(_ text: String) { lock.withLock { problems.append(text) } }
        func count(_ key: String) { lock.withLock { statuses[key, default: 0] += 1 } }
        var acknowledgedSnapshot: [String] { lock.withLock { acknowledged } }
    }

    /// SplitMix64 (the benchmarks' generator): small, seedable, the same sequence on every platform.
    typealias SeededGenerator = SplitMix

    private var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
    }

    func testValidAndHostileClientsAndCLIWritersBesideServe() async throws {
        let collector = try TestCollector()
        defer { collector.stop() }
        let manifest = folder + "/plugins.yaml"
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0, idle_timeout: 1 sec, max_body_size: \(Self.maxBodySize)}
            events: {cache_size: 4, collector_url: "\(collector.url)", flush_interval: 200 ms, retry_base_delay: 100 ms}
            plugins: []
            """, to: manifest)
        let ledger = Ledger()
        try await InProcessAPI.listening(manifestPath: manifest, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                XCTAssertEqual(try server.call("GET", "/v1/health").0, 200)

                // Connections that send half a request head and then say nothing: the server must carry on
                // with everyone else and close them itself (idle_timeout).
                let hanging = try (0..<Self.httpClients).map { _ -> RawHTTPClient in
                    let client = try RawHTTPClient(port: server.port)
                    client.send("POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
                    return client
                }

                let group = DispatchGroup()
                for client in 0..<Self.httpClients {
                    group.enter()
                    Thread.detachNewThread {
                        defer { group.leave() }
                        Self.httpClient(client, port: server.port, ledger: ledger)
                    }
                }
                for writer in 0..<Self.cliWriters {
                    group.enter()
                    Thread.detachNewThread {
                        defer { group.leave() }
                        Self.cliWriter(writer, manifest: manifest, ledger: ledger)
                    }
                }
                // A bound for a stuck run, not a timing assertion: the work is ~10 s in a debug build.
                XCTAssertEqual(group.wait(timeout: .now() + 240), .success, "the clients and writers finished")

                for (index, client) in hanging.enumerated() {
                    XCTAssertTrue(client.isClosedByServer(), "the half-sent request head \(index) was closed by the server")
                }

                // The server is alive and answers, then stops cleanly as on SIGTERM (a last flush included).
                XCTAssertEqual(try server.call("GET", "/v1/health").0, 200, "serve is alive after the soak")
            }
        }
        // serve stopped: `listening` returns once its services stopped without an error (serve's exit 0).
        for problem in ledger.problems { XCTFail(problem) }

        let acknowledged = ledger.acknowledged
        XCTAssertGreaterThan(acknowledged.count, 200, "enough events were acknowledged to mean something: \(ledger.statuses)")
        XCTAssertEqual(Set(acknowledged).count, acknowledged.count, "no id was acknowledged twice")

        let store = try EventStore.open(path: folder + "/data/events.sqlite").store
        let stored = try store.list(limit: 10_000_000)
        var copies: [String: Int] = [:]
        for event in stored { copies[event.event.id, default: 0] += 1 }
        for id in acknowledged where copies[id] != 1 {
            XCTFail("acknowledged event \(id) is stored \(copies[id] ?? 0) times")
        }
        let refused = ledger.refused.subtracting(acknowledged)
        XCTAssertGreaterThan(refused.count, 100, "enough refused ids to mean something")
        for id in refused.sorted() where copies[id] != nil {
            XCTFail("event \(id) of a refused request was stored")
        }
        let acknowledgedSet = Set(acknowledged)
        for id in copies.keys where id.hasPrefix("soak-") && !acknowledgedSet.contains(id) && !ledger.unknown.contains(id) {
            XCTFail("event \(id) is stored but was never acknowledged")
        }

        // The collector: no event twice (idempotency keys are the event ids), only stored events,
        // and an event is SUCCESSFULLY_POSTED exactly when the collector accepted it.
        let keys = collector.acceptedKeys
        var deliveries: [String: Int] = [:]
        for key in keys { deliveries[key, default: 0] += 1 }
        for (key, count) in deliveries.sorted(by: { $0.key < $1.key }) where count > 1 {
            XCTFail("the collector received event \(key) \(count) times")
        }
        for key in deliveries.keys where copies[key] == nil {
            XCTFail("the collector received \(key), which is not in the store")
        }
        for event in stored where (event.event.status == .successfullyPosted) != (deliveries[event.event.id] != nil) {
            XCTFail("event \(event.event.id) is \(event.event.status.rawValue) but the collector got it \(deliveries[event.event.id] ?? 0) times")
        }
        print(
            "soak: \(acknowledged.count) acknowledged, \(refused.count) refused ids, \(ledger.unknown.count) unanswered, "
                + "\(stored.count) stored, \(keys.count) delivered; answers \(ledger.statuses.sorted { $0.key < $1.key })")
    }

    // MARK: HTTP clients

    enum Kind: CaseIterable {
        case single, list, badTimestamp, wrongType, repeatedInList, repeatedStored, textPlain, foreignOrigin, oversized,
            garbageBody, garbageRequest
    }

    static func event(_ id: String, name: String = "SOAK", timestamp: String? = nil, extra: String = "") -> String {
        #"{"id":"\#(id)","name":"\#(name)","attributes":{"n":7,"s":"text","d":1.5,"b":true}\#(timestamp.map { #","timestamp":\#($0)"# } ?? "")\#(extra)}"#
    }

    static func httpClient(_ client: Int, port: Int, ledger: Ledger) {
        var random = SeededGenerator(seed: 0x50A6_0000 + UInt64(client))
        var mine: [String] = []
        for n in 0..<requestsPerClient {
            let prefix = "soak-h\(client)-\(n)"
            let kind = Kind.allCases.randomElement(using: &random)!
            var ids: [String] = []
            var headers = ["Content-Type": "application/json"]
            var body = Data()
            var expected: Set<Int> = [400]
            switch kind {
            case .single:
                ids = [prefix]
                body = Data(event(prefix).utf8)
                expected = [201]
            case .list:
                ids = (0..<Int.random(in: 2...6, using: &random)).map { "\(prefix)-\($0)" }
                body = Data(("[" + ids.map { event($0) }.joined(separator: ",") + "]").utf8)
                expected = [201]
            case .badTimestamp:
                let stamp = ["1e300", "-1e300", "-9223372036854775808", "9223372036854775807", "253402300800000", "-1", "\"-9223372036854775808\""]
                    .randomElement(using: &random)!
                ids = ["\(prefix)-ok", "\(prefix)-bad"]
                body = Data(#"{"events":[\#(event(ids[0])),\#(event(ids[1], timestamp: stamp))]}"#.utf8)
            case .wrongType:
                ids = ["\(prefix)-ok", "\(prefix)-bad"]
                let bad = [
                    #"{"id":"\#(ids[1])","name":5}"#, #"{"id":"\#(ids[1])","name":"x","attributes":[1,2]}"#,
                    #"{"id":"\#(ids[1])","type":{"x":1}}"#, #"{"id":"\#(ids[1])","name":"x","timestamp":true}"#,
                    #"{"id":"\#(ids[1])","name":"x","attributes":{"n":{"type":"int","value":1e300}}}"#,
                    #"{"id":"\#(ids[1])","name":"x","attributes":{"l":[1]}}"#, #"{"id":"\#(ids[1])","nmae":"x"}"#
                ]
                .randomElement(using: &random)!
                body = Data("[\(event(ids[0])),\(bad)]".utf8)
            case .repeatedInList:
                ids = ["\(prefix)-a", "\(prefix)-b"]
                body = Data("[\(event(ids[0])),\(event(ids[1])),\(event(ids[0], name: "AGAIN"))]".utf8)
                expected = [409]
            case .repeatedStored:
                guard let old = mine.randomElement(using: &random) else { continue }
                ids = ["\(prefix)-new"]
                body = Data("[\(event(ids[0])),\(event(old, name: "AGAIN"))]".utf8)
                expected = [409]
            case .textPlain:
                ids = [prefix]
                headers = ["Content-Type": "text/plain"]
                body = Data(event(prefix).utf8)
                expected = [415]
            case .foreignOrigin:
                ids = [prefix]
                headers["Origin"] = "http://evil.example"
                body = Data(event(prefix).utf8)
                expected = [403]
            case .oversized:
                ids = [prefix]
                body = Data(event(prefix, extra: #","purchase":"\#(String(repeating: "x", count: maxBodySize + 1000))""#).utf8)
                expected = [413]
            case .garbageBody:
                ids = [prefix]
                // An event's text with random bytes written over part of it after its id (often
                // invalid UTF-8); the id stays, so a mutation that is still valid cannot take another's id.
                var bytes = Array(event(prefix).utf8)
                let start = Int.random(in: (#"{"id":""#.utf8.count + prefix.utf8.count + 1)..<bytes.count, using: &random)
                for i in start..<min(bytes.count, start + 12) { bytes[i] = UInt8.random(in: 0...255, using: &random) }
                body = Data(bytes)
                expected = [201, 400, 409, 413]  // a mutation may still be a valid event (judged by its answer)
            case .garbageRequest:
                let connection: RawHTTPClient
                do { connection = try RawHTTPClient(port: port) } catch {
                    ledger.problem("client \(client): connect failed: \(error)")
                    continue
                }
                var bytes = [UInt8]((0..<Int.random(in: 1...400, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
                bytes += Array("\r\n\r\n".utf8)
                _ = bytes.withUnsafeBytes { Glibc.send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                let answer = connection.readAll()
                let status = answer.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                ledger.count("garbageRequest \(status.map(String.init) ?? "closed")")
                if let status, status >= 500 { ledger.problem("garbage request bytes \(bytes) answered \(status): \(answer.prefix(300))") }
                continue
            }
            let answer = post(port: port, headers: headers, body: body)
            ledger.count("\(kind) \(answer.map { String($0.status) } ?? "no answer")")
            guard let answer else {
                // Oversized bodies may be cut off with a reset before the answer is read.
                if kind != .oversized { ledger.problem("\(kind) \(ids): no answer from serve") }
                kind == .oversized ? ledger.refuse(ids) : ledger.unknown(ids)
                continue
            }
            if !expected.contains(answer.status) {
                ledger.problem(
                    "\(kind) \(ids): expected \(expected.sorted()) but got \(answer.status): \(answer.body.prefix(300))"
                        + " for body \(String(decoding: body.prefix(300), as: UTF8.self))")
            }
            if answer.status == 201 {
                let list = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String: Any]] ?? []
                let answered = list.compactMap { $0["id"] as? String }
                if answered != ids {
                    ledger.problem("\(kind): sent ids \(ids), the 201 answer has \(answered)")
                }
                ledger.ack(answered)
                mine += answered
            } else {
                if answer.status >= 500 { ledger.problem("\(kind) \(ids): a server error \(answer.status): \(answer.body.prefix(300))") }
                if !answer.body.contains(#""error":{"#) {
                    ledger.problem("\(kind) \(answer.status): not the JSON error shape: \(answer.body.prefix(200))")
                }
                ledger.refuse(ids)
            }
        }
    }

    /// One POST /v1/events on its own connection; nil when the connection ended without an answer.
    static func post(port: Int, headers: [String: String], body: Data) -> (status: Int, body: String)? {
        guard let client = try? RawHTTPClient(port: port) else { return nil }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)  // a busy store waits, it does not fail
        setsockopt(client.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head = "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        let bytes = Data((head + "\r\n").utf8) + body
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(client.fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { break }
            sent += count
        }
        let text = client.readAll()
        guard let line = text.split(separator: "\r\n").first, let status = Int(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return (status, text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? "")
    }

    // MARK: CLI writers

    static func cliWriter(_ writer: Int, manifest: String, ledger: Ledger) {
        var random = SeededGenerator(seed: 0xC11_0000 + UInt64(writer))
        for round in 0..<cliRoundsPerWriter {
            let prefix = "soak-c\(writer)-\(round)"
            var ids = (0..<Int.random(in: 1...5, using: &random)).map { "\(prefix)-\($0)" }
            var events = ids.map { event($0) }
            var shouldFail = false
            switch round % 5 {
            case 3:  // one bad timestamp refuses the whole batch
                events.append(event("\(prefix)-bad", timestamp: "1e300"))
                ids.append("\(prefix)-bad")
                shouldFail = true
            case 4:  // an id the HTTP clients already stored refuses the whole batch
                if let old = ledger.acknowledgedSnapshot.filter({ $0.hasPrefix("soak-h") }).randomElement(using: &random) {
                    events.append(event(old, name: "AGAIN"))
                    shouldFail = true
                }
            default: break
            }
            let track = run(["track", "--stdin", "--json"], manifest: manifest, stdin: "[" + events.joined(separator: ",") + "]")
            ledger.count("cli track \(track.status)")
            if track.stderr.contains("database is locked") || track.stdout.contains("database is locked") {
                ledger.problem("hubhost track --stdin failed with 'database is locked': \(track.stderr)")
            }
            if track.status == 0 {
                let answered =
                    ((try? track.json) as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                    + [((try? track.json) as? [String: Any])?["id"] as? String].compactMap { $0 }
                if shouldFail { ledger.problem("track of a batch that should be refused exited 0: \(track.stdout.prefix(300))") }
                if Set(answered) != Set(ids) { ledger.problem("track --stdin: sent \(ids), --json printed \(answered)") }
                ledger.ack(answered)
            } else {
                if !shouldFail { ledger.problem("track --stdin of a valid batch exited \(track.status): \(track.stderr)") }
                ledger.refuse(ids)
            }
            let flush = run(["events", "flush", "--json"], manifest: manifest, stdin: "")
            ledger.count("cli flush \(flush.status)")
            if flush.status != 0 || flush.stderr.contains("database is locked") {
                ledger.problem("hubhost events flush exited \(flush.status): \(flush.stderr) \(flush.stdout)")
            }
        }
    }

    /// Runs hubhost with `stdin` as its standard input; 120 s at most. Not running is status -2.
    static func run(_ arguments: [String], manifest: String, stdin: String) -> CommandResult {
        do {
            return try TestSupport.hubhost(arguments, manifest: manifest, input: stdin)
        } catch {
            return CommandResult(status: -2, stdout: "", stderr: "hubhost \(arguments): \(error)")
        }
    }
}
