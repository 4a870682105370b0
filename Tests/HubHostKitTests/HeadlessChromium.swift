import Foundation
import XCTest

/// Debian's headless Chromium (`/usr/bin/chromium`) as the browser tests drive it: one profile
/// folder per test, no sandbox (tests run as root), every run bounded by a timeout.
struct HeadlessChromium {
    static let path = "/usr/bin/chromium"

    /// The test's folder; the profile is `chromium-profile` in it.
    let folder: String

    /// The arguments every run takes; throws when Chromium is not installed.
    func arguments() throws -> [String] {
        guard FileManager.default.isExecutableFile(atPath: Self.path) else {
            throw NSError(
                domain: "HeadlessChromium", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "the browser tests need Debian's chromium at \(Self.path) (apt-get install chromium)"])
        }
        return ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(folder)/chromium-profile"]
    }

    /// The DOM Chromium built for `url`: after its scripts ran in 3 s of virtual time, or (for pages
    /// that navigate by themselves) as soon as it loaded.
    func dumpDOM(_ url: String, virtualTime: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try TestSupport.run(
            Self.path, try arguments() + (virtualTime ? ["--virtual-time-budget=3000"] : []) + ["--dump-dom", url], timeout: 90)
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        return result.stdout
    }

    /// A screenshot of `url` in a window of `width` x `height` written to `png`; the result's
    /// stderr carries the page's console messages (a CSP violation among them).
    func screenshot(_ url: String, to png: String, width: Int, height: Int) throws -> CommandResult {
        try TestSupport.run(
            Self.path,
            try arguments() + [
                "--enable-logging=stderr", "--v=0", "--hide-scrollbars", "--force-device-scale-factor=1",
                "--window-size=\(width),\(height)", "--virtual-time-budget=3000", "--screenshot=\(png)", url
            ], timeout: 90)
    }

    /// Chromium showing `url` until the caller kills it.
    func open(_ url: String) throws -> Process {
        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: Self.path)
        browser.arguments = try arguments() + [url]
        browser.standardOutput = FileHandle.nullDevice
        browser.standardError = FileHandle.nullDevice
        try browser.run()
        return browser
    }
}
