import XCTest

@testable import HubHostKit

final class EngageDurationTests: XCTestCase {
    private func seconds(_ text: String) throws -> Double { try EngageDuration.parse(text).get() }

    func testSeedExamples() throws {
        // The Engage seed's table, from 6/10/2014 00:00:00.
        XCTAssertEqual(try seconds("1 day 15m"), 86_400 + 15 * 60)
        XCTAssertEqual(try seconds("15m1d0seconds"), 86_400 + 15 * 60)
        XCTAssertEqual(try seconds("65minutes"), 65 * 60)
        XCTAssertEqual(try seconds("3seconds"), 3)
    }

    func testIssueExamplesAndPlainSeconds() throws {
        XCTAssertEqual(try seconds("15 sec"), 15)
        XCTAssertEqual(try seconds("1d 7h 23m 15s"), 112_995.0)
        XCTAssertEqual(try seconds("1 hr"), 3600)
        XCTAssertEqual(try seconds("30 minutes"), 1800)
        XCTAssertEqual(try seconds("90"), 90)
        XCTAssertEqual(try seconds("1.5"), 1.5)
        XCTAssertEqual(try seconds("2 Days"), 172_800)
    }

    func testBadDurationsSayWhy() {
        guard case .failure(let unit) = EngageDuration.parse("15 mintes") else { return XCTFail("accepted a bad unit") }
        XCTAssertTrue(unit.description.contains("unknown unit 'mintes'"), unit.description)
        XCTAssertTrue(unit.description.contains("did you mean 'minutes'"), unit.description)
        guard case .failure(let bare) = EngageDuration.parse("15 1d") else { return XCTFail("accepted a number without unit") }
        XCTAssertTrue(bare.description.contains("has no unit"), bare.description)
        guard case .failure(let negative) = EngageDuration.parse("-5") else { return XCTFail("accepted a negative") }
        XCTAssertTrue(negative.description.contains("negative"), negative.description)
        guard case .failure = EngageDuration.parse("") else { return XCTFail("accepted empty text") }
        guard case .failure = EngageDuration.parse("soon") else { return XCTFail("accepted a word") }
    }

    func testFormatRoundTrips() throws {
        for text in ["1d 15m", "65m", "3s", "1d 7h 23m 15s"] {
            let value = try seconds(text)
            XCTAssertEqual(try seconds(EngageDuration.format(value)), value, text)
        }
    }
}
