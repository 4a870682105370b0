import Foundation
import GRDB
import XCTest

@testable import HubHostKit

/// The inputs the fuzzing (FuzzTests) found to crash or stall hubhost, each as its own test. Every
/// case runs in a child process (the hubhost executable, or this test binary on one fuzz case), so
/// a trap fails the test instead of ending the suite.
final class FuzzFindingsTests: FolderTestCase {
    /// Runs hubhost in the test's folder; `reason` says how it ended (a trap is `.uncaughtSignal`).
    /// A trap still shows its message; the backtrace (seconds per crash) is left out. 120 s at most.
    private func hubhost(_ arguments: [String]) throws -> CommandResult {
        try TestSupport.hubhost(arguments, in: folder, environment: ["SWIFT_BACKTRACE": "enable=no"])
    }

    /// A valid bundle whose `table` is rebuilt without its constraints, then changed by `damage`.
    private func bundle(_ table: String, _ damage: String) throws -> String {
        let path = folder + "/\(table)-\(UUID().uuidString).sqlite3"
        try TestBundle.write(
            to: path, hubs: [.init("news", tags: ["news"], channels: [.init("sports", articles: [.init("final", tags: ["x"])])])],
            notifications: [.init(id: "n1", fireAtMs: 1_402_358_400_000, message: "hi", actionURI: "zbimdb://article/news/sports/final")])
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(
                sql: """
                    PRAGMA foreign_keys = OFF;
                    CREATE TABLE t AS SELECT * FROM \(table); DROP TABLE \(table); ALTER TABLE t RENAME TO \(table);
                    \(damage)
                    """)
        }
        try queue.close()
        return path
    }

    /// Found by FuzzTests (bundle-rows): a bundle row holding NULL, a blob or text where the reader
    /// expects text or an integer trapped in GRDB's Row subscript ("Fatal error: could not decode
    /// String from database value NULL", Host/HubHostKit/Hub/ContentBundle.swift, readStructure,
    /// `let text: String = row["tags"]` and every `row["..."]` there). SIGILL instead of
    /// "not a hubhost content bundle" from `hubhost bundle inspect`, and from every start of
    /// `serve`/`hub status` whose `hub.preloaded_bundle` is such a file (a preloaded bundle without
    /// its .json is opened unverified).
    func testABundleRowOfTheWrongTypeIsRefusedNotATrap() throws {
        let damages = [
            ("hubs", "UPDATE hubs SET tags = NULL"), ("metadata", "UPDATE metadata SET value = X'FF00FE' WHERE key = 'version'"),
            ("hubs", "UPDATE hubs SET position = 'first'"), ("articles", "UPDATE articles SET title = NULL"),
            ("channels", "UPDATE channels SET hub_id = 7"), ("notifications", "UPDATE notifications SET fire_at_ms = 'soon'"),
            ("notifications", "UPDATE notifications SET fire_at_ms = 1e300")
        ]
        for (table, damage) in damages {
            let path = try bundle(table, damage)
            let inspected = try hubhost(["bundle", "inspect", path])
            XCTAssertEqual(inspected.reason, .exit, "\(damage): `hubhost bundle inspect` trapped: \(inspected.stderr.prefix(400))")
            XCTAssertEqual(inspected.status, 1, "\(damage)")
            XCTAssertTrue(inspected.stderr.contains("not a hubhost content bundle"), "\(damage): \(inspected.stderr.prefix(400))")
        }
    }

    /// Found by FuzzTests (bundle-bytes, case 50): a bundle file with two pages swapped and a page
    /// header changed passes SQLite's open and reads, but its `metadata` query returns a row of the
    /// notifications table (value 1402358400000, an integer), and the reader traps on it as above.
    /// The file is Tests/Fixtures/fuzz/bundles/page-swapped.sqlite3.
    func testAPageSwappedBundleFileIsRefusedNotATrap() throws {
        let fixture = TestSupport.repository + "/Tests/Fixtures/fuzz/bundles/page-swapped.sqlite3"
        let inspected = try hubhost(["bundle", "inspect", fixture])
        XCTAssertEqual(inspected.reason, .exit, "`hubhost bundle inspect` trapped: \(inspected.stderr.prefix(400))")
        XCTAssertEqual(inspected.status, 1)
    }

    /// The same trap at startup: `serve` with a damaged preloaded bundle (no .json beside it, so not
    /// verified) dies before it listens, at every start. It should start without the bundle and say why.
    /// serve runs in this process (InProcessAPI, its services running): its host, hub and services
    /// open as serve opens them.
    func testServeStartsBesideADamagedPreloadedBundle() async throws {
        let damaged = try bundle("hubs", "UPDATE hubs SET tags = NULL")
        try TestSupport.write("data_dir: data\nserver: {port: 0}\nhub: {preloaded_bundle: \(damaged)}\nplugins: []\n", to: folder + "/plugins.yaml")
        let status = try hubhost(["hub", "status", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(status.reason, .exit, "`hubhost hub status` trapped: \(status.stderr.prefix(400))")
        let health: Result<Int, any Error>
        do {
            health = try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
                try await TestSupport.offPool { Result { try ListeningAPI(port: port).call("GET", "/v1/health").0 } }
            }
        } catch {
            return XCTFail("serve did not start beside a damaged preloaded bundle: \(error)")
        }
        XCTAssertEqual(try health.get(), 200)
    }

    /// Found by FuzzTests (events, case 1156): a plain JSON integer attribute from 2^63 to 2^64-1 is
    /// stored wrapped to another, negative, integer: 18446744073709551615 as -1, 9223372036854775808
    /// as -9223372036854775808, 12345678901234567890 as -6101065172474983726 (`POST /v1/events`,
    /// `track --stdin`). JSONSerialization gives such a number as an unsigned NSNumber and
    /// EventInput.value takes its int64Value (Host/HubHostKit/Events/EventInput.swift, `.int(number.int64Value)`).
    /// It should be refused with the field named, or kept as the number it is (a double).
    func testAnIntegerAttributeBeyond64BitsIsNotWrapped() throws {
        for number in ["18446744073709551615", "9223372036854775808", "12345678901234567890"] {
            let events: [Event]
            do { events = try EventInput.parse(Data(#"{"name": "x", "attributes": {"n": \#(number)}}"#.utf8)) } catch is EventInput.Problem {
                continue  // refused: fine
            }
            let stored = try XCTUnwrap(events.first?.attributes.first?.value)
            switch stored {
            case .int(let value): XCTFail("\(number) was stored as the integer \(value)")
            case .double(let value): XCTAssertEqual(value, Double(number)!, accuracy: Double(number)! * 1e-12, number)
            default: XCTFail("\(number) was stored as \(stored)")
            }
        }
    }

    /// Found by FuzzTests (events): an unknown event key, type or purchase key is answered with a
    /// "did you mean" hint computed by Suggestion.closest, an edit distance over the whole word
    /// with an (n+1)-row matrix of arrays (Host/HubHostKit/Manifest/Suggestion.swift). On a word of
    /// n characters that is n+1 arrays and ~20·n steps per candidate: `hubhost track --stdin` with a
    /// 1 MB unknown key took 21 s and 187 MB (debug build), with 4 MB 105 s and 644 MB; one
    /// POST /v1/events up to the 16 MiB body limit ties up a thread for minutes and takes gigabytes.
    /// A refusal should cost what reading the body costs (a word longer than every candidate by more
    /// than a third cannot be a typo of one). The three inputs (4 MiB words) run in a child process,
    /// bounded at 20 s in all (milliseconds once the hint skips such words).
    func testAHugeUnknownKeyOrTypeIsRefusedWithoutMinutesOfWork() throws {
        try FuzzParent.run("huge-words", cases: HugeWords.inputs.count, bound: 20, test: self)
    }
}

/// Fixed inputs for testAHugeUnknownKeyOrTypeIsRefusedWithoutMinutesOfWork, run as a fuzz target.
final class HugeWords: FuzzTarget {
    static let size = 4 << 20
    static let inputs: [@Sendable () -> String] = [
        { #"{"name": "x", "nmae"# + String(repeating: "k", count: size) + #"": 1}"# },
        { #"{"type": "named_event"# + String(repeating: "e", count: size) + #""}"# },
        {
            #"{"type": "purchase_successful", "purchase": {"amount": 1, "currency_code": "USD", "amuont"# + String(repeating: "t", count: size)
                + #"": 1}}"#
        }
    ]

    override func input(_ index: Int) -> Data { Data(Self.inputs[index]().utf8) }

    override func check(_ input: Data, index: Int) -> String? {
        do {
            _ = try EventInput.parse(input)
            return "accepted"
        } catch is EventInput.Problem {
            return nil
        } catch {
            return "threw \(error)"
        }
    }
}
