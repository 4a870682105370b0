import Foundation
import XCTest

@testable import HubHostKit

/// The page-view recorder's queue: in order, bounded (a full queue refuses the event loop and
/// makes the blocking pool wait, losing nothing), and drained on request.
final class HubViewRecorderTests: XCTestCase {
    /// A view that names itself through its channel id.
    private func view(_ number: Int) -> HubViewRecorder.View {
        var view = HubViewRecorder.View()
        view.channel = ContentBundle.Channel(id: "c\(number)", hubID: "h", title: "C\(number)", tags: [], position: number, articles: [])
        return view
    }

    private final class Recorded: @unchecked Sendable {
        let lock = NSLock()
        var batches: [[String]] = []
        /// Held by the test to keep the recorder busy.
        let gate = NSLock()
        /// Signalled when a batch starts recording.
        let started = DispatchSemaphore(value: 0)
        var all: [String] { lock.withLock { batches.flatMap { $0 } } }
    }

    func testViewsAreRecordedInOrderAndDrainWaitsForThem() {
        let recorded = Recorded()
        let recorder = HubViewRecorder(capacity: 64) { views in
            recorded.gate.withLock {}
            recorded.lock.withLock { recorded.batches.append(views.compactMap { $0.channel?.id }) }
        }
        recorded.gate.lock()  // the first drain blocks until released
        for number in 0..<50 {
            XCTAssertTrue(recorder.reserve(wait: false))
            recorder.submit(view(number))
        }
        XCTAssertFalse(recorder.waitUntilDrained(timeoutSeconds: 0.2), "the recording is held: not drained")
        XCTAssertEqual(recorder.counts.pending, 50)
        recorded.gate.unlock()
        XCTAssertTrue(recorder.waitUntilDrained())
        XCTAssertEqual(recorded.all, (0..<50).map { "c\($0)" }, "every view, in order")
        XCTAssertEqual(recorder.counts.pending, 0)
        XCTAssertEqual(recorder.counts.recorded, 50)
        XCTAssertLessThan(recorded.batches.count, 50, "views queued meanwhile are recorded together")

        // Empty views and cancelled reservations record nothing and free their place.
        XCTAssertTrue(recorder.reserve(wait: false))
        recorder.cancel()
        recorder.add(HubViewRecorder.View())
        XCTAssertTrue(recorder.waitUntilDrained())
        XCTAssertEqual(recorder.counts.recorded, 50)
    }

    func testAFullQueueRefusesTheEventLoopAndMakesTheBlockingPathWaitWithoutLosingViews() {
        let recorded = Recorded()
        let recorder = HubViewRecorder(capacity: 3) { views in
            recorded.started.signal()
            recorded.gate.withLock {}
            recorded.lock.withLock { recorded.batches.append(views.compactMap { $0.channel?.id }) }
        }
        recorded.gate.lock()
        // The first view is taken by the drain (held at the gate); then three fill the queue.
        recorder.add(view(0))
        XCTAssertEqual(recorded.started.wait(timeout: .now() + 30), .success, "the drain took the first view")
        for number in 1...3 { recorder.add(view(number)) }
        XCTAssertFalse(recorder.reserve(wait: false), "full: the event loop's path is refused (the route then takes the blocking pool)")

        // A blocking caller waits for room; it gets in once the drain takes the queue.
        let added = expectation(description: "the waiting view was added")
        let fourth = view(4)
        DispatchQueue.global().async {
            recorder.add(fourth)
            added.fulfill()
        }
        XCTAssertEqual(recorder.counts.pending, 4, "still waiting: nothing was dropped to make room")
        recorded.gate.unlock()
        wait(for: [added], timeout: 30)
        XCTAssertTrue(recorder.waitUntilDrained())
        XCTAssertEqual(recorded.all, ["c0", "c1", "c2", "c3", "c4"])
        XCTAssertTrue(recorder.reserve(wait: false), "room again")
        recorder.cancel()
    }
}
