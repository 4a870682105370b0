import Foundation
import Synchronization
import XCTest

@testable import HubHostKit

/// Messages pushed, not polled: the engine's message stream (Swift API), `GET /v1/messages/stream`
/// and `hubhost messages watch` send a message the moment it may show and say why one sent was
/// withdrawn, for changes made in this process, by another process and by time passing.
extension CampaignHoldsTests {
    /// A message stream's events as they arrive, read on a task of their own and summed up as
    /// short lines: "message ID", "held REASON", "none", "withdrawn ID REASON".
    final class StreamLines: Sendable {
        private let lines = Mutex<[String]>([])
        private let reader = Mutex<Task<Void, Never>?>(nil)

        static func reading(_ stream: AsyncStream<CampaignEngine.StreamEvent>) -> StreamLines {
            let collected = StreamLines()
            let task = Task {
                for await event in stream { collected.lines.withLock { $0.append(StreamLines.line(event)) } }
            }
            collected.reader.withLock { $0 = task }
            return collected
        }

        static func line(_ event: CampaignEngine.StreamEvent) -> String {
            switch event.name {
            case .withdrawn: return "withdrawn \(event.id ?? "?") \(event.reason?.rawValue ?? "?")"
            case .message: return event.message.map { "message \($0.id)" } ?? event.held.map { "held \($0.rawValue)" } ?? "none"
            }
        }

        /// Every line so far, once at least `count` arrived (or after 10 s).
        func first(_ count: Int) -> [String] {
            _ = TestSupport.waitUntil(timeout: 10) { lines.withLock { $0.count } >= count }
            return lines.withLock { $0 }
        }

        func stop() { reader.withLock { $0?.cancel() } }
    }

    func testTheStreamSendsEachChangeAtOnceAndNamesWhyAMessageWasWithdrawn() throws {
        let clock = FakeClock()
        try writeList(["a", "b", "d", "e"].map { campaign($0) } + [campaign("c", endTimeMillis: clock.now() + 60_000)])
        let (_, campaigns, events) = try host(clock: clock)
        // Neither the version poll nor the tick comes during the test: only the engine's own
        // changes wake the stream (and the test, for the clock it moves by hand).
        campaigns.setMessageStreamTimes(versionPollSeconds: 3600, tickSeconds: 3600)
        let stream = StreamLines.reading(campaigns.messageStream())
        defer { stream.stop() }
        var expected = ["none"]
        XCTAssertEqual(stream.first(1), expected)
        func step(_ lines: String..., after change: () throws -> Void) throws {
            try change()
            expected += lines
            XCTAssertEqual(stream.first(expected.count), expected)
        }
        try step("message a") { try track(events, "a") }
        try step("withdrawn a shown", "none") { try campaigns.displayed("a") }
        try step("message b") { try track(events, "b", "e") }
        try step("withdrawn b later", "message e") { try campaigns.later("b") }  // the queue is e, b
        try step("withdrawn e closed", "message b") { campaigns.close(clearQueue: false) }
        try step("withdrawn b opted_out", "none") { try campaigns.optOut("b") }
        try step("message c") { try track(events, "c") }
        try step("withdrawn c ended", "none") {
            clock.advance(seconds: 120)
            campaigns.wakeMessageStreams()
        }
        try step("message d") { try track(events, "d") }
        try step("withdrawn d paused", "held paused") { try campaigns.pause() }
        try step("message d") { try campaigns.resume() }
        try step("withdrawn d user_changed", "none") { try campaigns.setUser(CampaignEngine.User(userID: "u2")) }
        XCTAssertEqual(campaigns.nextMessage().message?.id, nil, "the stream's answers are the engine's")
    }

    func testAnotherMessageShownUsesTheCapUpAndWithdrawsTheCurrentOne() throws {
        try writeList([campaign("a"), campaign("b")])
        let (_, campaigns, events) = try host(caps: "{per_period: 1, period: 24h}")
        let stream = StreamLines.reading(campaigns.messageStream())
        defer { stream.stop() }
        XCTAssertEqual(stream.first(1), ["none"])
        try track(events, "a", "b")
        XCTAssertEqual(stream.first(2), ["none", "message a"])
        try campaigns.displayed("b")  // another client showed b: the period's one message
        XCTAssertEqual(
            stream.first(4), ["none", "message a", "withdrawn a frequency_caps.per_period", "held frequency_caps.per_period"])
        XCTAssertEqual(campaigns.nextMessage().held, .perPeriod, "the current message is held too")
        XCTAssertEqual(campaigns.ready().map(\.id), ["a"], "a stays queued and shows when the cap allows")
        for reason in CampaignEngine.HoldReason.allCases {
            XCTAssertNotEqual(CampaignEngine.WithdrawReason(reason), .notReady, "\(reason) is a withdraw reason of its own")
            XCTAssertEqual(CampaignEngine.WithdrawReason(reason).rawValue, reason.rawValue)
        }
    }

