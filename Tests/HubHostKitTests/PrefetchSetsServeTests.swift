import Foundation
import XCTest

@testable import HubHostKit

/// Category and source routes under `hubhost serve` (lists, toggles, live sets as server-sent
/// events) and `hubhost prefetch watch --items|--categories` reading those streams from the server
/// (in this process) on 127.0.0.1, plus `prefetch categories|sources` from the CLI.
final class PrefetchSetsServeTests: PrefetchTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        service.files["a.mp4"] = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0) })
        service.pages[""] = """
            {"cursor": "c1",
             "sources": [{"name": "acme", "display_name": "Acme TV"}, {"name": "beta", "display_name": "Beta", "subscribed": false}],
             "categories": [{"id": "news", "name": "News"}, {"id": "sport", "name": "Sport"}, {"id": "weather", "name": "Weather", "parent": "news"}],
             "items": [{"unique_id": "a", "content_id": "1", "source": "acme", "categories": ["news"], "title": "Alpha",
                        "files": [{"role": "main", "url": "\(service.fileURL("a.mp4"))", "size": 5000}]},
                       {"unique_id": "b", "content_id": "2", "source": "acme", "categories": ["sport"], "title": "Beta",
                        "files": [{"role": "main", "url": "\(service.fileURL("a.mp4"))", "size": 5000}]}]}
            """
        try writeManifest(prefetchManifest(", license: good-licence, item_download_behavior: none", sections: [("server", "{port: 0}")]))
    }

    /// `body` with serve (in this process, on a loopback port, its services running) once its
    /// prefetch service registered and synced the catalog by itself; on a Dispatch thread (its
    /// calls block).
    private func withServer(_ body: @escaping @Sendable (ListeningAPI) throws -> Void) async throws {
        try await InProcessAPI.listening(manifestPath: manifestPath, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                // The server's prefetch service registers and syncs by itself.
                let deadline = Date().addingTimeInterval(20)
                while Date() < deadline {
                    if let (status, _) = try? server.call("GET", "/v1/prefetch/items/b"), status == 200 { return try body(server) }
                    Thread.sleep(forTimeInterval: 0.1)
                }
                XCTFail("the server did not sync the catalog")
                try body(server)
            }
        }
    }

    private static func list(_ server: ListeningAPI, _ path: String, _ key: String) throws -> [String] {
        let (status, body) = try server.call("GET", path)
        XCTAssertEqual(status, 200, "\(path): \(body)")
        return (body as? [[String: Any]] ?? []).compactMap { $0[key] as? String }
    }

    func testCategoryAndSourceRoutesFilterSortAndToggle() async throws {
        let folder = self.folder
        try await withServer { server in
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories", "id"), ["news", "sport", "weather"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories?sort=name:desc&limit=2", "id"), ["weather", "sport"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories?with_content=true", "id"), ["news", "sport"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories?parent=news", "id"), ["weather"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories?search=SPO", "id"), ["sport"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories?id=sport&id=news", "id"), ["news", "sport"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories?source=beta", "id"), [])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/sources?subscribed=true", "name"), ["acme"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/sources?category=sport&with_content=true", "name"), ["acme"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/sources?search=beta&name=beta&name=acme", "name"), ["beta"])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/sources?sort=display_name:desc", "name"), ["beta", "acme"])
            for bad in [
                "/v1/prefetch/categories?sort=size", "/v1/prefetch/categories?selected=yes", "/v1/prefetch/sources?limit=-1",
                "/v1/prefetch/sources/watch?subscribed=1"
            ] {
                let (status, body) = try server.call("GET", bad)
                XCTAssertEqual(status, 400, "\(bad): \(body)")
                XCTAssertNotNil((body as? [String: Any])?["error"], "\(bad): the one error shape")
            }

            var (status, body) = try server.call("POST", "/v1/prefetch/categories/deselect", #"{"ids": ["news", "ghost"]}"#)
            XCTAssertEqual(status, 200)
            XCTAssertEqual(((body as? [String: Any])?["answers"] as? [[String: Any]])?.map { $0["accepted"] as? Bool }, [true, false])
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/categories?selected=true", "id"), ["sport", "weather"])
            (status, _) = try server.call("POST", "/v1/prefetch/categories/select", #"{"ids": []}"#)
            XCTAssertEqual(status, 400)
            (status, _) = try server.call("POST", "/v1/prefetch/sources/subscribe", #"{"names": ["beta"]}"#)
            XCTAssertEqual(status, 200)
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/sources?subscribed=true", "name"), ["acme", "beta"])
            (status, _) = try server.call("POST", "/v1/prefetch/sources/unsubscribe", #"{"names": ["acme"]}"#)
            XCTAssertEqual(status, 200)
            XCTAssertEqual(try Self.list(server, "/v1/prefetch/sources?subscribed=false", "name"), ["acme"])

            // The CLI beside the server, on the shared catalog.
            let cli = try TestSupport.hubhost([
                "prefetch", "categories", "--selected", "--sort", "name:desc", "--json",
                "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertEqual(cli.status, 0, cli.stderr)
            XCTAssertEqual(((try cli.json) as? [[String: Any]])?.map { $0["id"] as? String }, ["weather", "sport"])
            let toggled = try TestSupport.hubhost([
                "prefetch", "sources", "--subscribe", "acme", "--unsubscribe", "nope",
                "--subscribed", "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertEqual(toggled.status, 1, "an unknown source is refused")
            XCTAssertTrue(toggled.stderr.contains("no source 'nope'"), toggled.stderr)
            XCTAssertTrue(toggled.stdout.contains("Acme TV") && toggled.stdout.contains("Beta"), toggled.stdout)
            let bad = try TestSupport.hubhost([
                "prefetch", "categories", "--selected", "--not-selected",
                "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertEqual(bad.status, 64)
            XCTAssertTrue(bad.stderr.contains("not both"), bad.stderr)
        }
    }

    /// A child process whose output is read as it comes, ended within a bound.
    private final class Child: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var text = ""
        private let reader: Thread

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: TestSupport.hubhostExecutable)
            process.arguments = arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            let handle = out.fileHandleForReading
            let box = Box()
            reader = Thread {
                for _ in 0..<100_000 {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    box.append?(String(decoding: chunk, as: UTF8.self))
                }
            }
            box.append = { [unowned(unsafe) self] chunk in self.lock.withLock { self.text += chunk } }
            try process.run()
            reader.start()
        }

        private final class Box: @unchecked Sendable { var append: ((String) -> Void)? }

        var output: String { lock.withLock { text } }

        /// Waits (at most `seconds`) until the output contains `needle`.
        func wait(for needle: String, _ seconds: Double = 20) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if output.contains(needle) { return true }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return false
        }

        /// The exit status, after at most `seconds` (then SIGKILL, and -1).
        func finish(_ seconds: Double = 30) -> Int32 {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return -1
            }
            Thread.sleep(forTimeInterval: 0.2)  // the reader takes the last bytes
            return process.terminationStatus
        }
    }

    func testWatchPrintsTheChangesOfAnItemSetAndACategorySetFromTheServer() async throws {
        let folder = self.folder
        try await withServer { server in
            // The server's rounds have settled item a (its wait reason written), so the first change
            // the watch sees is the download below.
            let settled = Date().addingTimeInterval(20)
            while Date() < settled {
                if let (_, body) = try? server.call("GET", "/v1/prefetch/items/a"),
                    (body as? [String: Any])?["waitReason"] as? String == "download_behavior_none"
                {
                    break
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            // Items of category news as JSON: initial, then a download's willChange and didChange.
            let items = try Child([
                "prefetch", "watch", "--items", "--category", "news", "--sort", "title", "--json", "--url", server.base,
                "--count", "3", "--timeout", "30", "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertTrue(items.wait(for: "\"name\":\"initial\""), items.output)
            let (status, _) = try server.call("POST", "/v1/prefetch/download", #"{"ids": ["a"]}"#)
            XCTAssertEqual(status, 200)
            XCTAssertEqual(items.finish(), 0, items.output)
            let lines = items.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            XCTAssertEqual(lines.map { $0["name"] as? String }, ["initial", "willChange", "didChange"], items.output)
            XCTAssertEqual(lines.first?["added"] as? [String], ["a"], "only the category's items")
            XCTAssertEqual(lines.last?["updated"] as? [String], ["a"])
            let after = (lines.last?["items"] as? [[String: Any]])?.first
            XCTAssertEqual(after?["uniqueId"] as? String, "a")
            XCTAssertNotEqual(after?["state"] as? String, "discovered", "the change is the download")

            // Selected categories as text lines: deselecting sport removes it.
            let categories = try Child([
                "prefetch", "watch", "--categories", "--selected", "--url", server.base, "--count", "3", "--timeout", "30",
                "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertTrue(categories.wait(for: "initial"), categories.output)
            XCTAssertTrue(categories.output.contains("+news,sport,weather"), categories.output)
            _ = try server.call("POST", "/v1/prefetch/categories/deselect", #"{"ids": ["sport"]}"#)
            XCTAssertEqual(categories.finish(), 0, categories.output)
            let text = categories.output.split(separator: "\n")
            XCTAssertEqual(text.count, 3, categories.output)
            XCTAssertTrue(text.last?.contains("didChange -sport (2 categories)") ?? false, categories.output)

            // Bounded: nothing changes, --count is not reached before --timeout: exit 1 saying so.
            let quiet = try TestSupport.hubhost([
                "prefetch", "watch", "--sources", "--url", server.base, "--count", "2",
                "--timeout", "1", "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertEqual(quiet.status, 1)
            XCTAssertTrue(quiet.stderr.contains("1 of 2 changes"), quiet.stderr)
            let both = try TestSupport.hubhost([
                "prefetch", "watch", "--items", "--sources", "--url", server.base,
                "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertEqual(both.status, 64)
            let badState = try TestSupport.hubhost([
                "prefetch", "watch", "--items", "--state", "nope", "--url", server.base,
                "--manifest", folder + "/plugins.yaml"
            ])
            XCTAssertEqual(badState.status, 64)
            XCTAssertTrue(badState.stderr.contains("unknown state 'nope'"), badState.stderr)
        }
    }
}
