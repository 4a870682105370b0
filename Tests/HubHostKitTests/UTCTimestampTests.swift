import Foundation
import XCTest

@testable import HubHostKit

/// UTCTimestamp prints what ISO8601DateFormatter prints (event views used the formatter before).
final class UTCTimestampTests: XCTestCase {
    func testSameTextAsISO8601DateFormatter() {
        let formatter = ISO8601DateFormatter()
        var values: [Int64] = [
            0, 999, 1000, 951_782_400_000, 951_868_799_999, 1_402_358_400_000, 4_102_444_800_000,
            SafeTime.validMs.upperBound, -1, SafeTime.validMs.upperBound + 1
        ]
        var state: UInt64 = 12345
        for _ in 0..<5000 {  // a fixed pseudo-random spread over the valid range
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            values.append(Int64(state >> 1) % (SafeTime.validMs.upperBound + 1))
        }
        for ms in values {
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
            XCTAssertEqual(UTCTimestamp.text(ms: ms), expected, "\(ms)")
        }
    }
}
