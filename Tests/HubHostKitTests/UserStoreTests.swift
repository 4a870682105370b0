import GRDB
import XCTest

@testable import HubHostKit

/// Users, the active user and tag usage counts in a real SQLite file.
final class UserStoreTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws { folder = try TestSupport.temporaryFolder(self) }

    private func open() throws -> UserStore { try UserStore(path: folder + "/users.sqlite") }

    func testCreateActivateAndUpdateCounts() throws {
        let users = try open()
        XCTAssertNil(users.activeUser())
        XCTAssertThrowsError(try users.updateTagCounts(["a": 1])) { XCTAssertEqual($0 as? UserStore.UserError, .noActiveUser) }
        let id = try users.createUser(id: "ann", tags: ["sports", "cooking", "sports"])
        XCTAssertEqual(id, "ann")
        XCTAssertEqual(try users.tagCounts(of: "ann"), ["sports": 1, "cooking": 1], "initial tags count 1 each")
        XCTAssertEqual(try users.tags(of: "ann"), ["cooking", "sports"])
        XCTAssertNil(users.activeUser(), "creating does not activate")
        XCTAssertThrowsError(try users.createUser(id: "ann")) { XCTAssertEqual($0 as? UserStore.UserError, .exists("ann")) }
        XCTAssertThrowsError(try users.activate("bob")) { XCTAssertEqual($0 as? UserStore.UserError, .unknown("bob")) }
        XCTAssertThrowsError(try users.tagCounts(of: "bob")) { XCTAssertEqual($0 as? UserStore.UserError, .unknown("bob")) }
        try users.activate("ann")
        XCTAssertEqual(users.activeUser(), "ann")
        let after = try users.updateTagCounts(["sports": 2, "cooking": -1, "golf": 1, "chess": -3])
        XCTAssertEqual(after, ["sports": 3, "golf": 1], "cooking dropped to zero and was removed; chess never existed")
        XCTAssertEqual(try users.tagCounts(of: "ann"), after)
        XCTAssertEqual(try users.updateTagCounts(["sports": -10]), ["golf": 1], "below zero removes the tag too")
    }

    /// activeUser() is cached (checked with PRAGMA data_version): a second store on the same file,
    /// as another process would have, switches users and the first one answers the new user at once.
    func testTheCachedActiveUserFollowsASwitchMadeThroughAnotherConnection() throws {
        let serve = try open()
        let cli = try open()
        try cli.createUser(id: "ann", tags: ["a"])
        try cli.createUser(id: "bob", tags: ["b"])
        XCTAssertNil(serve.activeUser())
        XCTAssertNil(serve.activeUser(), "cached: still none")
        try cli.activate("ann")
        XCTAssertEqual(serve.activeUser(), "ann")
        XCTAssertEqual(serve.activeUser(), "ann")
        try cli.activate("bob")
        XCTAssertEqual(serve.activeUser(), "bob")
        try serve.activate("ann")  // its own pool's writer is another connection too
        XCTAssertEqual(serve.activeUser(), "ann")
        XCTAssertEqual(cli.activeUser(), "ann")

        // learn() adds a batch of reads to the user active when it writes.
        XCTAssertEqual(try cli.learn([["x": 1], [:], ["x": 1, "y": 1]]), "ann")
        XCTAssertEqual(try serve.tagCounts(of: "ann"), ["a": 1, "x": 2, "y": 1])
        try cli.activate("bob")
        XCTAssertEqual(try serve.learn([["x": 1]]), "bob")
        XCTAssertEqual(try serve.tagCounts(of: "bob"), ["b": 1, "x": 1])
        XCTAssertEqual(try serve.tagCounts(of: "ann"), ["a": 1, "x": 2, "y": 1])
    }

    func testGeneratedIDsAndValidation() throws {
        let users = try open()
        let first = users.generateID()
        let second = users.generateID()
        XCTAssertNotEqual(first, second)
        XCTAssertNotNil(UUID(uuidString: first), first)
        let created = try users.createUser(id: nil, tags: [])
        XCTAssertNotNil(UUID(uuidString: created), created)
        XCTAssertEqual(try users.list().map(\.id), [created])
        XCTAssertThrowsError(try users.createUser(id: "")) { XCTAssertEqual($0 as? UserStore.UserError, .invalidID("it is empty")) }
        XCTAssertThrowsError(try users.createUser(id: "x", tags: [""]))
        XCTAssertEqual(try users.list().count, 1, "a refused user is not created")
    }

    func testSeveralUsersOneActiveAndEverythingSurvivesAReopen() throws {
        do {
            let users = try open()
            try users.createUser(id: "ann", tags: ["sports"])
            try users.createUser(id: "bob", tags: ["cooking"])
            try users.activate("ann")
            try users.updateTagCounts(["sports": 4])
            try users.activate("bob")
            try users.updateTagCounts(["baking": 2])
        }
        let users = try open()
        XCTAssertEqual(users.activeUser(), "bob")
        XCTAssertEqual(try users.list().map(\.id).sorted(), ["ann", "bob"])
        XCTAssertEqual(try users.list().filter(\.isActive).map(\.id), ["bob"], "exactly one user is active")
        XCTAssertEqual(try users.tagCounts(of: "ann"), ["sports": 5], "ann kept her profile while bob was active")
        XCTAssertEqual(try users.tagCounts(of: "bob"), ["cooking": 1, "baking": 2])
        XCTAssertEqual(users.activeTagCounts(), ["cooking": 1, "baking": 2])
        let journal = try users.pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        XCTAssertEqual(journal, "wal")
    }
}
