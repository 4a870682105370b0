import Foundation
import XCTest

@testable import HubHostKit

/// UserCache's JSON is written by hand (every campaign state change writes it); JSONDecoder, which
/// reads it back, must get the same cache.
final class UserCacheJSONTests: XCTestCase {
    func testJSONDecoderReadsBackTheSameCache() throws {
        let controls = String(decoding: (0..<32).map { UInt8($0) }, as: UTF8.self)
        let ids = ["c1", "with \"quotes\" and \\backslash\\", "a/b", controls, "é 中文 🎉", ""]
        var cache = UserCache()
        XCTAssertEqual(try JSONDecoder().decode(UserCache.self, from: Data(cache.json.utf8)), cache)
        for (n, id) in ids.enumerated() {
            cache.impressionsLeft[id] = n - 2
            cache.knownMaxImpressions[id] = Int.max - n
            if n % 2 == 0 { cache.optedOut.insert(id) }
            cache.satisfied[id] = Set(0..<n)
            cache.queue.append(id)
        }
        XCTAssertEqual(try JSONDecoder().decode(UserCache.self, from: Data(cache.json.utf8)), cache)
        cache.current = ids[1]
        XCTAssertEqual(try JSONDecoder().decode(UserCache.self, from: Data(cache.json.utf8)), cache)
        // The frequency caps' times, the session count and the campaigns put back for later.
        cache.shownAt = [1, Int64.max, -5]
        cache.lastShownAt = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, Int64($0) * 1_000_000_007) })
        cache.session = .init(startMs: 1_795_400_000_000, count: 3)
        cache.later = [ids[0], ids[3]]
        XCTAssertEqual(try JSONDecoder().decode(UserCache.self, from: Data(cache.json.utf8)), cache)
        cache.shownAt = []
        cache.lastShownAt = [:]
        cache.later = []
        XCTAssertEqual(try JSONDecoder().decode(UserCache.self, from: Data(cache.json.utf8)), cache)
    }
}
