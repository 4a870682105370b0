import XCTest

@testable import HubHostKit

final class EventIDTests: XCTestCase {
    func testVersion7LayoutTimeOrderAndUniqueness() throws {
        let id = EventID.make(nowMs: 0x0123_4567_89AB)
        XCTAssertEqual(id.count, 36)
        XCTAssertTrue(id.hasPrefix("01234567-89ab-7"), id)
        XCTAssertNotNil(UUID(uuidString: id), "a valid UUID")
        let variant = id[id.index(id.startIndex, offsetBy: 19)]
        XCTAssertTrue("89ab".contains(variant), "RFC 9562 variant: \(id)")
        // Later milliseconds sort after earlier ones, whatever the random bits.
        let earlier = (0..<100).map { EventID.make(nowMs: 1_700_000_000_000 + Int64($0)) }
        XCTAssertEqual(earlier, earlier.sorted())
        XCTAssertEqual(Set((0..<10_000).map { _ in EventID.make(nowMs: 1_700_000_000_000) }).count, 10_000, "unique within one millisecond")
    }

    /// The random words come from one buffer refilled 4 KiB at a time: ids made on many threads at
    /// once, across many refills, are all distinct, and their random bits are not constant.
    func testIdsFromManyThreadsAcrossRefillsAreDistinct() {
        let threads = 8
        let perThread = 5_000  // 40,000 ids: 156 refills of 256 pairs
        let lock = NSLock()
        nonisolated(unsafe) var all: [String] = []
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            let ids = (0..<perThread).map { _ in EventID.make(nowMs: 1_700_000_000_000) }
            lock.withLock { all += ids }
        }
        XCTAssertEqual(all.count, threads * perThread)
        XCTAssertEqual(Set(all).count, threads * perThread, "every id distinct")
        XCTAssertTrue(all.allSatisfy { $0.hasPrefix("018bcfe5-6800-7") && UUID(uuidString: $0) != nil })
        // The variant nibble takes all four values 8, 9, a, b: its two low bits are random.
        XCTAssertEqual(Set(all.map { $0[$0.index($0.startIndex, offsetBy: 19)] }), ["8", "9", "a", "b"])
    }
}
