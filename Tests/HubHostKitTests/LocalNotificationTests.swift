import XCTest

@testable import HubHostKit

/// The bundle's scheduled local notifications: due at their time, announced once, handled once,
/// and ids hubhost did not schedule answered "not ours".
final class LocalNotificationTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws { folder = try TestSupport.temporaryFolder(self) }

    private func host() throws -> (HubHost, HubEngine) {
        try TestBundle.host(
            in: folder, manifest: "data_dir: data\nplugins: []\n", for: self,
            hubs: [.init("news", channels: [.init("sports", articles: [.init("final")])])],
            notifications: [
                .init(id: "n1", fireAtMs: 1_000, message: "The final is on", actionURI: "zbimdb://article/news/sports/final"),
                .init(id: "n2", fireAtMs: 2_000, message: "Sports news", actionURI: "zbimdb://channel/news/sports"),
                .init(id: "n3", fireAtMs: 9_000, message: "Later", actionURI: "zbimdb://hub/news")
            ])
    }

    func testDueAtTheirTimeAnnouncedOnceAndHandled() throws {
        let (host, hub) = try host()
        let notifications = hub.localNotifications
        XCTAssertEqual(try notifications.due(now: 999).map(\.id), [])
        XCTAssertEqual(try notifications.due(now: 2_000).map(\.id), ["n1", "n2"])
        XCTAssertEqual(try notifications.announceDue(now: 1_500).map(\.id), ["n1"])
        XCTAssertEqual(try notifications.announceDue(now: 2_500).map(\.id), ["n2"], "n1 was announced already")
        XCTAssertEqual(try notifications.announceDue(now: 2_600).map(\.id), [])
        let posted = host.notifications.recentNotifications().filter { $0.name == HostNotification.Name.localNotificationDue }
        XCTAssertEqual(posted.map { $0.payload["id"] }, ["n1", "n2"])
        XCTAssertEqual(posted.first?.payload["action_uri"], "zbimdb://article/news/sports/final")

        let outcome = try notifications.handle(id: "n1", showAlert: true)
        guard case .handled(let notification, let uri, let showAlert) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertEqual(notification.message, "The final is on")
        XCTAssertEqual(uri, "zbimdb://article/news/sports/final")
        XCTAssertTrue(showAlert)
        XCTAssertEqual(try hub.present(uri: uri).target, ContentURI(.article, "news/sports/final"), "the action URI presents")
        XCTAssertEqual(try notifications.due(now: 10_000).map(\.id), ["n2", "n3"], "handled ones are no longer due")
        guard case .handled(_, _, false) = try notifications.handle(id: "n2", showAlert: false) else { return XCTFail("no alert expected") }
        try host.events().waitForBackgroundWrites()  // metrics are written in the background
        let handled = try host.events().store.list(limit: 100).map(\.event).filter { $0.name == "Local Notification Handled" }
        XCTAssertEqual(
            handled.compactMap { $0[attribute: "Notification"] }.map { "\($0)" }.sorted(),
            ["\(PluginValue.string("n1"))", "\(PluginValue.string("n2"))"])
    }

    func testNotOursAndStateSurvivesARestart() throws {
        do {
            let (first, hub) = try host()
            defer { first.shutdown() }
            XCTAssertEqual(try hub.localNotifications.handle(id: "push-77", showAlert: true), .notOurs(id: "push-77"))
            _ = try hub.localNotifications.handle(id: "n1", showAlert: false)
            try hub.localNotifications.announceDue(now: 2_000)
        }
        let (host, hub) = try host()
        XCTAssertEqual(try hub.localNotifications.due(now: 2_000).map(\.id), ["n2"], "n1 stays handled after a restart")
        XCTAssertEqual(try hub.localNotifications.announceDue(now: 3_000), [], "n2 was announced before the restart")
        XCTAssertFalse(host.notifications.recentNotifications().contains { $0.name == HostNotification.Name.localNotificationDue })
    }

    func testNoBundleNothingDueAndNothingOurs() throws {
        try TestSupport.write("data_dir: data\nplugins: []\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let hub = try XCTUnwrap(try host.hub())
        XCTAssertEqual(try hub.localNotifications.due(), [])
        XCTAssertEqual(try hub.localNotifications.handle(id: "n1"), .notOurs(id: "n1"))
    }
}
