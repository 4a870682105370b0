import Foundation
import HubHostABI
import Synchronization
import XCTest

@testable import HubHostKit

/// The location answered to C plugins ("hubhost.location.v1"): one block of C text per location,
/// lent to every caller and freed after the last release.
final class LocationCTextTests: XCTestCase {
    private static func text(_ s: hh_string_t) -> String? {
        guard let data = s.data else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: s.length), as: UTF8.self)
    }

    /// Lent from eight threads at once, a thousand times each: every loan reads the location's
    /// strings, NUL-terminated; the block outlives the service's own reference while a loan is
    /// out, and is freed once the last one is released.
    func testLoansFromManyThreadsReadTheTextAndTheLastReleaseFreesIt() {
        let place = Location(
            latitude: 47.6097, longitude: -122.3422, timeMs: 5, locationID: "pike-1", name: "Pike Place Market", address: "85 Pike St, Seattle")
        weak var freed: LocationCText?
        var kept: hh_location_t = hh_location_t()
        do {
            let shared = LocationCText(place)
            freed = shared
            shared.lend(to: &kept)  // one loan outlives every Swift reference
            let failures = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                for _ in 0..<1000 {
                    var out = hh_location_t()
                    shared.lend(to: &out)
                    let good =
                        out.has_coordinates && out.latitude == 47.6097 && out.longitude == -122.3422 && out.time_ms == 5
                        && Self.text(out.location_id) == "pike-1" && Self.text(out.name) == "Pike Place Market"
                        && Self.text(out.address) == "85 Pike St, Seattle" && out.name.data![out.name.length] == 0
                    if !good { failures.withLock { $0 += 1 } }
                    LocationCText.release(&out)
                    if out.location_id.data != nil || out.name.length != 0 { failures.withLock { $0 += 1 } }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, 0)
        }
        XCTAssertNotNil(freed, "a loan still out keeps the block")
        XCTAssertEqual(Self.text(kept.name), "Pike Place Market")
        LocationCText.release(&kept)
        XCTAssertNil(freed, "the last release frees it")
    }

    /// A location with no id, name or address answers them as length 0 (name and address with no
    /// bytes at all); releasing a zero-filled location, or one released already, does nothing.
    func testEmptyFieldsAndAZeroFilledLocation() {
        var out = hh_location_t()
        LocationCText(Location()).lend(to: &out)
        XCTAssertFalse(out.has_coordinates)
        XCTAssertEqual(out.location_id.length, 0)
        XCTAssertNil(out.name.data)
        XCTAssertNil(out.address.data)
        LocationCText.release(&out)
        LocationCText.release(&out)
        var zero = hh_location_t()
        LocationCText.release(&zero)
        XCTAssertNil(zero.location_id.data)
    }

    /// The service answers a fixed or cached location with one block for every call (the same
    /// bytes lent again), and a new block once a new location is cached.
    func testTheServiceSharesOneBlockPerLocation() throws {
        let service = LocationService(fixed: Location(latitude: 1, longitude: 2, name: "Here"))
        let (first, firstStatus) = service.currentText(maxAgeMs: 0, timeoutMs: 0)
        let (second, _) = service.currentText(maxAgeMs: 0, timeoutMs: 0)
        XCTAssertEqual(firstStatus, HH_OK)
        XCTAssertTrue(try XCTUnwrap(first) === second, "one block for the fixed location")
        var out = hh_location_t()
        first?.lend(to: &out)
        XCTAssertEqual(Self.text(out.name), "Here")
        LocationCText.release(&out)

        let none = LocationService()
        let (missing, status) = none.currentText(maxAgeMs: 1000, timeoutMs: 10)
        XCTAssertNil(missing)
        XCTAssertEqual(status, HH_ERR_UNAVAILABLE, "no delegate")
    }

    /// Through the C table a plugin gets ("hubhost.location.v1"): `out` is zero-filled whatever the
    /// answer (a location left from before included), two answers lend the same bytes, and each
    /// release zero-fills the location it was given.
    func testTheExtensionZeroFillsAndLendsTheSameBytes() throws {
        let table = HostExtensions.location.pointee
        let none = HostServices(
            instanceID: "t", config: [:], dataDirectory: NSTemporaryDirectory(), pipeline: LogPipeline(),
            environment: HostEnvironment(location: LocationService()))
        var stale = hh_location_t()
        stale.has_coordinates = true
        stale.latitude = 9
        stale.time_ms = 9
        XCTAssertEqual(table.get_location(none.table, 1000, 10, &stale), HH_ERR_UNAVAILABLE, "no delegate")
        XCTAssertFalse(stale.has_coordinates)
        XCTAssertEqual(stale.time_ms, 0)
        XCTAssertNil(stale.location_id.data)
        XCTAssertEqual(table.get_location(none.table, 1000, 10, nil), HH_ERR_INVALID_ARGUMENT)

        let here = HostServices(
            instanceID: "t", config: [:], dataDirectory: NSTemporaryDirectory(), pipeline: LogPipeline(),
            environment: HostEnvironment(location: LocationService(fixed: Location(latitude: 1, longitude: 2, name: "Here"))))
        var first = hh_location_t()
        var second = hh_location_t()
        XCTAssertEqual(table.get_location(here.table, 1000, 10, &first), HH_OK)
        XCTAssertEqual(table.get_location(here.table, 1000, 10, &second), HH_OK)
        XCTAssertEqual(Self.text(first.name), "Here")
        XCTAssertEqual(first.latitude, 1)
        XCTAssertEqual(first.name.data, second.name.data, "one block lent to both")
        table.release_location(here.table, &first)
        XCTAssertNil(first.name.data)
        XCTAssertEqual(Self.text(second.name), "Here", "still lent to the second")
        table.release_location(here.table, &second)
        XCTAssertNil(second.location_id.data)
    }
}
