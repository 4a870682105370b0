import HubHostABI
import XCTest

@testable import HubHostKit

final class PluginStringTests: XCTestCase {
    /// What a plugin hands the host as text: ASCII takes the fast path, other UTF-8 is validated,
    /// and bytes that are not UTF-8 are refused.
    func testPluginTextIsAcceptedOnlyAsUTF8() {
        func text(_ bytes: [UInt8]) -> String? {
            bytes.withUnsafeBufferPointer { buffer in
                validUTF8(hh_string_t(data: UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self), length: buffer.count))
            }
        }
        XCTAssertEqual(text(Array("Location Name".utf8)), "Location Name")
        XCTAssertEqual(text(Array("Zürich 😀".utf8)), "Zürich 😀")
        XCTAssertNil(text([0x41, 0xFF, 0x42]), "not UTF-8")
        XCTAssertNil(text([0xC3]), "a truncated sequence")
        XCTAssertEqual(validUTF8(hh_string_t(data: nil, length: 0)), "")
    }
}
