import XCTest

@testable import HubHostKit

/// Presenting for the active user through HubHost (its users database, its event pipeline and its
/// advertiser-ID delegate), the three URI forms, reading articles, and the metrics events.
final class PresentTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws { folder = try TestSupport.temporaryFolder(self) }

    /// A host whose hub has the test bundle active; `advertiser` is the static delegate's config.
    private func host(advertiser: String = "{advertiser_id: ad-123}") throws -> (HubHost, HubEngine) {
        try TestBundle.host(
            in: folder,
            manifest: """
                data_dir: data
                hub: {custom_url_schemes: [myapp]}
                plugins:
                  - id: ads
                    use: \(TestSupport.plugin("StaticAdvertiserID"))
                    config: \(advertiser)
                """, for: self, hubs: TestBundle.newsAndFood)
    }

    private func events(_ host: HubHost, named name: String) throws -> [Event] {
        try host.events().waitForBackgroundWrites()  // metrics are written in the background
        return try host.events().store.list(limit: 1000).map(\.event).filter { $0.name == name }.reversed()
    }

    func testPresentUsesTheActiveUsersCountsAndATagsOverride() throws {
        let (_, hub) = try host()
        XCTAssertEqual(try hub.present().hubID, "news", "no active user: the first hub in bundle order")
        try hub.users.createUser(id: "ann", tags: ["cooking"])
        XCTAssertEqual(try hub.present().hubID, "news", "a user who is not active does not tailor")
        try hub.users.activate("ann")
        let food = try hub.present()
        XCTAssertEqual(food.hubID, "food")
        XCTAssertEqual(food.counts, ["cooking": 1])
        try hub.users.updateTagCounts(["news": 3, "golf": 2, "football": 1])
        let news = try hub.present()
        XCTAssertEqual(news.hubID, "news")
        XCTAssertEqual(news.channels.first?.articles.map(\.id), ["news/sports/c", "news/sports/a", "news/sports/b"])
        let override = try hub.present(tags: ["recipes"])
        XCTAssertEqual(override.hubID, "food", "the override replaces the user's tags")
        XCTAssertEqual(override.counts, ["recipes": 1])
        XCTAssertEqual(try hub.users.tagCounts(of: "ann")["news"], 3, "an override does not change the profile")
    }

    func testTheThreeURIFormsAndNotFound() throws {
        let (_, hub) = try host()
        let direct = try hub.present(uri: "zbimdb://article/food/baking/bread")
        XCTAssertEqual(direct.hubID, "food")
        XCTAssertEqual(direct.target, ContentURI(.article, "food/baking/bread"))
        let deepLink = try hub.present(uri: "myapp://channel/news/sports")
        XCTAssertEqual(deepLink.hubID, "news")
        XCTAssertEqual(deepLink.target, ContentURI(.channel, "news/sports"), "the custom scheme was replaced by zbimdb://")
        let indexed = try hub.present(uri: "https://example.com/golf?id=1")
        XCTAssertEqual(indexed.target, ContentURI(.article, "news/sports/a"), "app indexing: the article's source URL, query included")
        for missing in [
            "zbimdb://article/news/sports/zzz", "myapp://hub/sports", "https://example.com/golf?id=2",
            "otherapp://article/news/sports/a", "not a uri", "zbimdb://video/x"
        ] {
            XCTAssertThrowsError(try hub.present(uri: missing), missing) { error in
                guard case .notFound? = error as? HubEngine.PresentError else { return XCTFail("\(missing): \(error)") }
            }
        }
    }

    func testReadingAnArticleAddsItsTagsToTheActiveUser() throws {
        let (_, hub) = try host()
        XCTAssertEqual(try hub.recordArticleRead("news/sports/c"), [:], "no active user: nothing is learned")
        try hub.users.createUser(id: "ann", tags: ["golf"])
        try hub.users.activate("ann")
        XCTAssertEqual(try hub.recordArticleRead("news/sports/c"), ["football": 1, "golf": 1])
        try hub.recordArticleRead("food/baking/bread")
        XCTAssertEqual(try hub.users.tagCounts(of: "ann"), ["golf": 2, "football": 1, "cooking": 1, "baking": 1])
        XCTAssertThrowsError(try hub.recordArticleRead("news/sports/zzz"))
    }

    func testMetricsEventsCarryTheEntryPointOnceAndTheAdvertiserID() throws {
        let (host, hub) = try host()
        hub.setEntryPoint("home-button")
        _ = try hub.present(uri: "zbimdb://channel/news/sports")
        try hub.trackChannelViewed("news/sports")
        try hub.trackArticleViewed("news/sports/b", timeSpentMs: 4200)
        _ = try hub.present()
        let presented = try events(host, named: "Hub Presented")
        XCTAssertEqual(presented.count, 2)
        XCTAssertEqual(presented[0][attribute: "Entry Point"], .string("home-button"))
        XCTAssertEqual(presented[0][attribute: "Hub"], .string("news"))
        XCTAssertEqual(presented[0][attribute: "Target"], .string("zbimdb://channel/news/sports"))
        XCTAssertEqual(presented[0][attribute: "Advertiser ID"], .string("ad-123"))
        XCTAssertNil(presented[1][attribute: "Entry Point"], "the entry point is used once, then reset")
        let channel = try XCTUnwrap(try events(host, named: "Channel Viewed").first)
        XCTAssertEqual(channel[attribute: "Channel"], .string("news/sports"))
        XCTAssertEqual(channel[attribute: "Entry Point"], .string("home-button"), "views of that hub session carry its entry point")
        let article = try XCTUnwrap(try events(host, named: "Article Viewed").first)
        XCTAssertEqual(article[attribute: "Article"], .string("news/sports/b"))
        XCTAssertEqual(article[attribute: "Title"], .string("B"))
        XCTAssertEqual(article[attribute: "Time Spent"], .int(4200))
        XCTAssertEqual(article[attribute: "Advertiser ID"], .string("ad-123"))
        XCTAssertEqual(article.type, .namedEvent)
    }

    /// The page-view recorder stores a batch's metrics itself, in one go: once it is drained they
    /// are stored (nothing is left to a background writer), in the views' order, each with the
    /// advertiser ID and the entry point of the presentation before it. An event that can never
    /// be stored (a title over the size limit) is left out alone, not with its whole batch.
    func testRecordedViewsStoreTheirMetricsAsOneBatch() throws {
        let (host, hub) = try host()
        let (presentation, bundle) = try hub.presentFromBundle(tags: nil, uri: nil, waitForContent: false, track: false)
        let article = try XCTUnwrap(bundle.article("news/sports/a"))
        var oversized = article
        oversized.title = String(repeating: "x", count: EventLimits.maxStringValueBytes + 1)
        var presented = HubViewRecorder.View()
        presented.presented = (presentation, "banner")
        var channel = HubViewRecorder.View()
        channel.channel = try XCTUnwrap(bundle.channel("news/sports"))
        let views = [
            presented, channel, HubViewRecorder.View(leaving: (oversized, "news", 5)), HubViewRecorder.View(leaving: (article, "news", 1200))
        ]
        // Reserved first, then handed over: the recorder takes them as one batch or more, in order.
        for _ in views { XCTAssertTrue(hub.viewRecorder.reserve(wait: false)) }
        for view in views { hub.viewRecorder.submit(view) }
        XCTAssertTrue(hub.viewRecorder.waitUntilDrained(timeoutSeconds: 60))

        let stored = try host.events().store.list(limit: 100).map(\.event).reversed()
            .filter { ["Hub Presented", "Channel Viewed", "Article Viewed"].contains($0.name) }
        XCTAssertEqual(stored.map(\.name), ["Hub Presented", "Channel Viewed", "Article Viewed"])
        for event in stored {
            XCTAssertEqual(event[attribute: "Advertiser ID"], .string("ad-123"), event.name)
            XCTAssertEqual(event[attribute: "Entry Point"], .string("banner"), event.name)
        }
        XCTAssertEqual(stored.last?[attribute: "Time Spent"], .int(1200))
        XCTAssertEqual(stored.last?[attribute: "Title"], .string(article.title))
    }

    func testNoAdvertiserIDAttributeWhenAdTrackingIsLimited() throws {
        let (host, hub) = try host(advertiser: "{advertiser_id: ad-123, limit_ad_tracking: true}")
        XCTAssertTrue(host.advertiserID().limitAdTracking)
        _ = try hub.present()
        try hub.trackArticleViewed("news/sports/a", timeSpentMs: nil)
        let tracked = try events(host, named: "Hub Presented") + events(host, named: "Article Viewed")
        XCTAssertEqual(tracked.count, 2)
        for event in tracked {
            XCTAssertNil(event[attribute: "Advertiser ID"], event.name)
            XCTAssertFalse(event.attributes.contains { $0.name.lowercased().contains("advertiser") }, "\(event.attributes)")
        }
        XCTAssertNil(tracked[1][attribute: "Time Spent"])
    }

    func testPresentingWithoutABundleOrWhenDisabled() throws {
        try TestSupport.write("data_dir: data\nplugins: []\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        let hub = try XCTUnwrap(try host.hub())
        XCTAssertThrowsError(try hub.present()) { XCTAssertEqual($0 as? HubEngine.PresentError, .noContent) }
        XCTAssertTrue(try host.events().store.list().allSatisfy { $0.event.name != "Hub Presented" }, "a failed present tracks nothing")
    }
}
