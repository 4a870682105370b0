import Foundation
import XCTest

@testable import HubHostKit

// One data directory, many processes: serve's API running in this process (InProcessAPI, with
// the runtime's services, as serve runs them), and CLI commands (the built `hubhost` binary, as
// child processes) beside it on the same data directory. What one process changes is durable at
// once and what the others see; nothing adds up wrong, nothing is lost when serve stops (its
// services stopped and its host shut down, which used to write serve's stale campaign state over
// the others'), nothing in use is deleted under a reader. Loopback only; bounded loops.

// MARK: - Campaigns

final class SharedCampaignStateTests: XCTestCase {
    private var folder = ""
    private var manifest: String { folder + "/plugins.yaml" }

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
        func campaign(_ id: String, max: Int, event: String) -> [String: Any] {
            [
                "campaignData": [
                    "campaignId": id, "maxImpressions": max, "type": 1,
                    "triggers": [["type": 1, "eventType": 4, "eventName": event, "attributes": []]],
                    "messagePayload": [
                        "title": "Title \(id)",
                        "messageSettings": ["displaySettings": ["optOut": true]]
                    ]
                ]
            ]
        }
        let list: [String: Any] = [
            "data": [
                campaign("promo", max: 5, event: "show_promo"), campaign("other", max: 5, event: "show_promo"),
                campaign("bulk", max: 100, event: "never_tracked")
            ]
        ]
        try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: folder + "/campaigns.json"))
        try TestSupport.write(
            """
            data_dir: data
            campaigns: {file: campaigns.json}
            server: {host: 127.0.0.1, port: 0}
            plugins:
              - id: operators
                use: \(TestSupport.plugin("StandardOperators"))
            """, to: manifest)
    }

    /// The campaigns as `GET /v1/campaigns` answers them, by id.
    private static func statuses(_ server: any JSONCalls) throws -> [String: [String: Any]] {
        let (status, body) = try server.call("GET", "/v1/campaigns")
        XCTAssertEqual(status, 200)
        let list = try XCTUnwrap(body as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: list.map { ($0["id"] as? String ?? "", $0) })
    }

    /// The campaigns as `hubhost campaigns list --json` prints them, by id.
    private static func statuses(manifest: String) throws -> [String: [String: Any]] {
        let list = try TestSupport.hubhost(["campaigns", "list", "--json"], manifest: manifest).expect().json(as: [[String: Any]].self)
        return Dictionary(uniqueKeysWithValues: list.map { ($0["id"] as? String ?? "", $0) })
    }

    func testCLIAndHTTPImpressionsAddUpAndSurviveServesShutdown() async throws {
        let manifest = self.manifest  // for the closures below, which do not capture the test case
        try await InProcessAPI.listening(manifestPath: manifest, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                for _ in 0..<2 { try TestSupport.hubhost(["messages", "impression", "promo"], manifest: manifest).expect() }
                XCTAssertEqual(try server.call("POST", "/v1/messages/promo/impression").0, 200)
                XCTAssertEqual(try Self.statuses(server)["promo"]?["impressionsLeft"] as? Int, 2, "5 - 2 (CLI) - 1 (HTTP)")
                XCTAssertEqual(try Self.statuses(manifest: manifest)["promo"]?["impressionsLeft"] as? Int, 2, "the CLI sees serve's impression")
            }
        }
        // serve stopped: its services ended and its host shut down.
        XCTAssertEqual(try Self.statuses(manifest: manifest)["promo"]?["impressionsLeft"] as? Int, 2, "serve's shutdown wrote nothing stale over it")
    }

    func testACLIOptOutIsSeenByTheRunningServeAndSurvivesItsShutdown() async throws {
        let manifest = self.manifest  // for the closures below, which do not capture the test case
        try await InProcessAPI.listening(manifestPath: manifest, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                XCTAssertEqual(try server.call("POST", "/v1/events", #"{"name": "show_promo"}"#).0, 201)
                let (status, first) = try server.call("GET", "/v1/messages/next")
                XCTAssertEqual(status, 200)
                XCTAssertEqual((first as? [String: Any])?["id"] as? String, "promo", "both campaigns are ready; promo first")

                try TestSupport.hubhost(["campaigns", "opt-out", "promo"], manifest: manifest).expect()
                let (_, next) = try server.call("GET", "/v1/messages/next")
                XCTAssertEqual((next as? [String: Any])?["id"] as? String, "other", "serve no longer offers the campaign the user opted out of")
                XCTAssertEqual(try Self.statuses(server)["promo"]?["optedOut"] as? Bool, true)
            }
        }
        // serve stopped: its services ended and its host shut down.
        XCTAssertEqual(try Self.statuses(manifest: manifest)["promo"]?["optedOut"] as? Bool, true, "the opt-out survives serve's shutdown")
        let message = try TestSupport.hubhost(["messages", "next", "--json"], manifest: manifest).expect()
        XCTAssertEqual((try message.json as? [String: Any])?["id"] as? String, "other", "the queue serve filled is the CLI's too")
    }

    func testTheCampaignUserSetFromTheCLIIsServesUser() async throws {
        let manifest = self.manifest  // for the closures below, which do not capture the test case
        try await InProcessAPI.listening(manifestPath: manifest, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                try TestSupport.hubhost(["campaigns", "user", "set", "--user-id", "ann", "--id-tracking-identifier", "t1"], manifest: manifest)
                    .expect()
                let (status, user) = try server.call("GET", "/v1/campaigns/user")
                XCTAssertEqual(status, 200)
                XCTAssertEqual(user as? [String: String], ["userId": "ann", "idTrackingIdentifier": "t1"])

                // And serve's own change of user is the CLI's: impressions land in that user's cache.
                XCTAssertEqual(try server.call("PUT", "/v1/campaigns/user", #"{"userId": "bob", "idTrackingIdentifier": ""}"#).0, 200)
                try TestSupport.hubhost(["messages", "impression", "promo"], manifest: manifest).expect()
                XCTAssertEqual(try Self.statuses(server)["promo"]?["impressionsLeft"] as? Int, 4, "bob's impression")
                XCTAssertEqual(try server.call("PUT", "/v1/campaigns/user", #"{"userId": "ann", "idTrackingIdentifier": "t1"}"#).0, 200)
                XCTAssertEqual(try Self.statuses(server)["promo"]?["impressionsLeft"] as? Int, 5, "ann has her own count")
            }
        }
    }

    func testConcurrentImpressionsFromTwoCLIStreamsAndServeEndWithTheExactTotal() async throws {
        final class Failures: @unchecked Sendable {
            let lock = NSLock()
            var list: [String] = []
        }
        let manifest = self.manifest  // for the closures below, which do not capture the test case
        try await InProcessAPI.listening(manifestPath: manifest, services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let failures = Failures()
                // Two CLI streams of 20 impressions each and 10 over HTTP, all at once.
                DispatchQueue.concurrentPerform(iterations: 3) { stream in
                    for _ in 0..<(stream < 2 ? 20 : 10) {
                        do {
                            if stream < 2 {
                                let result = try TestSupport.hubhost(["messages", "impression", "bulk", "--manifest", manifest])
                                if result.status != 0 { failures.lock.withLock { failures.list.append(result.stderr) } }
                            } else {
                                let status = try server.call("POST", "/v1/messages/bulk/impression").0
                                if status != 200 { failures.lock.withLock { failures.list.append("HTTP \(status)") } }
                            }
                        } catch {
                            failures.lock.withLock { failures.list.append("\(error)") }
                        }
                    }
                }
                XCTAssertEqual(failures.list, [])
                XCTAssertEqual(try Self.statuses(server)["bulk"]?["impressionsLeft"] as? Int, 50, "100 - 20 - 20 - 10: none lost, none twice")
            }
        }
        // serve stopped: its services ended and its host shut down.
        XCTAssertEqual(try Self.statuses(manifest: manifest)["bulk"]?["impressionsLeft"] as? Int, 50)
    }

    /// The same in one process: two hosts (two engines) on one data directory, as two apps would be.
    func testTwoEnginesOnOneDataDirectoryShareImpressionsTriggersAndTheList() throws {
        let a = try HubHost(manifestPath: manifest)
        let b = try HubHost(manifestPath: manifest)
        defer {
            a.shutdown()
            b.shutdown()
        }
        let campaignsA = try XCTUnwrap(try a.campaigns())
        let campaignsB = try XCTUnwrap(try b.campaigns())
        try campaignsA.displayed("promo")
        try campaignsB.displayed("promo")
        try campaignsA.displayed("promo")
        XCTAssertEqual(campaignsB.statuses().first { $0.id == "promo" }?.impressionsLeft, 2)
        _ = try a.events().track(Event(type: .namedEvent, name: "show_promo"))
        XCTAssertEqual(campaignsB.ready().map(\.id), ["promo", "other"], "a's event queued them for b too")
        XCTAssertEqual(campaignsB.next()?.id, "promo")
        XCTAssertEqual(campaignsA.next()?.id, "promo", "the current message is shared")

        // A new list loaded by one engine is the other's.
        let list: [String: Any] = [
            "data": [
                [
                    "campaignData": [
                        "campaignId": "fresh", "maxImpressions": 3,
                        "triggers": [["type": 1, "eventType": 2, "eventName": "login_successful"]],
                        "messagePayload": ["title": "Fresh"]
                    ]
                ]
            ]
        ]
        try campaignsA.load(try JSONSerialization.data(withJSONObject: list))
        XCTAssertEqual(campaignsB.campaigns.map(\.id), ["fresh"])
        _ = try b.events().track(Event(type: .loginSuccessful))
        XCTAssertEqual(campaignsA.ready().map(\.id), ["fresh"], "b matched its event against the list a loaded")

        // b's event path has looked at the state since (and skips reading it while no other
        // connection commits): a list a loads after that is still the one b's next events meet.
        _ = try b.events().track(Event(type: .namedEvent, name: "nothing to match"))
        let later: [String: Any] = [
            "data": [
                [
                    "campaignData": [
                        "campaignId": "later", "maxImpressions": 3,
                        "triggers": [["type": 1, "eventType": 4, "eventName": "show_later", "attributes": []]],
                        "messagePayload": ["title": "Later"]
                    ]
                ]
            ]
        ]
        try campaignsA.load(try JSONSerialization.data(withJSONObject: later))
        _ = try b.events().track(Event(type: .namedEvent, name: "show_later"))
        XCTAssertEqual(campaignsA.ready().map(\.id), ["later"], "b matched its next event against the list a loaded after b looked")
    }
}

// MARK: - The Content Hub

final class SharedHubStateTests: XCTestCase {
    private var folder = ""
    private var service: TestContentService!
    private var privateKey = ""
    private var manifest: String { folder + "/plugins.yaml" }

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder(self)
        service = try TestContentService()
        addTeardownBlock { [service] in service?.stop() }
        privateKey = folder + "/key.pem"
        XCTAssertEqual(
            try TestSupport.run("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", privateKey])
                .status, 0)
        XCTAssertEqual(
            try TestSupport.run("/usr/bin/openssl", ["pkey", "-in", privateKey, "-pubout", "-outform", "DER", "-out", folder + "/pubkey.der"]).status,
            0)
        try TestSupport.write(
            """
            data_dir: data
            hub: {db_service_url: "\(service.baseURL)", public_key: pubkey.der, download_timeout: 30 sec}
            server: {host: 127.0.0.1, port: 0}
            plugins:
              - id: content
                use: \(TestSupport.plugin("HTTPContentProvider"))
            """, to: manifest)
    }

    /// Makes the content service offer a signed bundle whose hub is titled "Hub v<version>"; returns its SHA-256.
    @discardableResult
    private static func publish(_ version: String, folder: String, privateKey: String, service: TestContentService) throws -> String {
        let path = folder + "/build-\(version).sqlite3"
        let articles = (0..<3).map { TestBundle.Article("a\($0)", body: "<p>content v\(version) \($0)</p>") }
        try TestBundle.write(
            to: path, version: version, hubs: [.init("news", title: "Hub v\(version)", channels: [.init("main", articles: articles)])])
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let signature = try BundleSignature.sign(data, privateKeyPEM: Data(contentsOf: URL(fileURLWithPath: privateKey)))
        let sha = try XCTUnwrap(SHA256.hex(ofFile: path))
        let metadata = BundleMetadata(
            version: version, size: Int64(data.count), sha256: sha, signature: signature.base64EncodedString(),
            created: "2026-11-22T00:00:00Z")
        service.bundle = data
        service.metadata = (200, String(decoding: try JSONEncoder().encode(metadata), as: UTF8.self))
        return sha
    }

    private static func status(_ server: any JSONCalls) throws -> DeliveryStatus {
        let response = try server.http.fetch("GET", server.base + "/v1/hub/status", timeoutSeconds: 10).get()
        XCTAssertEqual(response.status, 200)
        return try JSONDecoder().decode(DeliveryStatus.self, from: response.body)
    }

    private static func page(_ server: any JSONCalls, _ path: String) throws -> (Int, String) {
        let response = try server.http.fetch("GET", server.base + path, timeoutSeconds: 10).get()
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    private static func bundleDownloads(_ service: TestContentService) -> Int { service.requests.filter { $0.path == "/content/bundle" }.count }

    /// What a test's body has beside serve: its client, the manifest, the content service, and `publish`.
    private struct Beside: Sendable {
        let server: ListeningAPI
        let manifest: String
        let service: TestContentService
        let folder: String
        let privateKey: String

        @discardableResult
        func publish(_ version: String) throws -> String {
            try SharedHubStateTests.publish(version, folder: folder, privateKey: privateKey, service: service)
        }
    }

    /// serve's API in this process (its services running, as serve runs them) on the manifest,
    /// while `body` runs off Swift concurrency's threads (InProcessAPI.listening).
    private func withServe(_ body: @escaping @Sendable (Beside) throws -> Void) async throws {
        let (manifest, folder, privateKey, service) = (self.manifest, self.folder, self.privateKey, self.service!)  // not the test case
        try await InProcessAPI.listening(manifestPath: manifest, services: true) { port, _ in
            try await TestSupport.offPool {
                try body(Beside(server: ListeningAPI(port: port), manifest: manifest, service: service, folder: folder, privateKey: privateKey))
            }
        }
    }

    func testACLISyncIsWhatTheRunningServeShowsAndNoBundleInUseIsDeleted() async throws {
        try await withServe { beside in
            let (server, manifest, service) = (beside.server, beside.manifest, beside.service)
            @discardableResult func publish(_ version: String) throws -> String { try beside.publish(version) }
            let v1 = try publish("1")
            try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()

            // serve shows the bundle the CLI installed, without a restart.
            let first = try Self.status(server)
            XCTAssertEqual(first.activeBundle?.version, "1")
            XCTAssertEqual(first.activeBundle?.sha256, v1)
            XCTAssertTrue(first.state.isReady)
            let v1Path = try XCTUnwrap(first.activeBundle?.path)
            XCTAssertTrue(FileManager.default.fileExists(atPath: v1Path))
            let downloads = Self.bundleDownloads(service)
            let sync = try server.http.fetch("POST", server.base + "/v1/hub/sync", timeoutSeconds: 30).get()
            XCTAssertEqual(sync.status, 200)
            XCTAssertEqual(try JSONDecoder().decode(ContentDelivery.SyncReport.self, from: sync.body).result, "current")
            XCTAssertEqual(Self.bundleDownloads(service), downloads, "serve's own sync finds the CLI's bundle current: nothing downloaded again")

            // A hub session on v1 stays open while two CLI syncs install v2 and v3.
            let (hubStatus, hubPage) = try Self.page(server, "/hub")
            XCTAssertEqual(hubStatus, 200)
            XCTAssertTrue(hubPage.contains("Hub v1"), hubPage)
            try publish("2")
            try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()
            let v3 = try publish("3")
            try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()

            let third = try Self.status(server)
            XCTAssertEqual(third.activeBundle?.version, "3")
            XCTAssertEqual(third.activeBundle?.sha256, v3)
            XCTAssertTrue(FileManager.default.fileExists(atPath: third.activeBundle?.path ?? ""), "serve never names a deleted bundle file")
            XCTAssertTrue(FileManager.default.fileExists(atPath: v1Path), "the bundle serve's open session reads is not pruned")
            let (articleStatus, article) = try Self.page(server, "/hub/article/news/main/a0")
            XCTAssertEqual(articleStatus, 200)
            XCTAssertTrue(article.contains("content v1 0"), "the open session keeps the bundle it was presented from: \(article)")
            let (_, newPage) = try Self.page(server, "/hub")
            XCTAssertTrue(newPage.contains("Hub v3"), "a new session presents the bundle the CLI activated: \(newPage)")

            // Once no session reads v1, the next install prunes it (the active bundle and the one before stay).
            try publish("4")
            try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()
            XCTAssertFalse(FileManager.default.fileExists(atPath: v1Path), "released, then pruned")
            let fourth = try Self.status(server)
            XCTAssertEqual(fourth.activeBundle?.version, "4")
            XCTAssertEqual(fourth.lastSync?.bundleVersion, "4", "the CLI's sync is serve's last sync too")
            XCTAssertTrue(FileManager.default.fileExists(atPath: fourth.activeBundle?.path ?? ""))
            let (_, fourthPage) = try Self.page(server, "/hub")
            XCTAssertTrue(fourthPage.contains("Hub v4"), fourthPage)
        }
    }

    func testAfterTwoCLISyncsServeNeverNamesOrServesAPrunedBundleFile() async throws {
        try await withServe { beside in
            let (server, manifest) = (beside.server, beside.manifest)
            @discardableResult func publish(_ version: String) throws -> String { try beside.publish(version) }
            try publish("1")
            XCTAssertEqual(
                try server.http.fetch("POST", server.base + "/v1/hub/sync", timeoutSeconds: 30).get().status, 200, "serve installs v1 itself")
            let v1Path = try XCTUnwrap(try Self.status(server).activeBundle?.path)
            for version in ["2", "3"] {
                try publish(version)
                try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()
            }
            let shown = try Self.status(server)
            XCTAssertEqual(shown.activeBundle?.version, "3")
            XCTAssertTrue(FileManager.default.fileExists(atPath: shown.activeBundle?.path ?? ""), "the file serve names exists")
            XCTAssertTrue(FileManager.default.fileExists(atPath: v1Path), "serve still had v1 open when v3 was installed: kept")
            let (pageStatus, page) = try Self.page(server, "/hub/article/news/main/a1")
            XCTAssertEqual(pageStatus, 200)
            XCTAssertTrue(page.contains("content v3 1"), page)
            // serve now reads v3: the next install prunes v1 (and v2), keeping v4 and v3.
            try publish("4")
            try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()
            XCTAssertFalse(FileManager.default.fileExists(atPath: v1Path), "released by serve, then pruned")
            XCTAssertTrue(FileManager.default.fileExists(atPath: try Self.status(server).activeBundle?.path ?? ""))
        }
    }

    func testTheRemoteDisableFetchedByTheCLIIsServesState() async throws {
        try await withServe { beside in
            let (server, manifest, service) = (beside.server, beside.manifest, beside.service)
            @discardableResult func publish(_ version: String) throws -> String { try beside.publish(version) }
            try publish("1")
            try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()
            // serve syncs once itself (finding the CLI's bundle current), so presenting starts no background sync.
            XCTAssertEqual(try server.http.fetch("POST", server.base + "/v1/hub/sync", timeoutSeconds: 30).get().status, 200)
            XCTAssertEqual(try Self.page(server, "/hub").0, 200)
            service.settings = { _ in (200, #"{"isDisabled": true}"#) }
            try TestSupport.hubhost(["hub", "sync"], manifest: manifest).expect()
            XCTAssertTrue(try Self.status(server).state.isDisabled, "the service's word fetched by the CLI holds in serve")
            XCTAssertTrue(try Self.page(server, "/hub").1.contains("disabled"))
        }
    }

    func testUsersAndTagCountsChangedFromTheCLIAreServesAndAddUp() async throws {
        try await withServe { beside in
            let (server, manifest) = (beside.server, beside.manifest)
            try TestSupport.hubhost(["users", "create", "--id", "bob", "--tags", "news"], manifest: manifest).expect()
            try TestSupport.hubhost(["users", "activate", "bob"], manifest: manifest).expect()
            let (status, active) = try server.call("GET", "/v1/users/active")
            XCTAssertEqual(status, 200)
            XCTAssertEqual((active as? [String: Any])?["active"] as? String, "bob")

            final class Failures: @unchecked Sendable {
                let lock = NSLock()
                var list: [String] = []
            }
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 2) { stream in
                for _ in 0..<5 {
                    do {
                        if stream == 0 {
                            let result = try TestSupport.hubhost(["users", "update-tag-counts", "news=+1", "--manifest", manifest])
                            if result.status != 0 { failures.lock.withLock { failures.list.append(result.stderr) } }
                        } else {
                            let status = try server.call("POST", "/v1/users/active/tag-counts", #"{"news": 1}"#).0
                            if status != 200 { failures.lock.withLock { failures.list.append("HTTP \(status)") } }
                        }
                    } catch {
                        failures.lock.withLock { failures.list.append("\(error)") }
                    }
                }
            }
            XCTAssertEqual(failures.list, [])
            let (_, counts) = try server.call("GET", "/v1/users/bob/tag-counts")
            XCTAssertEqual(counts as? [String: Int], ["news": 11], "1 + 5 (CLI) + 5 (HTTP)")
            try TestSupport.hubhost(["users", "create", "--id", "eve"], manifest: manifest).expect()
            XCTAssertEqual(try server.call("POST", "/v1/users/eve/activate").0, 200)
            let shown = try TestSupport.hubhost(["users", "active"], manifest: manifest).expect()
            XCTAssertEqual(shown.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "eve", "serve's activation is the CLI's")
        }
    }
}

// MARK: - The bundle store, in one process

final class SharedBundleStoreTests: XCTestCase {
    private func bundle(_ version: String, in folder: String, signedWith key: String) throws -> (data: Data, metadata: BundleMetadata) {
        let path = folder + "/b\(version).sqlite3"
        try TestBundle.write(to: path, version: version, hubs: [.init("news", title: "v\(version)", channels: [.init("c", articles: [.init("a")])])])
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return (
            data,
            BundleMetadata.describing(
                data, version: version, created: "2026-11-22T00:00:00Z",
                signature: try BundleSignature.sign(data, privateKeyAt: key))
        )
    }

    func testAnotherEnginesInstallIsFollowedAndAnOpenBundleIsPrunedOnlyOnceReleased() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let key = try TestKeys.make("EC", name: "k", in: folder)
        var settings = HubSettings()
        settings.publicKeyPath = key.publicKey
        let quiet = LogPipeline(filter: LogFilter(severity: .none))
        let writer = try HubEngine(settings: settings, dataDirectory: folder + "/data", notifications: HostNotifications(), pipeline: quiet)
        let reader = try HubEngine(settings: settings, dataDirectory: folder + "/data", notifications: HostNotifications(), pipeline: quiet)
        func install(_ version: String) throws -> String {
            let (data, metadata) = try bundle(version, in: folder, signedWith: key.privateKey)
            return try writer.install(metadata: metadata, bundleData: data).path
        }
        XCTAssertNil(reader.activeBundle)
        let first = try install("1")
        var held: ContentBundle? = try XCTUnwrap(reader.activeBundle, "the reader follows the writer's install")
        XCTAssertEqual(held?.metadata.version, "1")
        XCTAssertTrue(reader.state.isReady)
        _ = try install("2")
        _ = try install("3")
        XCTAssertEqual(reader.activeBundle?.metadata.version, "3")
        XCTAssertTrue(FileManager.default.fileExists(atPath: first), "held open: kept past the usual two")
        XCTAssertEqual(held?.hubs.first?.title, "v1", "and still readable")
        held = nil
        _ = try install("4")
        XCTAssertFalse(FileManager.default.fileExists(atPath: first), "released: pruned by the next install")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder + "/data/hub/bundles").filter { $0.hasSuffix(".sqlite3") }
        XCTAssertEqual(names.count, 2, "the active bundle and the one before: \(names)")
    }
}
