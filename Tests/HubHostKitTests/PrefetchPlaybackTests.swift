import Foundation
import XCTest

@testable import HubHostKit

/// Local playback of prefetched items: real HLS content made here with ffmpeg,
/// served by the test origin (PrefetchTestService) on 127.0.0.1, downloaded by serve (its API and
/// services in this process, InProcessAPI; a child `hubhost serve` where it is killed) and played
/// back from serve's HLS endpoint with ffprobe as the client: fully cached (the origin
/// sees no request), partly cached and not cached (the origin serves only what is missing).
/// Non-HLS files with Range; hostile playlists refused.
final class PrefetchPlaybackTests: PrefetchTestCase {
    // MARK: helpers

    /// Six one-second segments (10 fps video, so 60 video packets, and AAC audio) made by ffmpeg:
    /// the playlist text and the segments by name.
    private func makeHLS() throws -> (playlist: String, segments: [String: Data]) {
        let out = folder + "/ffmpeg-hls"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let made = try TestSupport.run(
            "/usr/bin/ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=6:size=160x120:rate=10", "-f", "lavfi", "-i", "sine=duration=6",
                "-c:v", "libx264", "-g", "10", "-keyint_min", "10", "-sc_threshold", "0", "-c:a", "aac", "-shortest",
                "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod", "-hls_segment_filename", out + "/seg%d.ts", out + "/index.m3u8"
            ])
        XCTAssertEqual(made.status, 0, made.stderr)
        var segments: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: out) where name.hasSuffix(".ts") {
            segments[name] = try Data(contentsOf: URL(fileURLWithPath: out + "/" + name))
        }
        XCTAssertEqual(segments.count, 6, "six one-second segments")
        return (try String(contentsOfFile: out + "/index.m3u8", encoding: .utf8), segments)
    }

    /// Serves the HLS content under `files/<prefix>/`.
    private func serveHLS(_ hls: (playlist: String, segments: [String: Data]), prefix: String, playlistName: String = "index.m3u8") {
        service.lock.withLock {
            service.files["\(prefix)/\(playlistName)"] = Data(hls.playlist.utf8)
            for (name, data) in hls.segments { service.files["\(prefix)/\(name)"] = data }
        }
    }

    private func hlsItem(_ id: String, url: String) -> String {
        """
        {"unique_id": "\(id)", "content_id": "c-\(id)", "source": "acme", "categories": ["news"], "title": "HLS \(id)", "type": "video",
         "files": [{"role": "hls_main_index", "url": "\(url)"}]}
        """
    }

    private func catalogPage(_ items: [String]) -> String {
        """
        {"cursor": "c1", "sources": [{"name": "acme"}], "categories": [{"id": "news"}], "items": [\(items.joined(separator: ","))]}
        """
    }

    /// plugins.yaml for serve: policy downloads nothing by itself, a failed attempt waits an hour.
    private func writeManifest(license: Bool = true) throws {
        try writeManifest(
            prefetchManifest(
                "\(license ? ", license: good-licence" : ""), item_download_behavior: none, retry_delay: 3600",
                sections: [("server", "{port: 0}")]))
    }

    private static func item(_ server: any JSONCalls, _ id: String) -> [String: Any] {
        guard let (status, body) = try? server.call("GET", "/v1/prefetch/items/\(id)"), status == 200 else { return [:] }
        return body as? [String: Any] ?? [:]
    }

    private static func wait(_ server: any JSONCalls, _ id: String, _ what: String, _ done: ([String: Any]) -> Bool) {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if done(Self.item(server, id)) { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTFail("timed out waiting for \(id) \(what): \(Self.item(server, id))")
    }

    /// The requests the origin got for files under `prefix/` whose name ends with `suffix`, by name.
    private static func requests(_ service: PrefetchTestService, _ prefix: String, suffix: String = ".ts") -> [String: Int] {
        let names = service.lock.withLock { service.files.keys.filter { $0.hasPrefix(prefix + "/") && $0.hasSuffix(suffix) } }
        var counts: [String: Int] = [:]
        for name in names { counts[String(name.dropFirst(prefix.count + 1))] = service.requestRanges(name).count }
        return counts
    }

    /// ffprobe reads every packet of `url`: the number of video packets (0 when it failed).
    private static func videoPackets(_ url: String) throws -> Int {
        let probe = try TestSupport.run(
            "/usr/bin/ffprobe",
            [
                "-v", "error", "-count_packets", "-select_streams", "v:0",
                "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", url
            ], timeout: 60)
        XCTAssertEqual(probe.status, 0, "ffprobe \(url): \(probe.stderr)")
        return probe.stdout.split(whereSeparator: \.isNewline).compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.first ?? 0
    }

    private static func playURL(_ server: any JSONCalls, _ id: String) throws -> [String: Any] {
        let (status, body) = try server.call("GET", "/v1/prefetch/items/\(id)/play-url")
        XCTAssertEqual(status, 200, "\(body)")
        return body as? [String: Any] ?? [:]
    }

    // MARK: HLS through serve

    func testHLSPlaysFromServeFullyCachedPartlyCachedAndNotCached() async throws {
        let (folder, service) = (self.folder, self.service!)  // for the closures below, which do not capture the test case
        let hls = try makeHLS()
        serveHLS(hls, prefix: "a")
        serveHLS(hls, prefix: "c")
        // Item b: a master playlist naming one variant in a subfolder (relative URIs resolved against each playlist).
        service.lock.withLock {
            service.files["b/master.m3u8"] = Data("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=200000,RESOLUTION=160x120\nmedia/index.m3u8\n".utf8)
        }
        serveHLS(hls, prefix: "b/media")
        // The origin fails segment 3 of item c: its download stops there (segments 0-2 on disk).
        service.lock.withLock { service.steadyFaults["c/seg3.ts"] = .status(500) }
        service.pages[""] = catalogPage([
            hlsItem("full", url: service.fileURL("a/index.m3u8")),
            hlsItem("none", url: service.fileURL("b/master.m3u8")),
            hlsItem("part", url: service.fileURL("c/index.m3u8"))
        ])
        // No licence in plugins.yaml: serve's --license (`license` here) is the one that registers.
        try writeManifest(license: false)
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true, license: "good-licence") { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)

                // The HLS endpoint was announced when the server started listening.
                let watch = try TestSupport.hubhost(
                    [
                        "hub", "watch", "--manifest", folder + "/plugins.yaml", "--url", server.base,
                        "--replay", "--name", PrefetchNotificationName.hlsServerStarted,
                        "--count", "1", "--timeout", "10", "--json"
                    ], timeout: 30)
                XCTAssertEqual(watch.status, 0, watch.stderr)
                XCTAssertTrue(watch.stdout.contains("\(server.base)/v1/prefetch/hls/"), watch.stdout)

                Self.wait(server, "full", "discovered") { $0["state"] as? String == "discovered" }
                let (_, status) = try server.call("GET", "/v1/prefetch/status")
                XCTAssertEqual((status as? [String: Any])?["licenseSource"] as? String, "option", "serve --license won")
                XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["full", "part"]}"#).0, 200)
                Self.wait(server, "full", "cached") { $0["state"] as? String == "cached" }
                Self.wait(server, "part", "idle after segment 3 failed") { $0["state"] as? String == "idle" }
                XCTAssertTrue((Self.item(server, "part")["downloadError"] as? String ?? "").contains("500"), "\(Self.item(server, "part"))")
                XCTAssertEqual(Self.requests(service, "a"), ["seg0.ts": 1, "seg1.ts": 1, "seg2.ts": 1, "seg3.ts": 1, "seg4.ts": 1, "seg5.ts": 1])
                XCTAssertEqual(Self.requests(service, "c"), ["seg0.ts": 1, "seg1.ts": 1, "seg2.ts": 1, "seg3.ts": 1, "seg4.ts": 0, "seg5.ts": 0])
                XCTAssertEqual(
                    Self.requests(service, "b/media"), ["seg0.ts": 0, "seg1.ts": 0, "seg2.ts": 0, "seg3.ts": 0, "seg4.ts": 0, "seg5.ts": 0])
                let data = folder + "/data/prefetch/items"
                XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: data + "/full/hls").filter { $0.hasSuffix(".ts") }.count, 6)
                XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data + "/full/hls/m-3.ts")), hls.segments["seg3.ts"])

                // Fully cached: every byte from disk, the origin sees nothing (playlist nor segments).
                let full = try Self.playURL(server, "full")
                XCTAssertEqual(full["kind"] as? String, "hls")
                XCTAssertEqual(full["local"] as? Bool, true)
                XCTAssertEqual(full["url"] as? String, server.base + "/v1/prefetch/hls/full/index.m3u8")
                XCTAssertEqual(full["relativePath"] as? String, "full/index.m3u8")
                let playlistRequests = service.requestRanges("a/index.m3u8").count
                XCTAssertEqual(try Self.videoPackets(try XCTUnwrap(full["url"] as? String)), 60)
                XCTAssertEqual(
                    Self.requests(service, "a"), ["seg0.ts": 1, "seg1.ts": 1, "seg2.ts": 1, "seg3.ts": 1, "seg4.ts": 1, "seg5.ts": 1],
                    "no segment from the origin")
                XCTAssertEqual(service.requestRanges("a/index.m3u8").count, playlistRequests, "nor the playlist")

                // Partly cached: segments 0-2 from disk, 3-5 from the origin (which answers again).
                service.lock.withLock { service.steadyFaults["c/seg3.ts"] = nil }
                let part = try Self.playURL(server, "part")
                XCTAssertEqual(part["local"] as? Bool, false)
                XCTAssertEqual(try Self.videoPackets(try XCTUnwrap(part["url"] as? String)), 60)
                let partRequests = Self.requests(service, "c")
                XCTAssertEqual(
                    partRequests.filter { ["seg0.ts", "seg1.ts", "seg2.ts"].contains($0.key) }, ["seg0.ts": 1, "seg1.ts": 1, "seg2.ts": 1],
                    "cached segments are not asked again")
                for name in ["seg3.ts", "seg4.ts", "seg5.ts"] {
                    XCTAssertGreaterThan(partRequests[name] ?? 0, name == "seg3.ts" ? 1 : 0, "\(name) came from the origin")
                }
                XCTAssertEqual(Self.item(server, "part")["state"] as? String, "idle", "playback does not change the item")
                XCTAssertFalse(FileManager.default.fileExists(atPath: data + "/part/hls/m-4.ts"), "a relayed segment is not kept")
                // Downloading it again fetches only the missing segments, then it is cached.
                XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["part"]}"#).0, 200)
                Self.wait(server, "part", "cached") { $0["state"] as? String == "cached" }
                let resumed = Self.requests(service, "c")
                for (name, count) in partRequests {
                    XCTAssertEqual(resumed[name], ["seg0.ts", "seg1.ts", "seg2.ts"].contains(name) ? count : count + 1, name)
                }
                XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data + "/part/hls/m-5.ts")), hls.segments["seg5.ts"])

                // Not cached at all (discovered), through a master playlist: everything from the origin.
                let none = try Self.playURL(server, "none")
                XCTAssertEqual(none["state"] as? String, "discovered")
                XCTAssertEqual(try Self.videoPackets(try XCTUnwrap(none["url"] as? String)), 60)
                XCTAssertTrue(Self.requests(service, "b/media").values.allSatisfy { $0 >= 1 }, "\(Self.requests(service, "b/media"))")
                let (masterStatus, master) = try Self.rawGet(server.base + "/v1/prefetch/hls/none/index.m3u8")
                XCTAssertEqual(masterStatus, 200)
                XCTAssertTrue(String(decoding: master, as: UTF8.self).contains("\nv0.m3u8"), "the variant is a local name")
                XCTAssertFalse(FileManager.default.fileExists(atPath: data + "/none/hls"), "playback keeps nothing on disk")

                // The CLI's answer is the same URL.
                let cli = try TestSupport.hubhost([
                    "prefetch", "play-url", "full", "--manifest", folder + "/plugins.yaml",
                    "--url", server.base, "--json"
                ])
                XCTAssertEqual(cli.status, 0, cli.stderr)
                XCTAssertTrue(
                    cli.stdout.contains("\"url\" : \"\(server.base)/v1/prefetch/hls/full/index.m3u8\"")
                        || cli.stdout.contains("\"url\":\"\(server.base)/v1/prefetch/hls/full/index.m3u8\""), cli.stdout)
                let unknown = try TestSupport.hubhost([
                    "prefetch", "play-url", "nope", "--manifest", folder + "/plugins.yaml",
                    "--url", server.base
                ])
                XCTAssertEqual(unknown.status, 1)
                XCTAssertTrue(unknown.stderr.contains("no item 'nope'"), unknown.stderr)
            }
        }
    }

    func testHLSPartialDownloadBySecondsIsPartiallyCachedAndPlaysThrough() async throws {
        let (folder, service) = (self.folder, self.service!)  // for the closures below, which do not capture the test case
        let hls = try makeHLS()
        serveHLS(hls, prefix: "p")
        service.pages[""] = catalogPage([hlsItem("p", url: service.fileURL("p/index.m3u8"))])
        try writeManifest()
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                Self.wait(server, "p", "discovered") { $0["state"] as? String == "discovered" }
                let (bytesStatus, bytesAnswer) = try server.call("POST", "/v1/prefetch/download", #"{"ids": ["p"], "partial_bytes": 1000}"#)
                XCTAssertEqual(bytesStatus, 200)
                let refusal = ((bytesAnswer as? [String: Any])?["answers"] as? [[String: Any]])?.first
                XCTAssertEqual(refusal?["accepted"] as? Bool, false)
                XCTAssertTrue((refusal?["reason"] as? String ?? "").contains("in seconds"), "\(String(describing: refusal))")

                // The first 2 seconds: segments 0 and 1 (each one second by #EXTINF), then partially cached.
                XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["p"], "partial_seconds": 2}"#).0, 200)
                Self.wait(server, "p", "partially cached") { $0["state"] as? String == "partially_cached" }
                XCTAssertEqual(Self.requests(service, "p"), ["seg0.ts": 1, "seg1.ts": 1, "seg2.ts": 0, "seg3.ts": 0, "seg4.ts": 0, "seg5.ts": 0])
                let partial = Self.item(server, "p")
                XCTAssertEqual((partial["files"] as? [[String: Any]])?.first?["partialSeconds"] as? Double, 2)
                XCTAssertEqual(partial["bytesDownloaded"] as? Int, (hls.segments["seg0.ts"]?.count ?? 0) + (hls.segments["seg1.ts"]?.count ?? 0))
                // Asking again for no more than is on disk changes nothing.
                let (againStatus, again) = try server.call("POST", "/v1/prefetch/download", #"{"ids": ["p"], "partial_seconds": 1.5}"#)
                XCTAssertEqual(againStatus, 200)
                let answer = ((again as? [String: Any])?["answers"] as? [[String: Any]])?.first
                XCTAssertEqual(answer?["state"] as? String, "partially_cached")
                XCTAssertTrue((answer?["reason"] as? String ?? "").contains("nothing to change"), "\(String(describing: answer))")

                // It plays through: the first two segments from disk, the rest from the origin.
                let play = try Self.playURL(server, "p")
                XCTAssertEqual(play["state"] as? String, "partially_cached")
                XCTAssertEqual(try Self.videoPackets(try XCTUnwrap(play["url"] as? String)), 60)
                let played = Self.requests(service, "p")
                XCTAssertEqual(played["seg0.ts"], 1)
                XCTAssertEqual(played["seg1.ts"], 1)
                for name in ["seg2.ts", "seg3.ts", "seg4.ts", "seg5.ts"] { XCTAssertGreaterThanOrEqual(played[name] ?? 0, 1, name) }

                // A download without a length completes it from there.
                XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["p"]}"#).0, 200)
                Self.wait(server, "p", "cached") { $0["state"] as? String == "cached" }
                let done = Self.requests(service, "p")
                for (name, count) in played { XCTAssertEqual(done[name], ["seg0.ts", "seg1.ts"].contains(name) ? count : count + 1, name) }
            }
        }
    }

    func testHLSDownloadKilledMidSegmentResumesWithOnlyTheMissingSegments() async throws {
        let (folder, service) = (self.folder, self.service!)  // for the closures below, which do not capture the test case
        let hls = try makeHLS()
        serveHLS(hls, prefix: "k")
        // Segment 3 comes slowly (500 bytes every 200 ms), so serve can be killed while it arrives.
        service.lock.withLock { service.steadyFaults["k/seg3.ts"] = .slow(chunk: 500, delayMs: 200) }
        service.pages[""] = catalogPage([hlsItem("k", url: service.fileURL("k/index.m3u8"))])
        try writeManifest()
        let cut = folder + "/data/prefetch/items/k/hls"
        // serve as a child process, so that it can be killed with SIGKILL mid-segment.
        try await TestSupport.offPool {
            let server = try ServeProcess(manifest: folder + "/plugins.yaml")
            Self.wait(server, "k", "discovered") { $0["state"] as? String == "discovered" }
            XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["k"]}"#).0, 200)
            let deadline = Date().addingTimeInterval(30)
            while service.sent("k/seg3.ts") == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            XCTAssertGreaterThan(service.sent("k/seg3.ts"), 0, "segment 3 started")
            kill(server.process.processIdentifier, SIGKILL)
            server.process.waitUntilExit()
            XCTAssertFalse(FileManager.default.fileExists(atPath: cut + "/m-3.ts"), "segment 3 was not complete")
            XCTAssertLessThan(service.sent("k/seg3.ts"), hls.segments["seg3.ts"]?.count ?? 0)
        }

        // The next serve (in this process) finds the dead download and resumes it: only segment 3 (from its start) and after.
        service.lock.withLock { service.steadyFaults["k/seg3.ts"] = nil }
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                Self.wait(server, "k", "cached after the restart") { $0["state"] as? String == "cached" }
                XCTAssertEqual(Self.requests(service, "k"), ["seg0.ts": 1, "seg1.ts": 1, "seg2.ts": 1, "seg3.ts": 2, "seg4.ts": 1, "seg5.ts": 1])
                XCTAssertEqual(service.requestRanges("k/seg3.ts").last ?? "none", nil, "a cut segment starts again whole")
                for index in 0..<6 {
                    XCTAssertEqual(
                        try Data(contentsOf: URL(fileURLWithPath: cut + "/m-\(index).ts")), hls.segments["seg\(index).ts"], "segment \(index)")
                }
                XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: cut).contains { $0.hasSuffix(".part") })
                let play = try Self.playURL(server, "k")
                XCTAssertEqual(try Self.videoPackets(try XCTUnwrap(play["url"] as? String)), 60)
                XCTAssertEqual(service.requestRanges("k/seg5.ts").count, 1, "played from disk")
            }
        }
    }

    private static func rawGet(_ url: String, headers: [String: String] = [:]) throws -> (Int, Data) {
        let response = try HTTPFetcher().fetch("GET", url, headers: headers, timeoutSeconds: 20).get()
        return (response.status, response.body)
    }

    private static func rawGetWithHeaders(_ url: String, range: String?) throws -> HTTPFetcher.Response {
        try HTTPFetcher().fetch("GET", url, headers: range.map { ["Range": $0] } ?? [:], timeoutSeconds: 20).get()
    }

    // MARK: files with Range

    func testCachedFileServedWithRangesAndPlayedOverHTTP() async throws {
        let (folder, service) = (self.folder, self.service!)  // for the closures below, which do not capture the test case
        // A real MP4 (its index at the end, so a player seeks with Range requests).
        let made = try TestSupport.run(
            "/usr/bin/ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=6:size=160x120:rate=10",
                "-c:v", "libx264", "-g", "10", folder + "/clip.mp4"
            ])
        XCTAssertEqual(made.status, 0, made.stderr)
        let clip = try Data(contentsOf: URL(fileURLWithPath: folder + "/clip.mp4"))
        service.lock.withLock {
            service.files["clip.mp4"] = clip
            service.files["other.mp4"] = clip
            service.files["half.mp4"] = clip
        }
        service.pages[""] = catalogPage([
            """
            {"unique_id": "clip", "content_id": "1", "source": "acme", "categories": ["news"], "title": "Clip",
             "files": [{"role": "main", "url": "\(service.fileURL("clip.mp4"))", "size": \(clip.count), "sha256": "\(SHA256.hex(of: clip))"}]}
            """,
            """
            {"unique_id": "other", "content_id": "2", "source": "acme", "categories": ["news"], "title": "Other",
             "files": [{"role": "main", "url": "\(service.fileURL("other.mp4"))", "size": \(clip.count)}]}
            """,
            """
            {"unique_id": "half", "content_id": "3", "source": "acme", "categories": ["news"], "title": "Half",
             "files": [{"role": "main", "url": "\(service.fileURL("half.mp4"))", "size": \(clip.count), "sha256": "\(SHA256.hex(of: clip))"}]}
            """
        ])
        try writeManifest()
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                Self.wait(server, "clip", "discovered") { $0["state"] as? String == "discovered" }

                // Not cached: the seed plays its origin URL; the file route refuses.
                let other = try Self.playURL(server, "other")
                XCTAssertEqual(other["kind"] as? String, "file")
                XCTAssertEqual(other["url"] as? String, service.fileURL("other.mp4"))
                XCTAssertEqual(other["local"] as? Bool, false)
                XCTAssertNil(other["localPath"])
                let (refusedStatus, refused) = try server.call("GET", "/v1/prefetch/items/other/file")
                XCTAssertEqual(refusedStatus, 409)
                XCTAssertEqual(((refused as? [String: Any])?["error"] as? [String: Any])?["code"] as? String, "not_playable")

                XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["clip"]}"#).0, 200)
                Self.wait(server, "clip", "cached") { $0["state"] as? String == "cached" }
                let play = try Self.playURL(server, "clip")
                XCTAssertEqual(play["local"] as? Bool, true)
                let path = try XCTUnwrap(play["localPath"] as? String)
                XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), clip)
                let url = try XCTUnwrap(play["url"] as? String)
                XCTAssertEqual(url, server.base + "/v1/prefetch/items/clip/file")

                let size = clip.count
                var response = try Self.rawGetWithHeaders(url, range: nil)
                XCTAssertEqual(response.status, 200)
                XCTAssertEqual(response.body, clip)
                XCTAssertEqual(response.headers["accept-ranges"], "bytes")
                response = try Self.rawGetWithHeaders(url, range: "bytes=10-19")
                XCTAssertEqual(response.status, 206)
                XCTAssertEqual(response.headers["content-range"], "bytes 10-19/\(size)")
                XCTAssertEqual(response.body, clip.subdata(in: 10..<20))
                response = try Self.rawGetWithHeaders(url, range: "bytes=\(size - 7)-")
                XCTAssertEqual(response.status, 206)
                XCTAssertEqual(response.body, clip.suffix(7))
                response = try Self.rawGetWithHeaders(url, range: "bytes=-5")
                XCTAssertEqual(response.status, 206)
                XCTAssertEqual(response.headers["content-range"], "bytes \(size - 5)-\(size - 1)/\(size)")
                XCTAssertEqual(response.body, clip.suffix(5))
                response = try Self.rawGetWithHeaders(url, range: "bytes=100-\(size + 1000)")
                XCTAssertEqual(response.status, 206, "an end past the file is the file's end")
                XCTAssertEqual(response.body, clip.subdata(in: 100..<size))
                for bad in ["bytes=\(size)-", "bytes=20-10", "bytes=abc", "bytes=-0", "bytes=99999999999999999999-"] {
                    response = try Self.rawGetWithHeaders(url, range: bad)
                    XCTAssertEqual(response.status, 416, bad)
                    XCTAssertEqual(response.headers["content-range"], "bytes */\(size)", bad)
                }
                // A player: ffprobe reads the MP4 through the route, seeking by Range.
                let before = service.requestRanges("clip.mp4").count
                XCTAssertEqual(try Self.videoPackets(url), 60)
                XCTAssertEqual(service.requestRanges("clip.mp4").count, before, "played from disk")
                // An HLS route for a non-HLS item is refused.
                XCTAssertEqual(try server.call("GET", "/v1/prefetch/hls/clip/index.m3u8").0, 409)

                // Partially cached (its first half on disk): the start from disk, the rest from the origin.
                let half = size / 2
                XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["half"], "partial_bytes": \#(half)}"#).0, 200)
                Self.wait(server, "half", "partially cached") { $0["state"] as? String == "partially_cached" }
                let halfPlay = try Self.playURL(server, "half")
                XCTAssertEqual(halfPlay["url"] as? String, server.base + "/v1/prefetch/items/half/file")
                XCTAssertEqual(halfPlay["local"] as? Bool, false)
                XCTAssertNil(halfPlay["localPath"])
                let halfURL = server.base + "/v1/prefetch/items/half/file"
                XCTAssertEqual(service.requestRanges("half.mp4"), ["bytes=0-\(half - 1)"])
                response = try Self.rawGetWithHeaders(halfURL, range: "bytes=0-99")
                XCTAssertEqual(response.status, 206)
                XCTAssertEqual(response.body, clip.subdata(in: 0..<100))
                XCTAssertEqual(service.requestRanges("half.mp4").count, 1, "the start comes from disk")
                response = try Self.rawGetWithHeaders(halfURL, range: "bytes=\(size - 10)-")
                XCTAssertEqual(response.status, 206)
                XCTAssertEqual(response.body, clip.suffix(10))
                XCTAssertEqual(service.requestRanges("half.mp4").last, "bytes=\(size - 10)-\(size - 1)", "only the bytes not on disk")
                XCTAssertNotNil(service.lock.withLock { service.fileHeaders["half.mp4"]?.last?["if-range"] }, "guarded by the validator")
                response = try Self.rawGetWithHeaders(halfURL, range: nil)
                XCTAssertEqual(response.status, 200)
                XCTAssertEqual(response.body, clip, "the start from disk and the rest from the origin make the file")
                XCTAssertEqual(service.requestRanges("half.mp4").last, "bytes=\(half)-\(size - 1)")
                XCTAssertEqual(try Self.videoPackets(halfURL), 60)
                XCTAssertTrue(
                    service.requestRanges("half.mp4").dropFirst().allSatisfy { range in
                        guard let range, let from = Int(range.dropFirst(6).split(separator: "-").first ?? "") else { return false }
                        return from >= half
                    }, "the origin is never asked for bytes on disk: \(service.requestRanges("half.mp4"))")
                // The file changed at the origin: its end is not spliced onto the old start.
                service.lock.withLock { service.files["half.mp4"] = Data(clip.map { $0 ^ 0x5a }) }
                response = try Self.rawGetWithHeaders(halfURL, range: "bytes=\(size - 10)-")
                XCTAssertEqual(response.status, 502)
                XCTAssertEqual(Self.item(server, "half")["state"] as? String, "partially_cached")
            }
        }
    }

    // MARK: an imported HLS download

    func testImportedHLSFolderIsCachedAndPlaysFromServeWithTheOriginGone() async throws {
        let (folder, service) = (self.folder, self.service!)  // for the closures below, which do not capture the test case
        // An app's HLS download, as the PCD SDK's migration example imports one: a master playlist,
        // its media playlist in video/, six AES-128 segments and their key beside it.
        let out = folder + "/app-hls"
        try FileManager.default.createDirectory(atPath: out + "/video", withIntermediateDirectories: true)
        let key = Data((0..<16).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 3) })
        try key.write(to: URL(fileURLWithPath: out + "/video/enc.key"))
        try "enc.key\n\(out)/video/enc.key\n".write(toFile: folder + "/keyinfo", atomically: true, encoding: .utf8)
        let made = try TestSupport.run(
            "/usr/bin/ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=6:size=160x120:rate=10", "-c:v", "libx264", "-g", "10",
                "-keyint_min", "10", "-sc_threshold", "0", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
                "-hls_key_info_file", folder + "/keyinfo", "-hls_segment_filename", out + "/video/seg%d.ts", out + "/video/index.m3u8"
            ])
        XCTAssertEqual(made.status, 0, made.stderr)
        try "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=200000,RESOLUTION=160x120\nvideo/index.m3u8\n".write(
            toFile: out + "/master.m3u8", atomically: true, encoding: .utf8)
        var read: [String: Data] = [:]
        for name in try XCTUnwrap(FileManager.default.subpaths(atPath: out)) where !name.hasSuffix("video") {
            read[name] = try Data(contentsOf: URL(fileURLWithPath: out + "/" + name))
        }
        let files = read
        XCTAssertTrue(try XCTUnwrap(String(data: files["video/index.m3u8"] ?? Data(), encoding: .utf8)).contains(#"URI="enc.key""#))
        let size = files.values.reduce(0) { $0 + $1.count }

        service.stop()  // the catalog service and the origin are gone for good
        try writeManifest(license: false)
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let id = "Provider_ABC:hls-1"
                let (status, answer) = try server.call(
                    "POST", "/v1/prefetch/import",
                    #"{"ContentId": "hls-1", "Provider": "Provider_ABC", "DownloadStatus": "FullyDownloaded", "FilePath": "\#(out)", "Size": \#(size)}"#
                )
                XCTAssertEqual(status, 200, "\(answer)")
                let answers = ((answer as? [String: Any])?["answers"] as? [[String: Any]]) ?? []
                XCTAssertEqual(answers.first?["accepted"] as? Bool, true, "\(answer)")
                XCTAssertEqual(answers.first?["state"] as? String, "cached", "\(answer)")
                XCTAssertEqual(Self.item(server, id)["bytesDownloaded"] as? Int, size)
                try FileManager.default.removeItem(atPath: out)  // the app's copy goes too

                let play = try Self.playURL(server, id)
                XCTAssertEqual(play["kind"] as? String, "hls")
                let url = try XCTUnwrap(play["url"] as? String)
                XCTAssertEqual(url, server.base + "/v1/prefetch/hls/\(id)/index.m3u8")
                let (masterStatus, master) = try Self.rawGet(url)
                XCTAssertEqual(masterStatus, 200)
                XCTAssertEqual(
                    String(decoding: master, as: UTF8.self).split(separator: "\n"),
                    ["#EXTM3U", "#EXT-X-STREAM-INF:BANDWIDTH=200000,RESOLUTION=160x120", "v0.m3u8"])
                let (mediaStatus, media) = try Self.rawGet(server.base + "/v1/prefetch/hls/\(id)/v0.m3u8")
                XCTAssertEqual(mediaStatus, 200)
                let text = String(decoding: media, as: UTF8.self)
                XCTAssertTrue(text.contains(#"URI="v0-0.key""#), text)
                // Every resource from the item's folder: the key, then the segments in playlist order.
                var expected = ["v0-0.key": key]
                for index in 0..<6 { expected["v0-\(index + 1).ts"] = files["video/seg\(index).ts"] }
                XCTAssertEqual(expected.count, 7)
                for (name, data) in expected {
                    XCTAssertTrue(text.contains(name), "\(name) in \(text)")
                    let (resourceStatus, body) = try Self.rawGet(server.base + "/v1/prefetch/hls/\(id)/\(name)")
                    XCTAssertEqual(resourceStatus, 200, name)
                    XCTAssertEqual(body, data, name)
                }
                // A player decrypts and reads every frame through the local endpoint.
                XCTAssertEqual(try Self.videoPackets(url), 60)
                XCTAssertEqual(Self.item(server, id)["state"] as? String, "cached")
            }
        }
    }

    // MARK: hostile playlists

    func testHostilePlaylistsAreRefusedAndNamesNeverReachTheDisk() async throws {
        let (folder, service) = (self.folder, self.service!)  // for the closures below, which do not capture the test case
        let hls = try makeHLS()
        serveHLS(hls, prefix: "ok")
        service.lock.withLock {
            // A segment on another host (e.g. a cloud metadata address), and one more than 1 MiB of playlist.
            service.files["evil/index.m3u8"] = Data(
                "#EXTM3U\n#EXTINF:1,\nseg0.ts\n#EXTINF:1,\nhttp://169.254.169.254/latest/meta-data\n#EXT-X-ENDLIST\n".utf8)
            service.files["evil/seg0.ts"] = hls.segments["seg0.ts"]
            service.files["huge/index.m3u8"] = Data(("#EXTM3U\n" + String(repeating: "#EXTINF:1,\nseg0.ts\n", count: 60_000)).utf8)
        }
        service.pages[""] = catalogPage([
            hlsItem("ok", url: service.fileURL("ok/index.m3u8")),
            hlsItem("evil", url: service.fileURL("evil/index.m3u8")),
            hlsItem("huge", url: service.fileURL("huge/index.m3u8"))
        ])
        try writeManifest()
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                Self.wait(server, "ok", "discovered") { $0["state"] as? String == "discovered" }
                XCTAssertEqual(try server.call("POST", "/v1/prefetch/download", #"{"ids": ["ok", "evil", "huge"]}"#).0, 200)
                Self.wait(server, "ok", "cached") { $0["state"] as? String == "cached" }
                Self.wait(server, "evil", "idle") { $0["state"] as? String == "idle" }
                Self.wait(server, "huge", "idle") { $0["state"] as? String == "idle" }
                XCTAssertTrue(
                    (Self.item(server, "evil")["downloadError"] as? String ?? "").contains("another origin"), "\(Self.item(server, "evil"))")
                XCTAssertTrue((Self.item(server, "huge")["downloadError"] as? String ?? "").contains("larger than"), "\(Self.item(server, "huge"))")
                XCTAssertEqual(service.requestRanges("evil/seg0.ts").count, 0, "nothing of a refused playlist is fetched")

                // Playback refuses them with the reason.
                for id in ["evil", "huge"] {
                    let (status, body) = try server.call("GET", "/v1/prefetch/hls/\(id)/index.m3u8")
                    XCTAssertEqual(status, 409, "\(body)")
                    XCTAssertEqual(((body as? [String: Any])?["error"] as? [String: Any])?["code"] as? String, "not_playable")
                }
                // Names that are not the layout's never reach the disk: traversal, the layout file, the catalog.
                for path in [
                    "/v1/prefetch/hls/ok/layout.json", "/v1/prefetch/hls/ok/..%2F..%2Fprefetch.sqlite", "/v1/prefetch/hls/ok/..",
                    "/v1/prefetch/hls/ok/m-99.ts", "/v1/prefetch/hls/..%2Fok/index.m3u8", "/v1/prefetch/hls/ok/%2Fetc%2Fpasswd"
                ] {
                    let (status, _) = try Self.rawGet(server.base + path)
                    XCTAssertEqual(status, 404, path)
                }
                let (okStatus, segment) = try Self.rawGet(server.base + "/v1/prefetch/hls/ok/m-0.ts")
                XCTAssertEqual(okStatus, 200)
                XCTAssertEqual(segment, hls.segments["seg0.ts"])
            }
        }
    }

    // MARK: the playlist reader

    func testPlaylistReaderResolvesRewritesAndBounds() async throws {
        let base = "http://cdn.test:8080/v/1/index.m3u8"
        let text = """
            #EXTM3U
            #EXT-X-KEY:METHOD=AES-128,URI="keys/k1.key",IV=0x1
            #EXT-X-MAP:URI="init.mp4",BYTERANGE="100@0"
            #EXTINF:1,
            ../../../../etc/passwd
            #EXTINF:1,
            /abs/seg.ts
            #EXTINF:1,
            sub/../seg.ts?token=a,b
            #EXTINF:1,
            http://cdn.test:8080/abs/seg.ts
            #EXT-X-ENDLIST
            """
        let layout = try await HLSLayout.build(indexURL: base, indexText: text) { _ in
            XCTFail("a media playlist fetches nothing")
            return ""
        }
        XCTAssertEqual(layout.order, ["m-0.key", "m-1.mp4", "m-2.bin", "m-3.ts", "m-4.ts"], "one name per URL, made by hubhost")
        XCTAssertEqual(layout.starts, ["m-0.key": 0, "m-1.mp4": 0, "m-2.bin": 0, "m-3.ts": 1, "m-4.ts": 2], "seconds before each, by #EXTINF")
        XCTAssertThrowsError(try HLSPlaylist(text: "#EXTM3U\n#EXTINF:nan,\ns.ts\n", url: base, origin: base))
        XCTAssertThrowsError(try HLSPlaylist(text: "#EXTM3U\n#EXTINF:1e300,\ns.ts\n", url: base, origin: base))
        XCTAssertEqual(layout.resources["m-2.bin"], "http://cdn.test:8080/etc/passwd", "a traversal only moves on the origin")
        XCTAssertEqual(layout.resources["m-3.ts"], "http://cdn.test:8080/abs/seg.ts")
        XCTAssertEqual(layout.resources["m-4.ts"], "http://cdn.test:8080/v/1/seg.ts?token=a,b")
        let rewritten = try XCTUnwrap(layout.playlists[HLSLayout.indexName])
        XCTAssertTrue(rewritten.contains(#"#EXT-X-KEY:METHOD=AES-128,URI="m-0.key",IV=0x1"#), rewritten)
        XCTAssertTrue(rewritten.contains(#"#EXT-X-MAP:URI="m-1.mp4",BYTERANGE="100@0""#), rewritten)
        XCTAssertEqual(rewritten.components(separatedBy: "\nm-3.ts").count, 3, "the same URL twice, one name")
        XCTAssertFalse(rewritten.contains("passwd"))
        for name in layout.order { XCTAssertTrue(HLSLayout.isLocalName(name), name) }
        for name in ["..", "../x", "layout.json", "/etc/passwd", ".hidden", "a/b", String(repeating: "a", count: 65)] {
            XCTAssertFalse(HLSLayout.isLocalName(name), name)
        }

        for (uri, why) in [
            ("http://169.254.169.254/x.ts", "another origin"), ("//evil.test/x.ts", "another origin"),
            ("https://cdn.test:8080/x.ts", "another origin"), ("http://cdn.test:9090/x.ts", "another origin"),
            ("file:///etc/passwd", "not an http(s) URL"), ("data:text/plain,hi", "not an http(s) URL")
        ] {
            XCTAssertThrowsError(try HLSPlaylist(text: "#EXTM3U\n#EXTINF:1,\n\(uri)\n", url: base, origin: base), uri) { error in
                XCTAssertTrue("\(error)".contains(why), "\(uri): \(error)")
            }
        }
        XCTAssertThrowsError(try HLSPlaylist(text: "not a playlist\nseg.ts\n", url: base, origin: base))
        XCTAssertThrowsError(try HLSPlaylist(text: "#EXTM3U\n" + String(repeating: "#EXTINF:1,\nseg.ts\n", count: 20_001), url: base, origin: base)) {
            error in
            XCTAssertTrue("\(error)".contains("more than 20000 URIs"), "\(error)")
        }
        XCTAssertThrowsError(
            try HLSPlaylist(text: "#EXTM3U\n" + String(repeating: "#", count: HLSPlaylist.Limits.maxPlaylistBytes), url: base, origin: base))
        // A master whose variant is a master again is refused; variants are fetched in order and named v0, v1.
        var fetched: [String] = []
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow/i.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2\nhigh/i.m3u8\n"
        let two = try await HLSLayout.build(indexURL: base, indexText: master) { url in
            fetched.append(url)
            return "#EXTM3U\n#EXTINF:1,\ns.ts\n#EXT-X-ENDLIST\n"
        }
        XCTAssertEqual(fetched, ["http://cdn.test:8080/v/1/low/i.m3u8", "http://cdn.test:8080/v/1/high/i.m3u8"])
        XCTAssertEqual(Set(two.playlists.keys), ["index.m3u8", "v0.m3u8", "v1.m3u8"])
        XCTAssertEqual(two.resources["v1-0.ts"], "http://cdn.test:8080/v/1/high/s.ts")
        do {
            _ = try await HLSLayout.build(indexURL: base, indexText: master) { _ in master }
            XCTFail("a nested master playlist")
        } catch {
            XCTAssertTrue("\(error)".contains("master playlist too"), "\(error)")
        }
    }

    // MARK: the Swift API

    func testHLSServerNotificationsAndPlaybackRefusalsInProcess() throws {
        service.pages[""] = catalogPage([hlsItem("h", url: service.fileURL("h/index.m3u8"))])
        try writeManifest()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        let engine = try XCTUnwrap(host.prefetch())
        try engine.register()
        _ = try engine.sync()
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var list: [HostNotification] = []
        }
        let seen = Seen()
        let token = host.notifications.subscribe { notification in seen.lock.withLock { seen.list.append(notification) } }
        defer { host.notifications.unsubscribe(token) }

        // No server in this process: an HLS item has nowhere to play from.
        XCTAssertNil(engine.hlsServerURL)
        XCTAssertThrowsError(try engine.playback("h")) { error in
            XCTAssertTrue("\(error)".contains("HLS plays through hubhost serve's HLS endpoint"), "\(error)")
        }
        XCTAssertThrowsError(try engine.playback("missing")) { XCTAssertEqual($0 as? PrefetchError, .unknownItem("missing")) }
        engine.hlsServerStarted(serverURL: "http://127.0.0.1:9")
        XCTAssertEqual(engine.hlsServerURL, "http://127.0.0.1:9/v1/prefetch/hls/")
        XCTAssertEqual(try engine.playback("h").url, "http://127.0.0.1:9/v1/prefetch/hls/h/index.m3u8")
        XCTAssertEqual(try engine.playback("h", serverURL: "http://10.0.0.1:1").url, "http://10.0.0.1:1/v1/prefetch/hls/h/index.m3u8")
        engine.hlsServerStopped()
        engine.hlsServerStopped()  // once only
        XCTAssertNil(engine.hlsServerURL)
        let names = seen.lock.withLock { seen.list.filter { $0.name.hasPrefix("PrefetchHLS") } }
        XCTAssertEqual(names.map(\.name), [PrefetchNotificationName.hlsServerStarted, PrefetchNotificationName.hlsServerStopped])
        XCTAssertEqual(
            names.map { $0.payload["url"] }, [.string("http://127.0.0.1:9/v1/prefetch/hls/"), .string("http://127.0.0.1:9/v1/prefetch/hls/")])

        // A deleted item does not play.
        _ = try engine.delete(["h"])
        XCTAssertThrowsError(try engine.playback("h", serverURL: "http://127.0.0.1:9")) { error in
            XCTAssertTrue("\(error)".contains("deleted"), "\(error)")
        }
    }
}
