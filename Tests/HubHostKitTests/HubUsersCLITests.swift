import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost users`, `hubhost hub present`, `hubhost notifications` and their HTTP routes, run as a
/// user runs them: child processes of the built executable on a real data directory.
final class HubUsersCLITests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            hub: {custom_url_schemes: [myapp]}
            plugins: []
            """, to: folder + "/plugins.yaml")
        try TestBundle.write(
            to: folder + "/bundle.sqlite3",
            hubs: [
                .init(
                    "news", tags: ["news"],
                    channels: [
                        .init("sports", articles: [.init("a", tags: ["golf"], sourceURL: "https://example.com/a"), .init("b", tags: ["football"])])
                    ]),
                .init("food", tags: ["cooking"], channels: [.init("baking", articles: [.init("bread", tags: ["cooking"])])])
            ],
            notifications: [
                .init(id: "past", fireAtMs: 1_000, message: "Read the final", actionURI: "zbimdb://article/news/sports/b"),
                .init(id: "future", fireAtMs: 4_000_000_000_000, message: "Later", actionURI: "zbimdb://hub/food")
            ])
    }

    func testUsersCommands() throws {
        let created = try TestSupport.hubhost(["users", "create", "--id", "ann", "--tags", "golf, news", "--json"], in: folder)
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertEqual((try created.json as? [String: Any])?["tagCounts"] as? [String: Int], ["golf": 1, "news": 1])
        let duplicate = try TestSupport.hubhost(["users", "create", "--id", "ann"], in: folder)
        XCTAssertEqual(duplicate.status, 1)
        XCTAssertTrue(duplicate.stderr.contains("user 'ann' already exists"), duplicate.stderr)
        let generated = try TestSupport.hubhost(["users", "create"], in: folder)
        XCTAssertEqual(generated.status, 0, generated.stderr)
        XCTAssertNotNil(UUID(uuidString: generated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), generated.stdout)
        XCTAssertNotNil(
            UUID(uuidString: try TestSupport.hubhost(["users", "generate-id"], in: folder).stdout.trimmingCharacters(in: .whitespacesAndNewlines)))

        let none = try TestSupport.hubhost(["users", "active"], in: folder)
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stdout.contains("no user is active"), none.stdout)
        let noActive = try TestSupport.hubhost(["users", "update-tag-counts", "golf=+1"], in: folder)
        XCTAssertEqual(noActive.status, 1)
        XCTAssertTrue(noActive.stderr.contains("no user is active"), noActive.stderr)
        XCTAssertEqual(try TestSupport.hubhost(["users", "activate", "nobody"], in: folder).status, 1)
        XCTAssertEqual(try TestSupport.hubhost(["users", "activate", "ann"], in: folder).status, 0)
        XCTAssertEqual(try TestSupport.hubhost(["users", "active"], in: folder).stdout, "ann\n")

        let updated = try TestSupport.hubhost(["users", "update-tag-counts", "golf=+2", "news=-1", "cooking=3", "--json"], in: folder)
        XCTAssertEqual(updated.status, 0, updated.stderr)
        XCTAssertEqual(try updated.json as? [String: Int], ["golf": 3, "cooking": 3], "news dropped to zero and was removed")
        XCTAssertEqual(try TestSupport.hubhost(["users", "tags", "ann", "--json"], in: folder).json as? [String], ["cooking", "golf"])
        let counts = try TestSupport.hubhost(["users", "tag-counts", "ann"], in: folder)
        XCTAssertTrue(counts.stdout.contains("cooking  3"), counts.stdout)
        let bad = try TestSupport.hubhost(["users", "update-tag-counts", "golf=lots"], in: folder)
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("'lots' is not a whole number"), bad.stderr)

        let list = try TestSupport.hubhost(["users", "list", "--json"], in: folder).json(as: [[String: Any]].self)
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.filter { $0["isActive"] as? Bool == true }.compactMap { $0["id"] as? String }, ["ann"])
    }

    func testHubPresentCommand() throws {
        XCTAssertEqual(try TestSupport.hubhost(["users", "create", "--id", "ann", "--tags", "cooking"], in: folder).status, 0)
        XCTAssertEqual(try TestSupport.hubhost(["users", "activate", "ann"], in: folder).status, 0)
        let tailored = try TestSupport.hubhost(["hub", "present", "--bundle", "bundle.sqlite3"], in: folder)
        XCTAssertEqual(tailored.status, 0, tailored.stderr)
        XCTAssertTrue(tailored.stdout.hasPrefix("hub: food  \"Food\"  [cooking]"), tailored.stdout)
        let override = try XCTUnwrap(
            try TestSupport.hubhost(["hub", "present", "--bundle", "bundle.sqlite3", "--tags", "football,news", "--json"], in: folder).json
                as? [String: Any])
        XCTAssertEqual(override["hubID"] as? String, "news")
        let articles = ((override["channels"] as? [[String: Any]])?.first?["articles"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        XCTAssertEqual(articles, ["news/sports/b", "news/sports/a"], "football first")
        let deepLink = try TestSupport.hubhost(["hub", "present", "--bundle", "bundle.sqlite3", "--uri", "myapp://article/news/sports/a"], in: folder)
        XCTAssertTrue(deepLink.stdout.contains("opens: zbimdb://article/news/sports/a"), deepLink.stdout)
        let indexed = try TestSupport.hubhost(
            ["hub", "present", "--bundle", "bundle.sqlite3", "--uri", "https://example.com/a", "--entry-point", "search"], in: folder)
        XCTAssertTrue(indexed.stdout.contains("opens: zbimdb://article/news/sports/a"), indexed.stdout)
        let missing = try TestSupport.hubhost(["hub", "present", "--bundle", "bundle.sqlite3", "--uri", "https://example.com/nope"], in: folder)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(
            missing.stderr.contains("an article whose source URL is https://example.com/nope is not in the active content bundle"), missing.stderr)
        let both = try TestSupport.hubhost(["hub", "present", "--tags", "a", "--uri", "zbimdb://hub/news"], in: folder)
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.stderr.contains("not both"), both.stderr)
        let noBundle = try TestSupport.hubhost(["hub", "present"], in: folder)
        XCTAssertEqual(noBundle.status, 1)
        XCTAssertTrue(noBundle.stderr.contains("no verified content bundle is active yet"), noBundle.stderr)

        let events = try TestSupport.hubhost(["events", "list", "--json", "--manifest", "plugins.yaml"], in: folder).json(as: [[String: Any]].self)
        let presented = events.filter { $0["name"] as? String == "Hub Presented" }
        XCTAssertEqual(presented.count, 4, "each successful present tracked once")
        let entryPoints = presented.compactMap { ($0["attributes"] as? [String: Any])?["Entry Point"] as? String }
        XCTAssertEqual(entryPoints, ["search"], "only the presentation it was set for")
    }

    func testLocalNotificationsCommands() throws {
        let due = try TestSupport.hubhost(["notifications", "due", "--bundle", "bundle.sqlite3", "--json"], in: folder)
        XCTAssertEqual(due.status, 0, due.stderr)
        XCTAssertEqual((try due.json as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["past"])
        let handled = try TestSupport.hubhost(["notifications", "handle", "past", "--bundle", "bundle.sqlite3"], in: folder)
        XCTAssertEqual(handled.status, 0, handled.stderr)
        XCTAssertEqual(handled.stdout, "alert: Read the final\npresent: zbimdb://article/news/sports/b\n")
        let noAlert = try XCTUnwrap(
            try TestSupport.hubhost(["notifications", "handle", "future", "--no-alert", "--bundle", "bundle.sqlite3", "--json"], in: folder).json
                as? [String: Any])
        XCTAssertEqual(noAlert["ours"] as? Bool, true)
        XCTAssertEqual(noAlert["showAlert"] as? Bool, false)
        XCTAssertEqual(noAlert["uri"] as? String, "zbimdb://hub/food")
        let notOurs = try TestSupport.hubhost(["notifications", "handle", "someone-elses", "--bundle", "bundle.sqlite3", "--json"], in: folder)
        XCTAssertEqual(notOurs.status, 3)
        XCTAssertEqual((try notOurs.json as? [String: Any])?["ours"] as? Bool, false)
        XCTAssertEqual(
            try TestSupport.hubhost(["notifications", "due", "--bundle", "bundle.sqlite3"], in: folder).stdout, "no local notification is due\n",
            "handled notifications are no longer due")
        XCTAssertTrue(try TestSupport.hubhost(["notifications", "--help"], in: folder).stdout.contains("handle"))
    }

    func testUserRoutesInServe() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                func call(_ method: String, _ path: String, _ body: String? = nil) throws -> (Int, Any) { try server.call(method, path, body) }
                func error(_ value: Any) -> String { ((value as? [String: Any])?["error"] as? [String: Any])?["message"] as? String ?? "\(value)" }

                let (createdStatus, created) = try call("POST", "/v1/users", #"{"id": "ann", "tags": ["golf"]}"#)
                XCTAssertEqual(createdStatus, 201, "\(created)")
                XCTAssertEqual((created as? [String: Any])?["tagCounts"] as? [String: Int], ["golf": 1])
                let (conflict, conflictBody) = try call("POST", "/v1/users", #"{"id": "ann"}"#)
                XCTAssertEqual(conflict, 409)
                XCTAssertTrue(error(conflictBody).contains("already exists"), error(conflictBody))
                XCTAssertEqual(try call("POST", "/v1/users", #"{"tags": "golf"}"#).0, 400)
                let (_, generated) = try call("POST", "/v1/users/generate-id")
                XCTAssertNotNil(UUID(uuidString: (generated as? [String: String])?["id"] ?? ""), "\(generated)")
                XCTAssertEqual(try call("POST", "/v1/users", "").0, 201, "an empty body creates a user with a generated id")
                XCTAssertEqual((try call("GET", "/v1/users").1 as? [[String: Any]])?.count, 2)
                XCTAssertTrue((try call("GET", "/v1/users/active").1 as? [String: Any])?["active"] is NSNull, "no user is active yet")
                let (noActive, noActiveBody) = try call("POST", "/v1/users/active/tag-counts", #"{"golf": 1}"#)
                XCTAssertEqual(noActive, 404)
                XCTAssertTrue(error(noActiveBody).contains("no user is active"), error(noActiveBody))
                XCTAssertEqual(try call("POST", "/v1/users/nobody/activate").0, 404)
                XCTAssertEqual(try call("POST", "/v1/users/ann/activate").0, 200)
                XCTAssertEqual((try call("GET", "/v1/users/active").1 as? [String: String])?["active"], "ann")
                let (updated, counts) = try call("POST", "/v1/users/active/tag-counts", #"{"golf": 2, "news": 1, "chess": -1}"#)
                XCTAssertEqual(updated, 200)
                XCTAssertEqual(counts as? [String: Int], ["golf": 3, "news": 1])
                XCTAssertEqual(try call("POST", "/v1/users/active/tag-counts", #"{"golf": "many"}"#).0, 400)
                XCTAssertEqual(try call("POST", "/v1/users/active/tag-counts", #"{"golf": 1.5}"#).0, 400)
                XCTAssertEqual(try call("GET", "/v1/users/ann/tags").1 as? [String], ["golf", "news"])
                XCTAssertEqual(try call("GET", "/v1/users/ann/tag-counts").1 as? [String: Int], ["golf": 3, "news": 1])
                XCTAssertEqual(try call("GET", "/v1/users/nobody/tag-counts").0, 404)

                // serve has no active bundle in this branch: present says so; no notification is ours.
                let (presentStatus, present) = try call("GET", "/v1/hub/present?tags=golf")
                XCTAssertEqual(presentStatus, 404)
                XCTAssertTrue(error(present).contains("no verified content bundle is active yet"), error(present))
                XCTAssertEqual(try call("GET", "/v1/hub/present?tags=golf&uri=zbimdb://hub/news").0, 400)
                XCTAssertEqual((try call("GET", "/v1/local-notifications/due").1 as? [Any])?.count, 0)
                let (_, handled) = try call("POST", "/v1/local-notifications/past/handle", #"{"show_alert": false}"#)
                XCTAssertEqual((handled as? [String: Any])?["ours"] as? Bool, false)
                XCTAssertEqual(try call("POST", "/v1/local-notifications/past/handle", #"{"show_alert": "no"}"#).0, 400)
            }
        }
        // serve stopped as on SIGTERM: `listening` returned, so its services stopped without an error (exit 0).
        try await TestSupport.offPool {
            // What the server wrote is what the CLI reads.
            XCTAssertEqual(try TestSupport.hubhost(["users", "active"], in: folder).stdout, "ann\n")
        }
    }
}
