import Foundation
import HubHostABI
import XCTest

@testable import HubHostKit

/// The `download_request` kind (ABI 1.1, the seed's convertDownloadRequest): the bundled
/// download-request-header plugin through the Swift wrapper, and converted requests that break the
/// header's limits refused, in process and under `isolation: process`.
final class DownloadRequestPluginTests: FolderTestCase {
    private func host(_ plugins: String) throws -> HubHost {
        try TestSupport.write("data_dir: data\nlogging: {severity: info}\nplugins:\n\(plugins)", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    private func plugin(_ host: HubHost, _ id: String) throws -> DownloadRequestPlugin {
        DownloadRequestPlugin(try XCTUnwrap(host.registry.plugins(of: .downloadRequest).first { $0.instanceID == id }, "no instance \(id)"))
    }

    private let request = DownloadRequest(
        url: "https://origin.example.com/media/item-1/main.mp4",
        headers: ["authorization": "Bearer old", "Accept": "*/*"], itemId: "item-1", fileRole: "main")

    func testDownloadRequestHeaderAddsHeadersAndRewritesThePrefix() throws {
        let host = try host(
            """
              - id: cdn
                use: \(TestSupport.plugin("DownloadRequestHeader"))
                config:
                  headers: |
                    Authorization: Bearer new-token
                    # a comment line, and an empty one

                    X-Client:  hubhost/1  
                  url_prefix_from: https://origin.example.com/media/
                  url_prefix_to: https://cdn.example.net/m/
              - id: thumbs-only
                use: \(TestSupport.plugin("DownloadRequestHeader"))
                config: {headers: "X-Thumb: 1", roles: "thumbnail, subtitle"}
            """)
        let converted = try plugin(host, "cdn").convert(request)
        XCTAssertEqual(
            converted,
            DownloadRequest(
                url: "https://cdn.example.net/m/item-1/main.mp4",
                headers: ["Authorization": "Bearer new-token", "Accept": "*/*", "X-Client": "hubhost/1"],
                itemId: "item-1", fileRole: "main"),
            "a header of the same name in another case is replaced; values are trimmed")
        var elsewhere = request
        elsewhere.url = "https://other.example.com/media/x"
        XCTAssertEqual(try plugin(host, "cdn").convert(elsewhere).url, elsewhere.url, "a URL without the prefix keeps its origin")

        let thumbs = try plugin(host, "thumbs-only")
        XCTAssertEqual(try thumbs.convert(request), request, "a role not listed goes unchanged")
        var thumbnail = request
        thumbnail.fileRole = "thumbnail"
        XCTAssertEqual(try thumbs.convert(thumbnail).headers["X-Thumb"], "1")
    }

    func testDownloadRequestHeaderRefusesABadConfigAtCreate() throws {
        for (config, expected) in [
            ("{headers: \"Bad Name: x\"}", "'Bad Name' is not a header name"),
            ("{headers: \"no colon here\"}", "'headers' line 1: expected 'Name: value'"),
            ("{url_prefix_from: \"https://a/\"}", "set both 'url_prefix_from' and 'url_prefix_to', or neither"),
            ("{url_prefix_from: \"https://a/\", url_prefix_to: \"ftp://b/\"}", "'url_prefix_to' must start with http:// or https://")
        ] {
            let host = try host(
                """
                  - id: bad
                    use: \(TestSupport.plugin("DownloadRequestHeader"))
                    config: \(config)
                """)
            guard case .failed(let error)? = host.registry.entry(id: "bad")?.state else {
                XCTFail(config)
                continue
            }
            XCTAssertTrue("\(error)".contains(expected), "\(config): \(error)")
        }
    }

    private func fixture() throws -> String {
        try TestSupport.prefetchKindsFixture(in: folder + "/fixture")
    }

    func testHostileConversionsAreRefusedInProcessAndIsolated() throws {
        let manifest = try fixture()
        let cases: [(mode: String, reason: String)] = [
            ("crlf-header", "header 'X-Evil' has a value holding CR, LF or NUL"),
            ("bad-name", "header name 'Bad Name' is not 1 to 256 bytes of HTTP token characters"),
            ("ftp-url", "'ftp://example.com/file' is not an absolute http:// or https:// URL with a host"),
            ("relative-url", "'/just/a/path' is not an absolute http:// or https:// URL with a host"),
            ("bad-utf8", "set_header was given bytes that are not UTF-8"),
            ("huge-value", "set_header was given 100000 bytes"),
            ("edit-flood", "more than 1000 editor calls")
        ]
        var instances = ""
        for mode in cases.map(\.mode) + ["good", "not-found", "fail"] {
            for isolation in ["in_process", "process"] {
                instances += "  - {id: \(mode)-\(isolation), use: \(manifest), isolation: \(isolation), config: {mode: \(mode)}}\n"
            }
        }
        let host = try host(instances)
        let withCookie = DownloadRequest(
            url: "https://origin.example.com/a.m3u8", headers: ["Cookie": "abc=123", "Accept": "*/*"],
            itemId: "item-7", fileRole: "hls_main_index")
        for isolation in ["in_process", "process"] {
            for (mode, expected) in cases {
                XCTAssertThrowsError(try plugin(host, "\(mode)-\(isolation)").convert(withCookie)) { error in
                    guard case PluginCallError.invalidAnswer(let instance, let reason) = error else {
                        return XCTFail("\(mode) \(isolation): \(error)")
                    }
                    XCTAssertEqual(instance, "\(mode)-\(isolation)")
                    XCTAssertTrue(reason.hasPrefix(expected), "\(mode) \(isolation): \(reason)")
                }
            }
            XCTAssertEqual(
                try plugin(host, "good-\(isolation)").convert(withCookie),
                DownloadRequest(
                    url: "https://signed.example.com/item-7/hls_main_index?sig=1",
                    headers: ["Accept": "*/*", "X-Fixture": "hls_main_index"], itemId: "item-7", fileRole: "hls_main_index"),
                "\(isolation): set_url, set_header, and remove_header of 'cookie' removing 'Cookie'")
            XCTAssertEqual(try plugin(host, "not-found-\(isolation)").convert(withCookie), withCookie, "HH_ERR_NOT_FOUND discards the edits")
            XCTAssertThrowsError(try plugin(host, "fail-\(isolation)").convert(withCookie)) { error in
                XCTAssertEqual(
                    error as? PluginCallError,
                    .failed(instance: "fail-\(isolation)", status: HH_ERR_IO, message: "the signing service did not answer"))
            }
        }
    }

    func testACrashingIsolatedPluginIsAnErrorAndTheHostGoesOn() throws {
        let manifest = try fixture()
        let host = try host(
            """
              - {id: crashing, use: \(manifest), isolation: process, call_timeout: 2s, config: {mode: crash}}
              - {id: good, use: \(manifest), config: {mode: good}}
            """)
        XCTAssertThrowsError(try plugin(host, "crashing").convert(request)) { error in
            guard case PluginCallError.failed("crashing", HH_ERR_UNAVAILABLE, _) = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try plugin(host, "good").convert(request).headers["X-Fixture"], "main")
    }

    func testTheLimitsThemselves() throws {
        func problem(_ request: DownloadRequest) -> String? {
            do {
                try DownloadRequestLimits.check(request)
                return nil
            } catch { return error.reason }
        }
        let ok = DownloadRequest(url: "HTTPS://cdn.example.com/a?b=c", headers: ["X-A": "b"], itemId: "i", fileRole: "main")
        XCTAssertNil(problem(ok), "the scheme in any case")
        var r = ok
        r.url = "https://cdn.example.com/" + String(repeating: "a", count: DownloadRequestLimits.maxURLBytes)
        XCTAssertEqual(problem(r), "the URL is 8216 bytes; at most 8192")
        r = ok
        r.url = "https://cdn.example.com/a b"
        XCTAssertEqual(problem(r), "the URL 'https://cdn.example.com/a b' holds a space or a control character")
        r = ok
        r.url = "https:///nohost"
        XCTAssertEqual(problem(r), "'https:///nohost' is not an absolute http:// or https:// URL with a host")
        r = ok
        r.headers = Dictionary(uniqueKeysWithValues: (0...DownloadRequestLimits.maxHeaders).map { ("X-\($0)", "v") })
        XCTAssertEqual(problem(r), "101 headers; at most 100")
        r = ok
        r.headers = Dictionary(uniqueKeysWithValues: (0..<10).map { ("X-\($0)", String(repeating: "v", count: 8000)) })
        XCTAssertEqual(problem(r), "the headers are 80030 bytes; at most 65536")
        r = ok
        r.headers = ["X-A": "a\u{0}b"]
        XCTAssertEqual(problem(r), "header 'X-A' has a value holding CR, LF or NUL")
        r = ok
        r.headers = ["": "v"]
        XCTAssertEqual(problem(r), "header name '' is not 1 to 256 bytes of HTTP token characters")
    }
}
