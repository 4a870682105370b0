import Foundation
import XCTest

@testable import HubHostKit

/// The campaign preview page in a real browser: serve's API, listening in this process
/// (InProcessAPI, with the runtime's services), renders a loaded campaign whose image is on a
/// loopback server (allow-listed by hub.whitelist_domains);
/// headless Chromium (HeadlessChromium) takes a screenshot, Tests/browser/png_colors.py finds each
/// element by its colour in it, and neither Chromium's console nor the hub's CSP reports show a
/// violation.
final class CampaignPreviewBrowserTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
    }

    /// The colours of the message's parts, each found in the screenshot.
    private enum Color {
        static let frame = "#203040"
        static let background = "#fff8e0"
        static let title = "#d00000"
        static let buttonOne = "#1040c0"
        static let buttonTwo = "#a020a0"
        static let image = "#00c853"  // CampaignPreviewTests.gif
    }

    func testThePreviewIsPlacedAndShownUnderItsPolicyOnlineAndOffline() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        let images = try TestImageServer()
        defer { images.stop() }
        images.files["/sale.gif"] = (200, CampaignPreviewTests.gif)
        let list: [String: Any] = [
            "data": [
                [
                    "campaignData": [
                        "campaignId": "sale", "type": 1,
                        "triggers": [["type": 1, "eventType": 4, "eventName": "go", "attributes": []]],
                        "messagePayload": [
                            "title": "Summer sale", "header": "Half price", "messageBody": "Every level pack at half price.",
                            "titleColor": Color.title, "backgroundColor": Color.background, "frameColor": Color.frame,
                            "messageSettings": [
                                "displaySettings": ["imageUrl": images.url("/sale.gif"), "optOut": true],
                                "controlSettings": [
                                    "buttons": [
                                        [
                                            "buttonText": "Shop now", "buttonBackgroundColor": Color.buttonOne, "buttonTextColor": "#ffffff",
                                            "buttonBehavior": ["action": 2, "uri": "myapp://shop"]
                                        ],
                                        ["buttonText": "Later", "buttonBackgroundColor": Color.buttonTwo, "buttonBehavior": ["action": 3]]
                                    ]
                                ]
                            ]
                        ]
                    ]
                ]
            ]
        ]
        try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: folder + "/campaigns.json"))
        try TestSupport.write(
            """
            data_dir: data
            server: {port: 0}
            events: {flush_interval: 1 hr}
            campaigns: {file: campaigns.json}
            hub: {whitelist_domains: [127.0.0.1]}
            plugins: []
            """, to: folder + "/plugins.yaml")
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let chromium = HeadlessChromium(folder: folder)
                let url = server.base + "/v1/campaigns/sale/preview"

                // The elements are all in the DOM Chromium built, the image embedded.
                let dom = try chromium.dumpDOM(url)
                for id in [
                    "screen", "message", "message-image", "message-header", "message-title", "message-body", "button-1", "button-2", "message-opt-out"
                ] {
                    XCTAssertTrue(dom.contains(#"id="\#(id)""#), "\(id) is not on the page: \(dom)")
                }
                XCTAssertTrue(dom.contains(#"src="data:image/gif;base64,"#), dom)
                XCTAssertTrue(dom.contains("myapp://shop"), "the button's action is shown: \(dom)")

                // Every element is placed: each one's colour is where the modal layout puts it.
                let shot = try Self.screenshot(chromium, url, name: "online", in: folder)
                XCTAssertFalse(shot.console.contains("Content Security Policy"), "a violation in the console: \(shot.console)")
                let boxes = shot.boxes
                for (name, box) in boxes { XCTAssertGreaterThan(box.count, 0, "\(name) is not in the screenshot: \(boxes)") }
                if boxes.values.allSatisfy({ $0.count > 0 }), let frame = boxes["frame"], let message = boxes["background"],
                    let image = boxes["image"], let title = boxes["title"], let one = boxes["buttonOne"], let two = boxes["buttonTwo"]
                {
                    // The screen (360 x 640) at the page's 16 px padding; the modal inside it, centred.
                    XCTAssertEqual(frame.left, 16, "\(frame)")
                    XCTAssertEqual(frame.top, 16, "\(frame)")
                    XCTAssertEqual(frame.right - frame.left + 1, 360, "\(frame)")
                    XCTAssertGreaterThan(message.left, frame.left)
                    XCTAssertLessThan(message.right, frame.right)
                    XCTAssertGreaterThan(message.top, frame.top)
                    XCTAssertLessThan(message.bottom, frame.bottom)
                    XCTAssertLessThan(abs((message.top + message.bottom) / 2 - (frame.top + frame.bottom) / 2), 4, "centred: \(message) in \(frame)")
                    // Top to bottom inside the message: image, title, first button, second button.
                    for inner in [image, title, one, two] {
                        XCTAssertTrue(inner.left >= message.left && inner.right <= message.right, "\(inner) is inside \(message)")
                        XCTAssertTrue(inner.top >= message.top && inner.bottom <= message.bottom, "\(inner) is inside \(message)")
                    }
                    XCTAssertGreaterThan(image.bottom - image.top, 100, "the image is shown at its height (140 px): \(image)")
                    XCTAssertLessThan(image.bottom, title.top, "the image above the title")
                    XCTAssertLessThan(title.bottom, one.top, "the title above the buttons")
                    XCTAssertLessThan(one.bottom, two.top, "the first button above the second")
                    XCTAssertGreaterThan(one.right - one.left, 200, "a button spans the message: \(one)")
                }
                XCTAssertEqual(images.hits("/sale.gif"), 1, "fetched once by hubhost, never by the browser")

                // Offline: the image server is gone, the cached image still shows.
                images.stop()
                let offline = try Self.screenshot(chromium, url, name: "offline", in: folder)
                XCTAssertGreaterThan(offline.boxes["image"]?.count ?? 0, 10_000, "the image from the cache: \(offline.boxes)")
                XCTAssertFalse(offline.console.contains("Content Security Policy"), offline.console)

                // No report reached the hub either.
                let reports = try HTTPFetcher().fetch("GET", server.base + "/v1/hub/csp-reports", timeoutSeconds: 10).get()
                XCTAssertEqual(
                    (try JSONSerialization.jsonObject(with: reports.body) as? [Any])?.count, 0, String(decoding: reports.body, as: UTF8.self))
            }
        }
    }

    /// The console check sees a violation where there is one: a page whose policy refuses its own
    /// inline script and style, in the same Chromium with the same arguments.
    func testTheConsoleCheckSeesAViolation() throws {
        try TestSupport.write(
            """
            <!doctype html><html><head>
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-AAAA'">
            <style>body{background:#fff}</style></head>
            <body><script>document.title = "ran"</script><p>x</p></body></html>
            """, to: folder + "/violating.html")
        let shot = try Self.screenshot(HeadlessChromium(folder: folder), "file://" + folder + "/violating.html", name: "violating", in: folder)
        XCTAssertTrue(shot.console.contains("Content Security Policy"), "no violation seen in the console: \(shot.console)")
    }

    // MARK: Helpers

    private struct Box: Decodable, CustomStringConvertible {
        var count: Int
        var left: Int
        var top: Int
        var right: Int
        var bottom: Int
        var description: String { "\(count) px in (\(left), \(top))-(\(right), \(bottom))" }
    }

    /// A screenshot of `url` (420 x 700), Chromium's console output, and where each colour of
    /// `Color` is in the picture.
    private static func screenshot(_ chromium: HeadlessChromium, _ url: String, name: String, in folder: String) throws -> (
        console: String, boxes: [String: Box]
    ) {
        let png = folder + "/\(name).png"
        let result = try chromium.screenshot(url, to: png, width: 420, height: 700)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: png), "no screenshot: \(result.stderr)")
        let colours = [
            "frame": Color.frame, "background": Color.background, "title": Color.title, "buttonOne": Color.buttonOne,
            "buttonTwo": Color.buttonTwo, "image": Color.image
        ]
        let found = try TestSupport.run(
            "/usr/bin/env", ["python3", TestSupport.repository + "/Tests/browser/png_colors.py", png] + colours.map { "\($0.key)=\($0.value)" },
            timeout: 120)
        XCTAssertEqual(found.status, 0, found.stderr)
        struct Answer: Decodable { var colours: [String: Box] }
        let answer = try JSONDecoder().decode(Answer.self, from: Data(found.stdout.utf8))
        return (result.stderr, answer.colours)
    }
}
