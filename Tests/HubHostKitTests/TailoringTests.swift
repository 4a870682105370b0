import XCTest

@testable import HubHostKit

final class TailoringTests: XCTestCase {
    private func bundle() throws -> ContentBundle {
        let folder = try TestSupport.temporaryFolder(self)
        return try ContentBundle(path: TestBundle.write(to: folder + "/b.sqlite3", hubs: TestBundle.newsAndFood))
    }

    func testHubSelectionAndArticleOrder() throws {
        let bundle = try bundle()
        XCTAssertEqual(bundle.hubs.map(\.id), ["news", "food"])
        XCTAssertEqual(Tailoring.selectHub(bundle.hubs, counts: [:])?.id, "news", "no tags: the first hub in bundle order")
        XCTAssertEqual(Tailoring.selectHub(bundle.hubs, counts: ["cooking": 1])?.id, "food")
        XCTAssertEqual(Tailoring.selectHub(bundle.hubs, counts: ["news": 2, "cooking": 1, "recipes": 1])?.id, "news", "a tie keeps bundle order")
        let articles = try XCTUnwrap(bundle.channel("news/sports")).articles
        XCTAssertEqual(Tailoring.order(articles, counts: [:]).map(\.id), ["news/sports/a", "news/sports/b", "news/sports/c"])
        XCTAssertEqual(
            Tailoring.order(articles, counts: ["football": 2, "golf": 1]).map(\.id),
            ["news/sports/c", "news/sports/b", "news/sports/a"])
        XCTAssertEqual(
            Tailoring.order(articles, counts: ["football": 1, "golf": 1]).map(\.id),
            ["news/sports/c", "news/sports/a", "news/sports/b"], "ties keep bundle order")
    }

    func testContentURIs() {
        XCTAssertEqual(ContentURI("zbimdb://article/news/sports/a"), ContentURI(.article, "news/sports/a"))
        XCTAssertEqual(ContentURI("ZBIMDB://Channel/news/sports/?x=1"), ContentURI(.channel, "news/sports"))
        XCTAssertNil(ContentURI("zbimdb://video/x"))
        XCTAssertNil(ContentURI("https://example.com/a"))
        XCTAssertEqual(ContentURI(.hub, "news").description, "zbimdb://hub/news")
    }

    func testABundleThatIsNotOneIsNamed() throws {
        let folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write("not sqlite", to: folder + "/x.sqlite3")
        XCTAssertThrowsError(try ContentBundle(path: folder + "/x.sqlite3")) { error in
            XCTAssertTrue("\(error)".contains(folder + "/x.sqlite3"), "\(error)")
        }
    }
}
