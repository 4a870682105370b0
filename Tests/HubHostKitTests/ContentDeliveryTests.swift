import Foundation
import HubHostABI
import XCTest

@testable import HubHostKit

/// Content delivery end to end: a content service on 127.0.0.1 (TestContentService) serving
/// settings, metadata and signed bundles; the bundled providers through the real loader; the hub
/// state, notifications and present errors that follow.
final class ContentDeliveryTests: FolderTestCase {
    private var service: TestContentService!
    private var privateKey = ""
    private var publicKey = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        service = try TestContentService()
        addTeardownBlock { [service] in service?.stop() }
        privateKey = folder + "/key.pem"
        publicKey = folder + "/pubkey.der"
        let made = try TestSupport.run("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", privateKey])
        XCTAssertEqual(made.status, 0, made.stderr)
        let exported = try TestSupport.run("/usr/bin/openssl", ["pkey", "-in", privateKey, "-pubout", "-outform", "DER", "-out", publicKey])
        XCTAssertEqual(exported.status, 0, exported.stderr)
    }

    // MARK: Helpers

    /// A signed bundle (about 40 KB, so that 1 KiB chunks make many requests) and its metadata document.
    private func signedBundle(version: String, hub: String = "news") throws -> (data: Data, metadata: String) {
        let path = folder + "/build-\(version)-\(UUID().uuidString).sqlite3"
        let articles = (0..<20).map {
            TestBundle.Article("a\($0)", tags: ["t\($0 % 3)"], body: String(repeating: "<p>content \(version) \($0)</p>", count: 60))
        }
        try TestBundle.write(to: path, version: version, hubs: [.init(hub, tags: [hub], channels: [.init("main", articles: articles)])])
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let signature = try BundleSignature.sign(data, privateKeyPEM: Data(contentsOf: URL(fileURLWithPath: privateKey)))
        let metadata = BundleMetadata(
            version: version, size: Int64(data.count), sha256: try XCTUnwrap(SHA256.hex(ofFile: path)),
            signature: signature.base64EncodedString(), created: "2026-11-22T00:00:00Z")
        return (data, String(decoding: try JSONEncoder().encode(metadata), as: UTF8.self))
    }

    private func serve(_ bundle: (data: Data, metadata: String)) {
        service.bundle = bundle.data
        service.metadata = (200, bundle.metadata)
    }

    private func manifest(provider: String? = nil, locationID: String? = nil, hub: String = "") -> String {
        let place =
            locationID.map {
                """
                  - id: place
                    use: \(TestSupport.plugin("FixedLocation"))
                    config: {latitude: 47.6097, longitude: -122.3422, location_id: "\($0)"}

                """
            } ?? ""
        let content =
            provider ?? """
                  - id: content
                    use: \(TestSupport.plugin("HTTPContentProvider"))
                    config: {chunk_size: 1024}
                """
        return """
            data_dir: data
            logging: {severity: info}
            hub: {db_service_url: "\(service.baseURL)", public_key: pubkey.der, download_timeout: 30 sec\(hub)}
            plugins:
            \(place)\(content)
            """
    }

    private func host(_ manifest: String? = nil, capture: LogCapture? = nil) throws -> (HubHost, ContentDelivery) {
        try TestSupport.write(manifest ?? self.manifest(), to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml", extraDestinations: capture.map { [$0] } ?? [])
        addTeardownBlock { host.shutdown() }
        return (host, try XCTUnwrap(host.delivery()))
    }

    /// Collects the notifications posted while `work` runs.
    private func notifications<T>(_ host: HubHost, during work: () throws -> T) rethrows -> (T, [HostNotification]) {
        let box = NotificationLog()
        let token = host.notifications.subscribe { note in box.lock.withLock { box.items.append(note) } }
        defer { host.notifications.unsubscribe(token) }
        let result = try work()
        return (result, box.lock.withLock { box.items })
    }

    private func percents(_ notes: [HostNotification]) -> [Int] {
        notes.filter { $0.name == HostNotification.Name.downloadProgressChanged }.compactMap { notification -> Int? in
            guard case .number(let percent)? = notification.payload["percent"] else { return nil }
            return Int(exactly: percent)
        }
    }

    // MARK: Download

    func testDownloadInChunksWithProgressInstallsTheBundleAndASecondSyncFindsItCurrent() throws {
        let v1 = try signedBundle(version: "1")
        serve(v1)
        let (host, delivery) = try host()
        let hub = try XCTUnwrap(host.hub())
        XCTAssertNil(hub.activeBundle)
        let (report, notes) = try notifications(host) { try delivery.sync() }
        XCTAssertEqual(report.result, "updated", report.message)
        XCTAssertEqual(hub.activeBundle?.metadata.version, "1")
        XCTAssertTrue(hub.state.isReady)
        XCTAssertFalse(hub.state.isDownloadingContent)
        let progress = percents(notes)
        XCTAssertGreaterThanOrEqual(progress.count, 5, "\(progress)")
        XCTAssertEqual(progress, progress.sorted(), "increasing")
        XCTAssertEqual(Set(progress).count, progress.count, "each percent once")
        XCTAssertEqual(progress.last, 100)
        let downloading = notes.filter { $0.name == HostNotification.Name.downloadingContentStateChanged }.map { $0.payload["isDownloadingContent"] }
        XCTAssertEqual(downloading, [.bool(true), .bool(false)], "booleans, not strings")
        let bundleRequests = service.requests.filter { $0.path == "/content/bundle" }
        XCTAssertEqual(bundleRequests.count, (v1.data.count + 1023) / 1024, "one Range request per 1 KiB chunk")
        XCTAssertEqual(bundleRequests.first?.range, "bytes=0-1023")
        XCTAssertTrue(bundleRequests.allSatisfy { $0.range != nil })

        let again = try delivery.sync()
        XCTAssertEqual(again.result, "current")
        XCTAssertEqual(service.requests.filter { $0.path == "/content/bundle" }.count, bundleRequests.count, "no second download")
        XCTAssertEqual(delivery.status().activeBundle?.sha256, again.bundleSHA256)
    }

    func testAServerThatIgnoresRangeIsHandled() throws {
        service.honorsRange = false
        serve(try signedBundle(version: "7"))
        let (host, delivery) = try host()
        let (report, notes) = try notifications(host) { try delivery.sync() }
        XCTAssertEqual(report.result, "updated")
        XCTAssertEqual(try host.hub()?.activeBundle?.metadata.version, "7")
        XCTAssertEqual(service.requests.filter { $0.path == "/content/bundle" }.count, 1)
        XCTAssertEqual(percents(notes).last, 100)
    }

    func testTamperedAndTruncatedBundlesAreRejectedAndThePreviousStaysActive() throws {
        serve(try signedBundle(version: "1"))
        let (host, delivery) = try host()
        try delivery.sync()
        let hub = try XCTUnwrap(host.hub())

        var tampered = try signedBundle(version: "2")
        tampered.data[tampered.data.count / 2] ^= 0xFF
        serve(tampered)
        let (outcome, notes) = notifications(host) { Result { try delivery.sync() } }
        guard case .failure(ContentDelivery.SyncError.rejected(let why)) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertFalse(why.isEmpty)
        XCTAssertEqual(hub.activeBundle?.metadata.version, "1")
        let errors = notes.filter { $0.name == HostNotification.Name.error }
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors.first?.payload["message"]?.plainText.contains("rejected") ?? false, "\(errors)")

        let whole = try signedBundle(version: "3")
        service.bundle = whole.data.prefix(whole.data.count / 2)
        service.metadata = (200, whole.metadata)
        XCTAssertThrowsError(try delivery.sync()) { error in
            guard case ContentDelivery.SyncError.rejected = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(hub.activeBundle?.metadata.version, "1")
        XCTAssertEqual(delivery.lastRecord.lastSync?.result, "failed")
        XCTAssertTrue(hub.state.isReady)
    }

    /// A transfer that breaks off halfway is reported as cut short, with the byte counts, not as
    /// an unreachable service; the previous bundle stays active.
    func testABundleDownloadCutShortSaysSoWithTheByteCounts() throws {
        serve(try signedBundle(version: "1"))
        let (host, delivery) = try host()
        try delivery.sync()
        let next = try signedBundle(version: "2")
        service.bundle = next.data
        service.metadata = (200, next.metadata)
        service.cutBundleAfter = next.data.count / 2
        XCTAssertThrowsError(try delivery.sync()) { error in
            guard case ContentDelivery.SyncError.truncated(let received, let expected, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(expected, Int64(next.data.count))
            XCTAssertGreaterThan(received, 0)
            XCTAssertLessThan(received, expected)
            XCTAssertTrue("\(error)".contains("cut short"), "\(error)")
            XCTAssertFalse("\(error)".contains("could not be reached") && !"\(error)".contains("cut short"))
        }
        XCTAssertEqual(try XCTUnwrap(host.hub()).activeBundle?.metadata.version, "1")
    }

    /// The same cut seen from both front ends: `hub sync` from the CLI and POST /v1/hub/sync of
    /// serve each say the download was cut short, with the same byte counts.
    func testABundleDownloadCutShortGivesTheSameReasonFromTheCLIAndFromServe() async throws {
        let bundle = try signedBundle(version: "1")
        serve(bundle)
        service.cutBundleAfter = bundle.data.count / 2
        try TestSupport.write(manifest() + "\nserver: {host: 127.0.0.1, port: 0}\n", to: folder + "/plugins.yaml")
        let reason = #"cut short \(truncated\): [0-9]+ of [0-9]+ bytes arrived"#
        let cli = try TestSupport.hubhost(["hub", "sync", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(cli.status, 1, cli.stderr)
        let fromCLI = try XCTUnwrap(cli.stderr.range(of: reason, options: .regularExpression).map { String(cli.stderr[$0]) }, cli.stderr)
        XCTAssertTrue(fromCLI.hasSuffix(" of \(bundle.data.count) bytes arrived"), fromCLI)
        XCTAssertFalse(fromCLI.hasPrefix("cut short (truncated): 0 of"), fromCLI)
        XCTAssertFalse(cli.stderr.contains("could not be reached"), cli.stderr)
        // serve in this process, on a loopback port, its services running.
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let failed = try HTTPFetcher().fetch("POST", server.base + "/v1/hub/sync", timeoutSeconds: 30).get()
                XCTAssertEqual(failed.status, 502)
                let body = String(decoding: failed.body, as: UTF8.self)
                XCTAssertEqual(body.range(of: reason, options: .regularExpression).map { String(body[$0]) }, fromCLI, body)
            }
        }
    }

    func testAnUnsignedBundleIsRejected() throws {
        let signed = try signedBundle(version: "U")
        var metadata = try BundleMetadata.decode(Data(signed.metadata.utf8))
        metadata.signature = ""
        service.bundle = signed.data
        service.metadata = (200, String(decoding: try JSONEncoder().encode(metadata), as: UTF8.self))
        let (host, delivery) = try host()
        XCTAssertThrowsError(try delivery.sync()) { error in
            guard case ContentDelivery.SyncError.rejected(let why) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("unsigned") || why.contains("signature"), why)
        }
        XCTAssertNil(try host.hub()?.activeBundle)
    }

    func testTheWholeSyncIsBoundedByDownloadTimeout() throws {
        serve(try signedBundle(version: "1"))
        let (host, delivery) = try host(manifest().replacingOccurrences(of: "download_timeout: 30 sec", with: "download_timeout: 1 ms"))
        XCTAssertThrowsError(try delivery.sync()) { error in
            guard case ContentDelivery.SyncError.timedOut(_, 0.001) = error else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".hasSuffix("took longer than hub.download_timeout (0.001 s)"), "\(error)")
        }
        XCTAssertNil(try host.hub()?.activeBundle)
    }

    func testAProviderInAWorkerProcessDeliversToo() throws {
        serve(try signedBundle(version: "W"))
        let (host, delivery) = try host(
            manifest(
                provider: """
                      - id: content
                        use: \(TestSupport.plugin("HTTPContentProvider"))
                        isolation: process
                        config: {chunk_size: 4096}
                    """))
        let (report, notes) = try notifications(host) { try delivery.sync() }
        XCTAssertEqual(report.result, "updated", report.message)
        XCTAssertEqual(try host.hub()?.activeBundle?.metadata.version, "W")
        XCTAssertEqual(percents(notes).last, 100)
    }

    func testRecurringSyncIsDueOnceTheIntervalPassed() throws {
        serve(try signedBundle(version: "1"))
        service.settings = { _ in (200, #"{"refreshMode": "recurring", "refreshInterval": 3600}"#) }
        let (first, delivery) = try host()
        XCTAssertFalse(delivery.isRecurringSyncDue, "the service's mode is not known yet")
        try delivery.sync()
        XCTAssertFalse(delivery.isRecurringSyncDue, "just synced")
        first.shutdown()
        let (_, later) = try host()
        XCTAssertTrue(later.isRecurringSyncDue, "a new run with recurring known: due at once")
    }

    func testServerDownGivesAClearErrorAndKeepsThePreviousBundle() throws {
        serve(try signedBundle(version: "1"))
        let capture = LogCapture()
        let (host, delivery) = try host(capture: capture)
        try delivery.sync()
        service.stop()
        XCTAssertThrowsError(try delivery.sync()) { error in
            guard case ContentDelivery.SyncError.fetchFailed(let resource, _, let message) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(resource, "settings")
            XCTAssertTrue(message.contains(self.service.baseURL + "/settings"), message)
            XCTAssertTrue(message.contains("the request to the content service failed") && message.contains("Connection refused"), message)
        }
        XCTAssertEqual(try host.hub()?.activeBundle?.metadata.version, "1")
        XCTAssertTrue(
            capture.records.contains { $0.severity == .error && $0.message.contains("content sync failed") && $0.message.contains("unchanged") },
            "\(capture.messages)")
    }

    func testAnHTTPErrorNamesTheURLAndStatus() throws {
        service.metadata = (500, "{}")
        let (_, delivery) = try host()
        XCTAssertThrowsError(try delivery.sync()) { error in
            XCTAssertEqual("\(error)", "fetching 'metadata' failed (HH_ERR_IO): \(self.service.baseURL)/metadata answered HTTP 500")
        }
    }

    // MARK: Remote disable and pilot program

    func testRemoteDisableRefusesPresentAndHoldsInANewProcess() throws {
        serve(try signedBundle(version: "1"))
        let (host, delivery) = try host()
        try delivery.sync()
        service.settings = { _ in (200, #"{"isDisabled": true}"#) }
        let (report, notes) = try notifications(host) { try delivery.sync() }
        XCTAssertEqual(report.result, "skipped")
        let hub = try XCTUnwrap(host.hub())
        XCTAssertTrue(hub.state.isDisabled)
        XCTAssertEqual(notes.filter { $0.name == HostNotification.Name.disabledStateChanged }.map { $0.payload["isDisabled"] }, [.bool(true)])
        XCTAssertThrowsError(try hub.presentation(counts: [:])) { XCTAssertEqual($0 as? HubEngine.PresentError, .disabled) }
        host.shutdown()

        service.stop()
        let (later, laterDelivery) = try self.host()
        XCTAssertTrue(try XCTUnwrap(later.hub()).state.isDisabled, "the service's last word holds offline")
        XCTAssertTrue(laterDelivery.status().settings.isDisabled)
    }

    func testPilotProgramByLocationIDVerbatimThenAResetReEnrolls() throws {
        serve(try signedBundle(version: "1"))
        let id = "Store #7 & Co+x"
        service.settings = { query in
            (200, #"{"pilotProgram": {"id": "spring", "enrolled": \#(query["location_id"] == "store #7 & co+x")}}"#)
        }
        let (host, delivery) = try host(manifest(locationID: id))
        let (report, notes) = try notifications(host) { try delivery.sync() }
        XCTAssertEqual(report.result, "skipped", "not enrolled: nothing downloaded")
        XCTAssertEqual(service.requests.first { $0.path == "/content/settings" }?.query, ["location_id": id], "sent verbatim")
        let hub = try XCTUnwrap(host.hub())
        XCTAssertTrue(hub.state.notPartOfPilotProgram, "compared verbatim: case and spacing differ")
        XCTAssertEqual(
            notes.filter { $0.name == HostNotification.Name.notPartOfPilotProgramStateChanged }.map { $0.payload["notPartOfPilotProgram"] },
            [.bool(true)])
        XCTAssertThrowsError(try hub.presentation(counts: [:])) { XCTAssertEqual($0 as? HubEngine.PresentError, .notPartOfPilotProgram) }
        try delivery.prepareForPresent()  // no active bundle: waits for a sync, which skips the download
        XCTAssertNil(hub.activeBundle)
        XCTAssertThrowsError(try hub.presentation(counts: [:]))

        service.settings = { query in (200, #"{"pilotProgram": {"id": "summer", "enrolled": \#(query["location_id"] == "Store #7 & Co+x")}}"#) }
        let reset = try delivery.sync()
        XCTAssertEqual(reset.result, "updated")
        XCTAssertFalse(hub.state.notPartOfPilotProgram)
        XCTAssertEqual(delivery.status().settings.pilotProgram, .init(id: "summer", enrolled: true))
        XCTAssertEqual(try hub.presentation(counts: [:]).hubID, "news")
    }

    func testCoordinatesAreSentWhenThereIsNoLocationID() throws {
        let (_, delivery) = try host(manifest(locationID: ""))
        XCTAssertEqual(delivery.settingsResource(), "settings?latitude=47.6097&longitude=-122.3422")
    }

    // MARK: Modes

    func testDontShowStaleWaitsForTheSyncAndFailsWithTheReasonWhileStaleOKPresentsAtOnce() throws {
        serve(try signedBundle(version: "1"))
        service.settings = { _ in (200, #"{"refreshMode": "dont_show_stale"}"#) }
        let (first, firstDelivery) = try host()
        try firstDelivery.prepareForPresent()  // no bundle yet: waits for the sync
        XCTAssertEqual(try first.hub()?.activeBundle?.metadata.version, "1")
        XCTAssertFalse(firstDelivery.isStale)
        first.shutdown()

        service.stop()  // a new run: the content is stale and the service is down
        let (_, stale) = try host()
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(stale.settings.refreshMode, .dontShowStale)
        XCTAssertThrowsError(try stale.prepareForPresent()) { error in
            XCTAssertTrue("\(error)".contains("the request to the content service failed"), "\(error)")
        }
    }

    func testStaleOKPresentsTheActiveBundleAndRefreshesInTheBackground() throws {
        serve(try signedBundle(version: "1"))
        let (first, firstDelivery) = try host()
        try firstDelivery.sync()
        first.shutdown()
        serve(try signedBundle(version: "2"))
        let (later, delivery) = try host()
        let hub = try XCTUnwrap(later.hub())
        XCTAssertEqual(hub.activeBundle?.metadata.version, "1")
        XCTAssertEqual(delivery.settings.refreshMode, .staleOK)
        try delivery.prepareForPresent()
        XCTAssertNotNil(try hub.presentation(counts: [:]), "presents at once")
        let deadline = Date().addingTimeInterval(30)
        while hub.activeBundle?.metadata.version != "2" && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(hub.activeBundle?.metadata.version, "2", "refreshed in the background")
    }

    func testShutdownStopsABackgroundSyncBeforeThePluginsGoAway() throws {
        serve(try signedBundle(version: "1"))
        let (host, delivery) = try host()
        delivery.syncInBackground()
        host.shutdown()  // closes delivery (waiting for the sync), then destroys the provider
        XCTAssertThrowsError(try delivery.sync()) { XCTAssertEqual($0 as? ContentDelivery.SyncError, .closed) }
        let outcome = try XCTUnwrap(delivery.lastRecord.lastSync, "the background sync ended before shutdown returned")
        XCTAssertTrue(["updated", "failed"].contains(outcome.result), "\(outcome)")
    }

    func testSettingsDocumentsAreCheckedStrictly() throws {
        XCTAssertEqual(try DeliverySettings.parse(Data("{}".utf8)), DeliverySettings())
        let full = try DeliverySettings.parse(
            Data(
                #"{"initialDownloadMode":"immediate","refreshMode":"recurring","refreshInterval":90,"isDisabled":false,"pilotProgram":{"id":"p","enrolled":false}}"#
                    .utf8))
        XCTAssertEqual(full.initialDownloadMode, .immediate)
        XCTAssertEqual(full.refreshMode, .recurring)
        XCTAssertEqual(full.refreshInterval, 90)
        XCTAssertTrue(full.refusedByPilotProgram)
        for (bad, reason) in [
            (#"{"refreshMode":"sometimes"}"#, "refreshMode 'sometimes' is not one of: dont_show_stale, stale_ok, recurring"),
            (#"{"isDisabled":"yes"}"#, "'isDisabled' has the wrong type"),
            (#"{"refreshInterval":0}"#, "'refreshInterval' must be a positive number of seconds"),
            (#"{"pilotProgram":{"id":"p"}}"#, "'pilotProgram.enrolled' is missing"),
            ("[1]", "wrong type")
        ] {
            XCTAssertThrowsError(try DeliverySettings.parse(Data(bad.utf8)), bad) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(bad): \(error)")
            }
        }
    }

    // MARK: Providers

    func testTheHostFillsDBServiceURLAndAllowsItsHostForTheHubsProviderOnly() throws {
        try TestSupport.write(
            manifest(
                provider: """
                      - id: explicit
                        use: \(TestSupport.plugin("HTTPContentProvider"))
                        config: {db_service_url: "http://example.org/x"}
                      - id: filled
                        use: \(TestSupport.plugin("HTTPContentProvider"))
                    """, hub: ", provider: filled"), to: folder + "/plugins.yaml")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(manifest.instances.map { $0.config["db_service_url"] }, [.string("http://example.org/x"), .string(service.baseURL)])
        XCTAssertEqual(manifest.instances.map(\.http.allowedHosts), [[], ["127.0.0.1"]])
        XCTAssertEqual(manifest.hubProviderIndex, 1)
    }

    func testTheHTTPProviderDirectly() throws {
        service.settings = { query in (200, "{\"got\": \"\(query["x"] ?? "")\"}") }
        let (host, _) = try host()
        let plugin = ContentProviderPlugin(try XCTUnwrap(host.registry.plugins(of: .contentProvider).first))
        let settings = plugin.fetch("settings?x=1&y=2")
        XCTAssertEqual(settings.status, HH_OK)
        XCTAssertEqual(String(decoding: settings.data, as: UTF8.self), #"{"got": "1"}"#)
        XCTAssertEqual(service.requests.last?.query, ["x": "1", "y": "2"])
        let missing = plugin.fetch("metadata")  // the service answers 404 until it has a bundle
        XCTAssertEqual(missing.status, HH_ERR_NOT_FOUND)
        XCTAssertEqual(missing.message, "\(service.baseURL)/metadata answered HTTP 404")
        XCTAssertEqual(plugin.fetch("elsewhere").status, HH_ERR_NOT_FOUND)
        let bundle = try signedBundle(version: "5")
        serve(bundle)
        let fetched = plugin.fetch("bundle")
        XCTAssertEqual(fetched.status, HH_OK)
        XCTAssertEqual(fetched.data, bundle.data)
        XCTAssertEqual(fetched.progress?.done, UInt64(bundle.data.count))
        XCTAssertEqual(fetched.progress?.total, UInt64(bundle.data.count))
    }

    func testTheLocalProviderReadsAFolderOrABundleFile() throws {
        let content = folder + "/content"
        let bundle = try signedBundle(version: "L1")
        try FileManager.default.createDirectory(atPath: content, withIntermediateDirectories: true)
        try bundle.data.write(to: URL(fileURLWithPath: content + "/bundle.sqlite3"))
        try TestSupport.write(bundle.metadata, to: content + "/bundle.sqlite3.json")
        try TestSupport.write(#"{"refreshMode": "dont_show_stale"}"#, to: content + "/settings.json")
        let (host, delivery) = try host(
            manifest(
                provider: """
                      - id: local
                        use: \(TestSupport.plugin("LocalContentProvider"))
                        config: {path: "\(content)"}
                    """))
        let (report, notes) = try notifications(host) { try delivery.sync() }
        XCTAssertEqual(report.result, "updated", report.message)
        XCTAssertEqual(report.settings.refreshMode, .dontShowStale)
        XCTAssertEqual(try host.hub()?.activeBundle?.metadata.version, "L1")
        XCTAssertEqual(percents(notes).last, 100)
        XCTAssertEqual(delivery.status().provider, "local")

        // A bundle file with its .json beside it, no settings.json: the default settings.
        let file = folder + "/single/content.sqlite3"
        let second = try signedBundle(version: "L2")
        try FileManager.default.createDirectory(atPath: folder + "/single", withIntermediateDirectories: true)
        try second.data.write(to: URL(fileURLWithPath: file))
        try TestSupport.write(second.metadata, to: file + ".json")
        host.shutdown()
        let (_, single) = try self.host(
            manifest(
                provider: """
                      - id: local
                        use: \(TestSupport.plugin("LocalContentProvider"))
                        config: {path: "\(file)"}
                    """))
        let loaded = try single.sync()
        XCTAssertEqual(loaded.result, "updated")
        XCTAssertEqual(loaded.settings, DeliverySettings())
        XCTAssertEqual(loaded.bundleVersion, "L2")
        let plugin = try XCTUnwrap(single.provider)
        XCTAssertEqual(plugin.fetch("settings?location_id=x").status, HH_ERR_NOT_FOUND)
        XCTAssertEqual(plugin.fetch("metadata?ignored=1").data, Data(second.metadata.utf8))
    }

    func testNoProviderIsAClearError() throws {
        let (_, delivery) = try host(manifest(provider: "  []"))
        XCTAssertThrowsError(try delivery.sync()) { error in
            XCTAssertEqual("\(error)", "no content provider: no content_provider instance is loaded in plugins.yaml")
        }
    }

    // MARK: Front ends

    func testHubSyncAndStatusCommands() throws {
        serve(try signedBundle(version: "9"))
        service.settings = { _ in (200, #"{"refreshMode": "recurring", "refreshInterval": 600, "pilotProgram": {"id": "p", "enrolled": true}}"#) }
        try TestSupport.write(manifest(), to: folder + "/plugins.yaml")
        let sync = try TestSupport.hubhost(["hub", "sync", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(sync.status, 0, sync.stderr)
        XCTAssertTrue(sync.stderr.contains("downloading: 100%"), sync.stderr)
        let report = try JSONDecoder().decode(ContentDelivery.SyncReport.self, from: Data(sync.stdout.utf8))
        XCTAssertEqual(report.result, "updated")
        service.stop()
        let status = try TestSupport.hubhost(["hub", "status", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(status.status, 0, status.stderr)
        let shown = try JSONDecoder().decode(DeliveryStatus.self, from: Data(status.stdout.utf8))
        XCTAssertEqual(shown.activeBundle?.version, "9")
        XCTAssertEqual(shown.activeBundle?.sha256, report.bundleSHA256)
        XCTAssertEqual(shown.settings.refreshMode, .recurring)
        XCTAssertEqual(shown.settings.pilotProgram, .init(id: "p", enrolled: true))
        XCTAssertEqual(shown.provider, "content")
        XCTAssertTrue(shown.state.isReady)
        let text = try TestSupport.hubhost(["hub", "status", "--manifest", folder + "/plugins.yaml"])
        XCTAssertTrue(text.stdout.contains("refreshMode         recurring every 600.0 s"), text.stdout)
        let failed = try TestSupport.hubhost(["hub", "sync", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains("hub sync failed: fetching 'settings' failed"), failed.stderr)
    }

    func testServeSyncsAtStartUpInImmediateModeThenRecurringAndOnPost() async throws {
        let service = self.service!  // for the closure below, which does not capture the test case
        serve(try signedBundle(version: "1"))
        service.settings = { _ in (200, #"{"initialDownloadMode": "immediate", "refreshMode": "recurring", "refreshInterval": 1}"#) }
        try TestSupport.write(manifest() + "\nserver: {host: 127.0.0.1, port: 0}\n", to: folder + "/plugins.yaml")
        // serve in this process, on a loopback port, its services running as serve runs them: the
        // start-up sync and the recurring ones are theirs.
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                let base = server.base
                let deadline = Date().addingTimeInterval(30)
                while service.requests.filter({ $0.path == "/content/bundle" }).isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
                XCTAssertFalse(service.requests.filter { $0.path == "/content/bundle" }.isEmpty, "immediate: downloaded at start-up")
                let settingsRequests = { service.requests.filter { $0.path == "/content/settings" }.count }
                while settingsRequests() < 3 && Date() < deadline.addingTimeInterval(30) { Thread.sleep(forTimeInterval: 0.05) }
                XCTAssertGreaterThanOrEqual(settingsRequests(), 3, "recurring: re-synced every refreshInterval")
                let response = try HTTPFetcher().fetch("POST", base + "/v1/hub/sync", timeoutSeconds: 30).get()
                XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
                let report = try JSONDecoder().decode(ContentDelivery.SyncReport.self, from: response.body)
                XCTAssertEqual(report.bundleVersion, "1")
                let status = try HTTPFetcher().fetch("GET", base + "/v1/hub/status", timeoutSeconds: 10).get()
                XCTAssertEqual(status.status, 200)
                let shown = try JSONDecoder().decode(DeliveryStatus.self, from: status.body)
                XCTAssertEqual(shown.activeBundle?.version, "1")
                XCTAssertEqual(shown.settings.refreshMode, .recurring)
                XCTAssertTrue(shown.state.isReady)
                service.metadata = (503, "{}")
                let failed = try HTTPFetcher().fetch("POST", base + "/v1/hub/sync", timeoutSeconds: 30).get()
                XCTAssertEqual(failed.status, 502)
                XCTAssertTrue(String(decoding: failed.body, as: UTF8.self).contains("answered HTTP 503"))
            }
        }
    }

    func testBothProvidersPassThePluginTestSuite() throws {
        for name in ["HTTPContentProvider", "LocalContentProvider"] {
            let run = try TestSupport.hubhost(["plugins", "test", TestSupport.plugin(name), "--json"], timeout: 300)
            XCTAssertEqual(run.status, 0, "\(name): \(run.stdout) \(run.stderr)")
            let report = try run.json(as: [String: Any].self)
            XCTAssertEqual(report["failed"] as? Int, 0, name)
            XCTAssertGreaterThanOrEqual(report["passed"] as? Int ?? 0, 7, name)
        }
    }
}

/// The notifications a subscriber heard.
private final class NotificationLog: @unchecked Sendable {
    let lock = NSLock()
    var items: [HostNotification] = []
}
