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
}