    func testASyncAndChangesByOtherProcessesReachRunningStreams() throws {
        try writeList([campaign("a"), campaign("b")])
        let (_, campaigns, events) = try host()
        campaigns.setMessageStreamTimes(versionPollSeconds: 0.25, tickSeconds: 3600)
        let stream = StreamLines.reading(campaigns.messageStream())
        defer { stream.stop() }
        XCTAssertEqual(stream.first(1), ["none"])
        try track(events, "a")
        XCTAssertEqual(stream.first(2), ["none", "message a"])

        // `campaigns sync` in another process loads a list without a (campaigns.file, which every
        // command's start loads too).
        try writeList([campaign("b")])
        _ = try TestSupport.hubhost(["campaigns", "sync"], manifest: folder + "/plugins.yaml").expect()
        XCTAssertEqual(stream.first(4), ["none", "message a", "withdrawn a synced_away", "none"])

        // `messages watch` in another process: its first answer, then this process's change.
        let watch = Process()
        watch.executableURL = URL(fileURLWithPath: TestSupport.hubhostExecutable)
        watch.arguments = ["messages", "watch", "--json", "--count", "2", "--timeout", "60", "--manifest", folder + "/plugins.yaml"]
        watch.currentDirectoryURL = URL(fileURLWithPath: folder)
        let output = Pipe()
        watch.standardOutput = output
        try watch.run()
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        var printed = Self.lines(from: output, atLeast: 1)
        XCTAssertEqual(printed, [#"{"name":"message"}"#])
        try track(events, "b")
        printed = Self.lines(from: output, atLeast: 1)
        watch.waitUntilExit()
        XCTAssertEqual(watch.terminationStatus, 0)
        let second = try XCTUnwrap(try TestSupport.json(printed.first ?? "", as: [String: Any].self))
        XCTAssertEqual(second["name"] as? String, "message", "\(printed)")
        XCTAssertEqual((second["message"] as? [String: Any])?["id"] as? String, "b", "\(printed)")
        XCTAssertEqual(stream.first(5).last, "message b", "this process's stream shows it too")

        let text = try TestSupport.hubhost(["messages", "watch", "--count", "1"], manifest: folder + "/plugins.yaml").expect()
        XCTAssertEqual(text.stdout, "message  b  B\n")
        let tooFew = try TestSupport.hubhost(["messages", "watch", "--count", "3", "--timeout", "1"], manifest: folder + "/plugins.yaml")
        XCTAssertEqual(tooFew.status, 1, tooFew.stderr)
        XCTAssertTrue(tooFew.stderr.contains("1 of 3 events within 1.0 s"), tooFew.stderr)
        for (arguments, complaint) in [(["--count", "0"], "--count must be at least 1"), (["--timeout", "1e12"], "--timeout must be more than 0")] {
            let refused = try TestSupport.hubhost(["messages", "watch"] + arguments, manifest: folder + "/plugins.yaml")
            XCTAssertEqual(refused.status, 64, refused.stderr)
            XCTAssertTrue(refused.stderr.contains(complaint), refused.stderr)
        }
    }

    /// Lines `pipe` prints next, once at least `count` arrived (or it closed); at most 64 reads.
    static func lines(from pipe: Pipe, atLeast count: Int) -> [String] {
        var text = ""
        for _ in 0..<64 where text.filter({ $0 == "\n" }).count < count {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        return text.split(separator: "\n").map(String.init)
    }

    func testTheHTTPStreamSendsTheMessageAtOnceAndItsWithdrawal() async throws {
        try writeList([campaign("a")])
        let yaml = manifest(caps: "{}", events: "{cache_size: 1000}")
        try await InProcessAPI.listening(manifest: yaml, in: folder) { port, _ in
            try await TestSupport.offPool {
                let stream = try RawHTTPClient(port: port)
                stream.send("GET /v1/messages/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                var text = stream.read(until: "event: message")
                XCTAssertTrue(text.lowercased().contains("content-type: text/event-stream"), text)
                XCTAssertTrue(text.contains(#"data: {"name":"message"}"#), text)
                let tracked = try RawHTTPClient(port: port).request(
                    "POST", "/v1/events", headers: ["Content-Type": "application/json"], body: #"{"name":"a"}"#)
                XCTAssertEqual(tracked.status, 201, tracked.body)
                text = stream.read(until: #""id":"a""#, after: text)
                XCTAssertTrue(text.contains(#""id":"a""#), text)
                let shown = try RawHTTPClient(port: port).request("POST", "/v1/messages/a/impression")
                XCTAssertEqual(shown.status, 200, shown.body)
                text = stream.read(until: "event: withdrawn", after: text)
                XCTAssertTrue(text.contains(#"event: withdrawn"# + "\n" + #"data: {"id":"a","name":"withdrawn","reason":"shown"}"#), text)
            }
        }
    }
}
