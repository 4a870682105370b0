import Foundation
import XCTest

@testable import HubHostKit

/// When augmentation work is spread over threads: only when the runs measured so far say it is
/// long enough to earn the hand-over.
final class SpreadEstimateTests: XCTestCase {
    func testARunIsSpreadUntilOneWasMeasuredAndOneItemNever() {
        let estimate = SpreadEstimate()
        XCTAssertTrue(estimate.worthSpreading(2))
        XCTAssertFalse(estimate.worthSpreading(1))
        XCTAssertFalse(estimate.worthSpreading(0))
    }

    func testFastItemsAreSpreadOnlyInALongRun() {
        let estimate = SpreadEstimate()
        estimate.record(ns: 20_000, items: 20)  // 1 µs an item
        XCTAssertFalse(estimate.worthSpreading(20))
        XCTAssertFalse(estimate.worthSpreading(100))
        XCTAssertTrue(estimate.worthSpreading(101))
    }

    func testSlowItemsAreSpreadAndTheEstimateFollowsTheLastRuns() {
        let estimate = SpreadEstimate()
        estimate.record(ns: 1_000, items: 1)
        XCTAssertFalse(estimate.worthSpreading(2))
        for _ in 0..<20 { estimate.record(ns: 5_000_000, items: 1) }  // the plugins became slow (I/O)
        XCTAssertTrue(estimate.worthSpreading(2))
        for _ in 0..<40 { estimate.record(ns: 500, items: 1) }  // and fast again
        XCTAssertFalse(estimate.worthSpreading(2))
    }

    func testAHugeEstimateDoesNotOverflow() {
        let estimate = SpreadEstimate()
        estimate.record(ns: UInt64.max, items: 1)
        XCTAssertTrue(estimate.worthSpreading(Int.max))
        estimate.record(ns: 5, items: 0)  // nothing to learn from no items
        XCTAssertTrue(estimate.worthSpreading(2))
    }

    /// Fast work stays on the calling thread; slow work is spread (this machine and CI have two
    /// cores or more), and every index runs once.
    func testConcurrentlyRunsFastWorkOnTheCallingThreadAndSpreadsSlowWork() {
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var threads = Set<String>()
            var indexes: [Int] = []
        }
        func run(_ count: Int, estimate: SpreadEstimate, pauseUs: UInt32) -> Seen {
            let seen = Seen()
            AugmentationTimeline.concurrently(count, estimate: estimate) { i in
                if pauseUs > 0 { usleep(pauseUs) }
                let thread = "\(pthread_self())"
                seen.lock.withLock {
                    seen.threads.insert(thread)
                    seen.indexes.append(i)
                }
            }
            return seen
        }
        let fast = SpreadEstimate()
        fast.record(ns: 200, items: 1)
        let ran = run(50, estimate: fast, pauseUs: 0)
        XCTAssertEqual(ran.indexes, Array(0..<50))
        XCTAssertEqual(ran.threads, ["\(pthread_self())"])

        let slow = SpreadEstimate()
        slow.record(ns: 2_000_000, items: 1)
        let spread = run(8, estimate: slow, pauseUs: 2_000)
        XCTAssertEqual(spread.indexes.sorted(), Array(0..<8))
        XCTAssertGreaterThan(spread.threads.count, 1)
        XCTAssertTrue(slow.worthSpreading(2), "the slow run was recorded as slow")
    }
}
