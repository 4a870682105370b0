import Foundation
import XCTest

@testable import HubHostKit

/// Reloading plugins.yaml in a running host: instances added, removed, reconfigured and replaced
/// (a library rebuilt at the same path), unchanged ones untouched, a manifest with problems
/// refused whole, and a crowd of clients posting events while `serve` reloads.
final class ReloadTests: XCTestCase {
    var folder = ""

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
        try build(attribute: "App Version")
    }

    /// The guide's app-version augmentation (adds the attribute `attribute`, from config `version`),
    /// built into `app-version/libapp-version.so`, replacing what is there.
    /// `marker` goes into the library as a string, so two builds of one attribute differ in content.
    func build(attribute: String, marker: String = "") throws {
        try Self.buildAppVersion(in: folder, attribute: attribute, marker: marker)
    }

    /// `build` into `folder` (for other suites that need the guide's library).
    static func buildAppVersion(in folder: String, attribute: String, marker: String = "") throws {
        let source =
            try DocumentationText.block(after: "<!-- guide: app-version.c -->").replacingOccurrences(
                of: "\"App Version\"", with: "\"\(attribute)\"") + "\nconst char *app_version_build_marker = \"\(marker)\";\n"
        try TestSupport.write(source, to: folder + "/app-version/app-version.c")
        try TestSupport.write(try DocumentationText.block(after: "<!-- guide: app-version.yaml -->"), to: folder + "/app-version/plugin.yaml")
        let library = folder + "/app-version/libapp-version.so"
        let partial = library + ".new"
        let cc = try TestSupport.run(
            "/usr/bin/env",
            [
                "cc", "-std=c11", "-shared", "-fPIC", "-I", TestSupport.repository + "/Protocols/include",
                "-o", partial, folder + "/app-version/app-version.c"
            ])
        XCTAssertEqual(cc.status, 0, cc.stderr)
        XCTAssertEqual(rename(partial, library), 0, "replaced as a deployment would: a new file at the same path")
    }

    /// plugins.yaml with app-version instances (id: version) and the bundled extra operators.
    /// Instances named in `isolated` run in a worker process.
    func writeManifest(_ versions: [(String, String)], extra: String = "", server: Bool = false, isolated: Set<String> = []) throws {
        try Self.writeManifest(in: folder, versions, extra: extra, server: server, isolated: isolated)
    }

    /// `writeManifest` into `folder` (for closures that do not capture the test case).
    static func writeManifest(
        in folder: String, _ versions: [(String, String)], extra: String = "", server: Bool = false, isolated: Set<String> = []
    ) throws {
        var text = "data_dir: data\nlogging: {severity: warning}\n"
        if server { text += "server: {host: 127.0.0.1, port: 0}\n" }
        text += extra + "plugins:\n  - id: keep\n    use: \(TestSupport.plugin("ExtraOperators"))\n"
        for (id, version) in versions {
            text += "  - id: \(id)\n    use: app-version/plugin.yaml\n    config: {version: \"\(version)\"}\n"
            if isolated.contains(id) { text += "    isolation: process\n" }
        }
        try TestSupport.write(text, to: folder + "/plugins.yaml")
    }

    func openHost() throws -> HubHost {
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    func testAddedChangedAndRemovedInstancesApplyAndUnchangedOnesAreUntouched() throws {
        try writeManifest([("app", "1.0")])
        let host = try openHost()
        let engine = try host.events()
        XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "A")).attributes.first { $0.name == "App Version" }?.value, .string("1.0"))
        let kept = try XCTUnwrap(host.registry.entry(id: "keep")?.plugins.first)

        try writeManifest([("app", "2.0"), ("second", "9.9")])
        let changed = host.reload()
        XCTAssertEqual(changed.outcome, .applied, "\(changed)")
        XCTAssertEqual(changed.changed, ["app"])
        XCTAssertEqual(changed.added, ["second"])
        XCTAssertEqual(changed.generation, 1)
        XCTAssertTrue(host.registry.entry(id: "keep")?.plugins.first === kept, "an unchanged instance is the same object, not created again")
        XCTAssertEqual(host.registry.entry(id: "app")?.generation, 1)
        XCTAssertEqual(host.registry.entry(id: "keep")?.generation, 0)
        let second = try engine.track(Event(type: .namedEvent, name: "B"))[attribute: "App Version"]
        XCTAssertTrue(second == .string("2.0") || second == .string("9.9"), "the new set only: \(String(describing: second))")

        try writeManifest([("second", "9.9")])
        let removed = host.reload()
        XCTAssertEqual(removed.removed, ["app"])
        XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "C")).attributes.first { $0.name == "App Version" }?.value, .string("9.9"))
        XCTAssertEqual(host.reload().outcome, .unchanged, "the same file again: nothing to do")
        XCTAssertEqual(host.registry.generation, 2)
        let names = host.notifications.recentNotifications().map(\.name)
        XCTAssertEqual(names.filter { $0 == "PluginsReloaded" }.count, 3, "\(names)")
    }

    /// A library rebuilt at the same path is loaded as the new file (dlopen would hand back the old
    /// mapping): the instance is changed by the library's content alone.
    func testALibraryReplacedAtTheSamePathIsLoadedAsTheNewFile() throws {
        try writeManifest([("app", "1.0")])
        let host = try openHost()
        let engine = try host.events()
        XCTAssertNotNil(try engine.track(Event(type: .namedEvent, name: "A"))[attribute: "App Version"])
        try build(attribute: "Build B")
        let report = host.reload()
        XCTAssertEqual(report.changed, ["app"], "\(report)")
        let tracked = try engine.track(Event(type: .namedEvent, name: "B"))
        XCTAssertEqual(tracked[attribute: "Build B"], .string("1.0"))
        XCTAssertNil(tracked[attribute: "App Version"])
        XCTAssertNotEqual(host.registry.entry(id: "app")?.libraryHash, nil)
    }

    /// 200 replacements of one library, alternating two builds: each content is mapped once, and
    /// the process does not grow with the number of reloads.
    func testTwoHundredReplacementsKeepMemoryBounded() throws {
        try writeManifest([("app", "1.0")])
        let host = try openHost()
        let engine = try host.events()
        let libraries = PluginLibrary.openedCount
        // The two builds, made once; each round puts one at the library's path as a new file.
        let library = folder + "/app-version/libapp-version.so"
        try FileManager.default.copyItem(atPath: library, toPath: folder + "/build-a.so")
        try build(attribute: "Build B")
        try FileManager.default.copyItem(atPath: library, toPath: folder + "/build-b.so")
        var before = 0.0
        for round in 0..<200 {
            try? FileManager.default.removeItem(atPath: library + ".new")
            try FileManager.default.copyItem(atPath: folder + (round % 2 == 0 ? "/build-b.so" : "/build-a.so"), toPath: library + ".new")
            XCTAssertEqual(rename(library + ".new", library), 0)
            XCTAssertEqual(host.reload().outcome, .applied, "round \(round)")
            if round == 20 { before = Self.residentMB() }
        }
        XCTAssertLessThanOrEqual(PluginLibrary.openedCount, libraries + 1, "two contents: the original and one copy")
        XCTAssertNotNil(try engine.track(Event(type: .namedEvent, name: "LAST"))[attribute: "App Version"])
        XCTAssertLessThan(Self.residentMB() - before, 64, "resident memory after 20 and after 200 reloads")
    }

    /// An instance that failed to load (its library missing) is tried again by the next reload,
    /// though plugins.yaml is the same: the library may have been built since.
    func testAFailedInstanceIsTriedAgainOnReload() throws {
        try writeManifest([("app", "1.0")])
        let library = folder + "/app-version/libapp-version.so"
        try FileManager.default.moveItem(atPath: library, toPath: folder + "/built.so")
        let host = try openHost()
        XCTAssertEqual(host.registry.entry(id: "app")?.state.name, "failed")
        try FileManager.default.moveItem(atPath: folder + "/built.so", toPath: library)
        let report = host.reload()
        XCTAssertEqual(report.changed, ["app"], "\(report)")
        XCTAssertEqual(host.registry.entry(id: "app")?.state.name, "loaded")
        XCTAssertEqual(try host.events().track(Event(type: .namedEvent, name: "A"))[attribute: "App Version"], .string("1.0"))
    }

    func testAManifestWithProblemsOrARestartOnlyChangeIsRefusedAndChangesNothing() throws {
        try writeManifest([("app", "1.0")])
        let host = try openHost()
        let engine = try host.events()
        try TestSupport.write(
            "data_dir: data\nplugins:\n  - id: app\n    use: app-version/plugin.yaml\n    config: {versoin: 2}\n", to: folder + "/plugins.yaml")
        let bad = host.reload()
        XCTAssertEqual(bad.outcome, .refused)
        XCTAssertTrue(bad.problems.contains { $0.contains("plugins.yaml:") && $0.contains("versoin") }, "\(bad.problems)")
        try writeManifest([("app", "2.0")], extra: "events: {session_timeout: 7 sec, flush_interval: 7 sec}\n")
        let restart = host.reload()
        XCTAssertEqual(restart.outcome, .refused)
        XCTAssertTrue(restart.problems.contains { $0.hasPrefix("events.session_timeout") }, "\(restart.problems)")
        XCTAssertFalse(restart.problems.contains { $0.hasPrefix("events.flush_interval") }, "a live key is no problem: \(restart.problems)")
        XCTAssertEqual(host.registry.generation, 0, "nothing applied")
        XCTAssertEqual(engine.settings.flushInterval, 60, "not even the live key of a refused reload")
        XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "A"))[attribute: "App Version"], .string("1.0"))
    }

    /// The live settings of every engine change with a reload, in the engines already open: event
    /// delivery, campaigns, the hub's download deadline and the prefetch policy.
    func testLiveSettingsReachTheOpenEngines() throws {
        let prefetch = "prefetch: {enabled: true, max_concurrent_downloads: 4, storage_low: 1000}\n"
        try writeManifest([("app", "1.0")], extra: prefetch + "hub: {download_timeout: 60 sec}\n")
        let host = try openHost()
        let (events, hub, prefetchEngine) = (try host.events(), try XCTUnwrap(try host.hub()), try XCTUnwrap(try host.prefetch()))
        let campaigns = try XCTUnwrap(try host.campaigns())
        try writeManifest(
            [("app", "1.0")],
            extra: "events: {max_num_retries: 9, post_timeout: 3 sec, cache_size: 50, augmentation_timeout: 2 sec}\n"
                + "campaigns: {context_rule: none}\n"
                + "prefetch: {enabled: true, max_concurrent_downloads: 1, storage_low: 5000, item_download_behavior: none}\n"
                + "hub: {download_timeout: 5 sec}\n")
        let report = host.reload()
        XCTAssertEqual(report.outcome, .applied, "\(report)")
        XCTAssertEqual(report.changed, [], "no instance changed")
        XCTAssertEqual(
            report.settings,
            [
                "campaigns.context_rule", "events.augmentation_timeout", "events.cache_size", "events.max_num_retries", "events.post_timeout",
                "hub.download_timeout", "prefetch.item_download_behavior", "prefetch.max_concurrent_downloads", "prefetch.storage_low"
            ])
        XCTAssertEqual(events.delivery.settings.maxNumRetries, 9, "delivery reads the new retries")
        XCTAssertEqual(events.delivery.settings.postTimeout, 3)
        XCTAssertEqual(events.settings.cacheSize, 50)
        XCTAssertEqual(events.timeline.timeoutSeconds, 2, "events tracked from now on have the new deadline")
        XCTAssertEqual(campaigns.contextRule, CampaignEngine.ContextRule.none)
        XCTAssertEqual(hub.settings.downloadTimeout, 5)
        XCTAssertEqual(prefetchEngine.settings.maxConcurrentDownloads, 1)
        XCTAssertEqual(prefetchEngine.settings.storageLow, 5000)
        XCTAssertEqual(prefetchEngine.settings.itemDownloadBehavior, PrefetchSettings.DownloadBehavior.none)
        XCTAssertNotNil(try events.track(Event(type: .namedEvent, name: "A"))[attribute: "App Version"], "the plugins still run")
    }

    /// `hubhost plugins list` and `status` show each instance's generation and its library's SHA-256.
    func testPluginsListShowsGenerationAndLibraryHash() throws {
        try writeManifest([("app", "1.0")])
        let listed = try TestSupport.hubhost(["plugins", "list", "--json"], manifest: folder + "/plugins.yaml", in: folder)
        XCTAssertEqual(listed.status, 0, listed.description)
        let rows = try TestSupport.json(listed.stdout, as: [[String: Any]].self)
        let app = try XCTUnwrap(rows.first { $0["id"] as? String == "app" })
        XCTAssertEqual(app["generation"] as? Int, 0)
        let expected = try XCTUnwrap(SHA256.hex(ofFile: folder + "/app-version/libapp-version.so"))
        XCTAssertEqual(app["libraryHash"] as? String, expected)
        let table = try TestSupport.hubhost(["status"], manifest: folder + "/plugins.yaml", in: folder)
        XCTAssertTrue(table.stdout.contains(String(expected.prefix(12))), table.stdout)
    }

    /// A running serve picks up a collector URL, a flush interval and a campaign ping URL from a
    /// reload: events that waited on disk go out on the new cadence, and the new ping endpoint is
    /// asked, with no restart.
    func testServeDeliversOnTheNewCadenceAfterAReload() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        let collector = try TestCollector()
        try writeManifest([("app", "1.0")], extra: "events: {flush_interval: 3600 sec, cache_size: 1000}\n", server: true)
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                func writeManifest(_ versions: [(String, String)], extra: String = "", server: Bool = false) throws {
                    try Self.writeManifest(in: folder, versions, extra: extra, server: server)
                }
                for name in ["A", "B", "C"] {
                    XCTAssertEqual(try serve.call("POST", "/v1/events", #"{"type":"named_event","name":"\#(name)"}"#).0, 201)
                }
                try writeManifest(
                    [("app", "1.0")],
                    extra: "events: {flush_interval: 0.2 sec, cache_size: 1000, collector_url: \"\(collector.url)\"}\n"
                        + "campaigns: {ping_url: \"\(collector.url("/ping"))\"}\n", server: true)
                let (status, body) = try serve.call("POST", "/v1/admin/reload")
                XCTAssertEqual(status, 200, "\(body)")
                let settings = (body as? [String: Any])?["settings"] as? [String]
                XCTAssertEqual(settings, ["campaigns.ping_url", "events.collector_url", "events.flush_interval"])
                // cache_size is not reached and the old interval was an hour: only the new cadence posts them.
                XCTAssertTrue(TestSupport.waitUntil(timeout: 15) { collector.requests.count > 0 }, "the waiting events were posted")
                XCTAssertTrue(TestSupport.waitUntil(timeout: 15) { collector.hits("/ping") > 0 }, "the new ping endpoint was asked")
                let posted = collector.requests.map { String(decoding: $0.body, as: UTF8.self) }.joined()
                for name in ["A", "B", "C"] { XCTAssertTrue(posted.contains("\"\(name)\""), "\(name) was posted: \(posted.prefix(500))") }

                try writeManifest(
                    [("app", "1.0")],
                    extra: "events: {flush_interval: 0.2 sec, cache_size: 1000, collector_url: \"\(collector.url)\", session_timeout: 9 sec}\n"
                        + "campaigns: {ping_url: \"\(collector.url("/ping"))\"}\n", server: true)
                let (refused, problems) = try serve.call("POST", "/v1/admin/reload")
                XCTAssertEqual(refused, 409)
                XCTAssertTrue("\(problems)".contains("events.session_timeout"), "the key that needs a restart is named: \(problems)")
            }
        }
    }

    /// `hubhost reload` and `hubhost hub watch` send the server's bearer token (named by
    /// server.auth_token_env) to a serve that asks for one.
    func testTheReloadCommandAndTheWatchSendTheServersToken() async throws {
        let folder = self.folder  // for the closures below, which do not capture the test case
        let token = UUID().uuidString
        setenv("HUBHOST_RELOAD_TEST_TOKEN", token, 1)
        try writeManifest([("app", "1.0")], extra: "server: {host: 127.0.0.1, port: 0, auth_token_env: HUBHOST_RELOAD_TEST_TOKEN}\n")
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                func writeManifest(_ versions: [(String, String)], extra: String = "", server: Bool = false) throws {
                    try Self.writeManifest(in: folder, versions, extra: extra, server: server)
                }
                XCTAssertEqual(try serve.call("POST", "/v1/admin/reload").0, 401, "the route asks for the token")
                try writeManifest([("app", "2.0")], extra: "server: {host: 127.0.0.1, port: 0, auth_token_env: HUBHOST_RELOAD_TEST_TOKEN}\n")
                let reload = try TestSupport.hubhost(["reload", "--url", serve.base, "--json"], manifest: folder + "/plugins.yaml", in: folder)
                XCTAssertEqual(reload.status, 0, reload.description)
                let report = try TestSupport.json(reload.stdout, as: [String: Any].self)
                XCTAssertEqual(report["outcome"] as? String, "applied")
                XCTAssertEqual(report["changed"] as? [String], ["app"])
                let watched = try TestSupport.hubhost(
                    ["hub", "watch", "--url", serve.base, "--replay", "--json", "--name", "PluginsReloaded", "--count", "1", "--timeout", "20"],
                    manifest: folder + "/plugins.yaml", in: folder)
                XCTAssertEqual(watched.status, 0, watched.description)
                XCTAssertTrue(watched.stdout.contains("\"changed\":\"app\"") || watched.stdout.contains("\"changed\" : \"app\""), watched.stdout)
                // The server's plugins.yaml broken: refused, with the problem, and the command exits 1.
                try FileManager.default.copyItem(atPath: folder + "/plugins.yaml", toPath: folder + "/cli.yaml")
                try TestSupport.write("plugins: [\n", to: folder + "/plugins.yaml")
                let refused = try TestSupport.hubhost(["reload", "--url", serve.base], manifest: folder + "/cli.yaml", in: folder)
                XCTAssertEqual(refused.status, 1, refused.description)
                XCTAssertTrue(refused.stderr.contains("reload refused") && refused.stderr.contains("plugins.yaml:"), refused.stderr)
            }
        }
    }

    /// 8 clients post events while serve reloads 30 times (the version changed each time, an invalid
    /// manifest and a SIGHUP among them): no request fails, every acknowledged event is stored once,
    /// and each was augmented by exactly one generation.
    func testACrowdPostingWhileServeReloadsLosesNothing() throws {
        try writeManifest([("app", "v0")], server: true)
        let serve = try ServeProcess(manifest: folder + "/plugins.yaml")
        let descriptorsBefore = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(serve.process.processIdentifier)/fd").count
        // Two followers of the notification stream, connected through every reload.
        let base = serve.base
        let followers = DispatchGroup()
        let followed = ConcurrentResults<CommandResult>()
        for index in 0..<2 {
            followers.enter()
            Thread {
                let result = Result {
                    try TestSupport.hubhost(
                        ["hub", "watch", "--url", base, "--name", "PluginsReloaded", "--json", "--count", "50", "--timeout", "100", "--replay"],
                        timeout: 130)
                }
                followed.lock.withLock { followed.values[index] = result }
                followers.leave()
            }.start()
        }
        // --replay: a follower whose process starts late (a loaded machine) still gets the reloads
        // before it connected, from the server's recent notifications; from then on only a
        // connection kept through every reload hears the rest.
        usleep(500_000)
        let crowd = EventCrowd(serve: serve, perClient: 2_000)
        func libraryHash() throws -> String? {
            let (_, plugins) = try serve.call("GET", "/v1/plugins")
            let instances = (plugins as? [String: Any])?["instances"] as? [[String: Any]]
            return instances?.first { $0["id"] as? String == "app" }?["libraryHash"] as? String
        }
        let firstHash = try XCTUnwrap(try libraryHash())
        let rssBefore = Self.residentMB("\(serve.process.processIdentifier)")
        for round in 1...50 {
            if round % 10 == 5 {
                // The library rebuilt at its path mid-crowd: loaded as the new file on this reload.
                try build(attribute: "App Version", marker: "round \(round)")
            }
            if round == 15 {
                try TestSupport.write("plugins: [\n", to: folder + "/plugins.yaml")
                let (status, _) = try serve.call("POST", "/v1/admin/reload")
                XCTAssertEqual(status, 409, "an invalid manifest is refused")
                continue
            }
            // Every fourth round adds an isolated instance, which the next round removes again.
            let versions = [("app", "v\(round)")] + (round % 4 == 0 ? [("extra", "v-extra-\(round)")] : [])
            try writeManifest(versions, server: true, isolated: ["extra"])
            if round == 20 {
                kill(serve.process.processIdentifier, SIGHUP)
                usleep(300_000)
                continue
            }
            let (status, body) = try serve.call("POST", "/v1/admin/reload")
            XCTAssertEqual(status, 200, "round \(round): \(body)")
            if round == 48 {
                XCTAssertFalse(Self.children(of: serve.process.processIdentifier).isEmpty, "the isolated instance's worker runs")
            }
        }
        XCTAssertTrue(crowd.finish(), "the clients stopped")
        XCTAssertEqual(followers.wait(timeout: .now() + 130), .success)
        let rssAfter = Self.residentMB("\(serve.process.processIdentifier)")
        XCTAssertLessThan(rssAfter - rssBefore, 64, "resident memory bounded through 50 reloads (\(rssBefore) -> \(rssAfter) MiB)")
        for index in 0..<2 {
            let result = try XCTUnwrap(followed.lock.withLock { followed.values[index] }).get()
            XCTAssertEqual(result.status, 0, "follower \(index) stayed connected and heard all 50: \(result)")
            let reloads = result.stdout.split(separator: "\n").count
            XCTAssertEqual(reloads, 50, "follower \(index) heard every reload, the refused one and the SIGHUP included")
        }
        XCTAssertNotEqual(try libraryHash(), firstHash, "the library rebuilt mid-crowd is the one loaded")
        // The last manifest has no isolated instance: every worker the reloads started has exited.
        XCTAssertTrue(
            TestSupport.waitUntil(timeout: 10) { Self.children(of: serve.process.processIdentifier).isEmpty },
            "no worker left behind: \(Self.children(of: serve.process.processIdentifier))")
        let descriptorsAfter = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(serve.process.processIdentifier)/fd").count
        XCTAssertLessThan(descriptorsAfter - descriptorsBefore, 16, "no descriptor leaked per reload (\(descriptorsBefore) -> \(descriptorsAfter))")
        let (ids, failures) = (crowd.ids, crowd.failures)
        XCTAssertEqual(failures, [], "no request failed during the reloads")
        XCTAssertGreaterThan(ids.count, 50)
        XCTAssertEqual(Set(ids).count, ids.count)
        let (_, plugins) = try serve.call("GET", "/v1/plugins")
        XCTAssertEqual((plugins as? [String: Any])?["generation"] as? Int, 49, "48 by POST, one by SIGHUP: \(plugins)")
        // Each acknowledged event is stored once, augmented by one generation's version.
        let listed = try TestSupport.hubhost(["events", "list", "--limit", "100000", "--json"], manifest: folder + "/plugins.yaml", in: folder)
        let events = try TestSupport.json(listed.stdout, as: [[String: Any]].self)
        let stored = Dictionary(grouping: events, by: { $0["id"] as? String ?? "" })
        for id in ids {
            XCTAssertEqual(stored[id]?.count, 1, "\(id) stored once")
            let version = (stored[id]?.first?["attributes"] as? [String: Any])?["App Version"] as? String
            XCTAssertTrue(version.map { $0.hasPrefix("v") } ?? false, "\(id): \(String(describing: version))")
        }
    }

    /// The live child processes of `pid` (zombies included: an unreaped worker is a leak too).
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { child in
            guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            // After "pid (name)": the state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid
        }
    }

    /// The resident memory of a process (`self`, or a pid), in MiB; 0 when it cannot be read.
    static func residentMB(_ process: String = "self") -> Double {
        let fields = (try? String(contentsOfFile: "/proc/\(process)/statm", encoding: .utf8))?.split(separator: " ") ?? []
        return Double(fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}
