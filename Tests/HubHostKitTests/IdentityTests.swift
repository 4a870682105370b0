import Foundation
import XCTest

@testable import HubHostKit

/// The mobile identity manager against the fake XMLAPI service: setup, the outcomes of
/// checkIdentity, the journaled merge surviving kill -9 of a hubhost child after each step, ids on
/// every event, the seed's spellings and deprecated calls, the user_id_generator plugin.
final class IdentityTests: FolderTestCase {
    var service: TestXMLAPIService!

    override func setUpWithError() throws {
        try super.setUpWithError()
        service = try TestXMLAPIService()
    }

    override func tearDown() {
        service?.stop()
    }

    /// plugins.yaml with the identity section pointing at the fake service; `identity` adds lines.
    func writeManifest(identity extra: String = "", plugins: String = "plugins: []") throws {
        try TestSupport.write(
            """
            data_dir: data
            events:
              cache_size: 1000
              auth_token_url: "\(service.tokenURL)"
              auth_client_id: client
              auth_client_secret: secret
              auth_refresh_token: refresh-\(UUID().uuidString)
            identity:
              host: "\(service.host)"
              databaseListId: "45654"
              maxRetries: 1
              retryBaseDelay: 0.01
              requestTimeout: 5
            \(extra.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            \(plugins)
            """, to: folder + "/plugins.yaml")
    }

    func openHost() throws -> HubHost {
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    func testSetupAddsOneRecipientAndIsThenSetUp() throws {
        try writeManifest()
        let host = try openHost()
        XCTAssertTrue(host.manifest.diagnostics.isEmpty, "\(host.manifest.diagnostics)")
        let identity = try host.identity()
        let first = try identity.setupRecipient()
        XCTAssertTrue(first.created)
        XCTAssertEqual(service.operations, ["AddRecipient"])
        let add = try XCTUnwrap(service.requests.first)
        XCTAssertEqual(add.child("LIST_ID")?.text, "45654")
        XCTAssertEqual(add.child("CREATED_FROM")?.text, "1")
        XCTAssertEqual(service.recipient(first.recipientId)?.columns, ["Mobile User Id": first.mobileUserId])
        XCTAssertNotNil(UUID(uuidString: first.mobileUserId), "the built-in generator makes a UUID")
        let again = try identity.setupRecipient()
        XCTAssertFalse(again.created)
        XCTAssertEqual(again.recipientId, first.recipientId)
        XCTAssertEqual(service.operations, ["AddRecipient"], "already set up: nothing is sent")
        // The ids go on every event from now on, and the setup itself was an event.
        let tracked = try host.events().track(Event(type: .namedEvent, name: "PLAYER LOADED"))
        XCTAssertEqual(tracked.attributes.first { $0.name == "Recipient Id" }?.value, .string(first.recipientId))
        XCTAssertEqual(tracked.attributes.first { $0.name == "Mobile User Id" }?.value, .string(first.mobileUserId))
        let names = try host.events().store.list(limit: 100).map(\.event.name)
        XCTAssertTrue(names.contains(IdentityChange.Kind.setUp.rawValue), "\(names)")
    }

    /// The service adds the recipient and the answer is lost: the retry looks the mobile user id
    /// up and keeps that recipient instead of adding a second one holding the same id.
    func testALostAddRecipientAnswerIsLookedUpInsteadOfAddingASecondRecipient() throws {
        try writeManifest()
        service.script([.performThenDrop])
        let setup = try openHost().identity().setupRecipient()
        XCTAssertTrue(setup.created)
        XCTAssertEqual(service.recipients.map(\.id), [setup.recipientId], "one recipient, and it is the one kept")
        XCTAssertEqual(service.recipients.first?.columns["Mobile User Id"], setup.mobileUserId)
        XCTAssertEqual(service.operations, ["AddRecipient", "SelectRecipientData"])
    }

    /// A 5xx that was not carried out: the lookup finds nobody, so AddRecipient is sent again.
    func testAFailedAddRecipientIsSentAgainAfterTheLookupFindsNobody() throws {
        try writeManifest()
        service.script([.status(503)])
        let setup = try openHost().identity().setupRecipient()
        XCTAssertEqual(service.recipients.map(\.id), [setup.recipientId])
        XCTAssertEqual(service.operations, ["SelectRecipientData", "AddRecipient"], "the 503 was not parsed as an operation")
    }

    /// Four processes run `identity setup` on one data directory at the same moment, against a
    /// service slow enough that their setups overlap: one recipient is added, the others find it.
    func testProcessesSettingUpTogetherAddOneRecipient() throws {
        try writeManifest()
        service.script([.slow(0.5)])
        let folder = self.folder
        let results = try TestSupport.concurrently(4) { _ in
            try TestSupport.hubhost(["identity", "setup", "--json"], manifest: folder + "/plugins.yaml", in: folder, timeout: 60)
        }
        for result in results { XCTAssertEqual(result.status, 0, result.description) }
        XCTAssertEqual(service.recipients.count, 1, "\(service.recipients)")
        XCTAssertEqual(service.operations.filter { $0 == "AddRecipient" }.count, 1, "\(service.operations)")
        let created = try results.map { try XCTUnwrap(TestSupport.json($0.stdout) as? [String: Any])["created"] as? Bool }
        XCTAssertEqual(created.filter { $0 == true }.count, 1, "\(created)")
        let ids = Set(try results.map { try XCTUnwrap(TestSupport.json($0.stdout) as? [String: Any])["recipientId"] as? String })
        XCTAssertEqual(ids, [service.recipients.first?.id])
    }

    func testSetupWithoutAutoTrackingNeedsAMobileUserID() throws {
        try writeManifest(identity: "enableAutoAnonymousTracking: false")
        let identity = try openHost().identity()
        XCTAssertThrowsError(try identity.setupRecipient()) { XCTAssertTrue("\($0)".contains("enableAutoAnonymousTracking is false"), "\($0)") }
        XCTAssertEqual(service.operations, [], "nothing is sent without a mobile user id")
        try identity.setMobileUserID("app-user-7")
        let setup = try identity.setupRecipient()
        XCTAssertEqual(setup.mobileUserId, "app-user-7")
        XCTAssertEqual(service.recipient(setup.recipientId)?.columns["Mobile User Id"], "app-user-7")
    }

    func testCheckNotFoundUpdatesTheCurrentRecipientWithTheColumns() throws {
        try writeManifest()
        let identity = try openHost().identity()
        let result = try identity.checkIdentity([("facebook_id", "fbuser")])
        XCTAssertEqual(result.outcome, .updatedCurrent)
        XCTAssertEqual(service.operations, ["AddRecipient", "SelectRecipientData", "UpdateRecipient"])
        XCTAssertEqual(service.recipient(result.recipientId)?.columns["facebook_id"], "fbuser")
        // The same check again finds ourselves: nothing more is changed.
        let again = try identity.checkIdentity([("facebook_id", "fbuser")])
        XCTAssertEqual(again.outcome, .alreadyCurrent)
        XCTAssertEqual(again.recipientId, result.recipientId)
        XCTAssertEqual(service.operations.last, "SelectRecipientData")
        XCTAssertEqual(service.recipients.count, 1)
    }

    func testCheckFoundWithoutMobileUserIDMovesOursOntoItAndStampsTheOldOne() throws {
        try writeManifest(identity: "mergeHistoryInAuditRecordTable: true\nauditRecordListId: \"777\"")
        let host = try openHost()
        let identity = try host.identity()
        let setup = try identity.setupRecipient()
        let found = service.addRecipient(["facebook_id": "fbuser", "twitter_id": "tw"])
        let result = try identity.checkIdentity([("facebook_id", "fbuser"), ("twitter_id", "tw")])
        XCTAssertEqual(result.outcome, .mergedIntoRecipientWithoutMobileUserId)
        XCTAssertEqual(result.recipientId, found)
        XCTAssertEqual(result.mobileUserId, setup.mobileUserId)
        XCTAssertEqual(result.mergedRecipientId, setup.recipientId)
        assertMergedWithoutMobileUserId(old: setup.recipientId, found: found, mobile: setup.mobileUserId, auditTable: true)
        let status = try identity.status()
        XCTAssertEqual(status.recipientId, found)
        XCTAssertNil(status.pendingMerge)
        // Events after the merge carry the new recipient; the merge was an event too.
        let tracked = try host.events().track(Event(type: .namedEvent, name: "AFTER"))
        XCTAssertEqual(tracked.attributes.first { $0.name == "Recipient Id" }?.value, .string(found))
        let merged = try host.events().store.list(limit: 100).map(\.event).first { $0.name == IdentityChange.Kind.merged.rawValue }
        XCTAssertEqual(merged?.attributes.first { $0.name == "Merged Recipient Id" }?.value, .string(setup.recipientId))
    }

    /// The tables after an (uninterrupted or resumed) merge into a recipient that had no mobile user id.
    func assertMergedWithoutMobileUserId(
        old: String, found: String, mobile: String, auditTable: Bool,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let foundRow = service.recipient(found)?.columns ?? [:]
        let oldRow = service.recipient(old)?.columns ?? [:]
        XCTAssertEqual(foundRow["Mobile User Id"], mobile, "ours moved onto the found recipient", file: file, line: line)
        XCTAssertEqual(oldRow["Mobile User Id"], "", "cleared on the old recipient", file: file, line: line)
        XCTAssertEqual(oldRow["Merged Recipient Id"], found, file: file, line: line)
        XCTAssertNotNil(
            oldRow["Merged Date"].flatMap { $0.range(of: #"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d$"#, options: .regularExpression) },
            "merged date \(oldRow["Merged Date"] ?? "nil")", file: file, line: line)
        XCTAssertNil(foundRow["Merged Recipient Id"], file: file, line: line)
        if auditTable {
            let audit = service.audit
            XCTAssertEqual(audit.count, 1, "exactly one audit row: \(audit)", file: file, line: line)
            XCTAssertEqual(audit.first?["Old Recipient Id"], old, file: file, line: line)
            XCTAssertEqual(audit.first?["New Recipient Id"], found, file: file, line: line)
            XCTAssertEqual(audit.first?["Create Date"], oldRow["Merged Date"], file: file, line: line)
            XCTAssertFalse((audit.first?["Audit Record Id"] ?? "").isEmpty, file: file, line: line)
        }
        XCTAssertEqual(service.recipients.count, 2, "no recipient was added twice", file: file, line: line)
    }

    func testCheckFoundWithMobileUserIDAdoptsBothIdsAndStampsTheOldOne() throws {
        try writeManifest()
        let identity = try openHost().identity()
        let setup = try identity.setupRecipient()
        let found = service.addRecipient(["email_id": "a@b.c", "Mobile User Id": "their-mobile-id"])
        let result = try identity.checkIdentity([("email_id", "a@b.c")])
        XCTAssertEqual(result.outcome, .mergedIntoRecipientWithMobileUserId)
        XCTAssertEqual(result.recipientId, found)
        XCTAssertEqual(result.mobileUserId, "their-mobile-id")
        let old = service.recipient(setup.recipientId)?.columns ?? [:]
        XCTAssertEqual(old["Merged Recipient Id"], found)
        XCTAssertEqual(old["Mobile User Id"], setup.mobileUserId, "the old recipient keeps its own id in this outcome")
        XCTAssertEqual(service.recipient(found)?.columns["Mobile User Id"], "their-mobile-id")
        XCTAssertEqual(service.audit.count, 0, "no audit table unless mergeHistoryInAuditRecordTable")
        let status = try identity.status()
        XCTAssertEqual(status.recipientId, found)
        XCTAssertEqual(status.mobileUserId, "their-mobile-id")
    }

    func testAFailedMergeStepStaysJournaledAndTheNextCheckFinishesIt() throws {
        try writeManifest(identity: "mergeHistoryInMarketingDatabase: true")
        let identity = try openHost().identity()
        let setup = try identity.setupRecipient()
        let found = service.addRecipient(["facebook_id": "fb"])
        // SelectRecipientData answers, then the first merge step gets 500 twice (1 retry): the merge stops.
        let before = service.operations.count
        service.script([.pass, .status(500), .status(500)])
        XCTAssertThrowsError(try identity.checkIdentity([("facebook_id", "fb")])) { error in
            XCTAssertTrue("\(error)".contains("journaled and resumes"), "\(error)")
        }
        XCTAssertGreaterThan(service.operations.count, before)
        let pending = try XCTUnwrap(try identity.status().pendingMerge)
        XCTAssertEqual(pending.steps.filter(\.done).count, 0)
        XCTAssertNotNil(pending.lastError)
        XCTAssertEqual(try identity.status().recipientId, setup.recipientId, "not switched before the merge is done")
        XCTAssertThrowsError(try identity.reset(force: false)) { XCTAssertTrue("\($0)".contains("pending"), "\($0)") }
        let result = try identity.checkIdentity([("facebook_id", "fb")])
        XCTAssertEqual(result.outcome, .alreadyCurrent, "the resumed merge switched to the found recipient first")
        assertMergedWithoutMobileUserId(old: setup.recipientId, found: found, mobile: setup.mobileUserId, auditTable: false)
        XCTAssertNil(try identity.status().pendingMerge)
    }

    /// kill -9 of a hubhost child after each step of a merge (0: after the plan is journaled,
    /// before any request; N: after the service confirmed step N, before the journal marked it),
    /// then a restart: the merge completes and the tables are those of an uninterrupted merge.
    func testAMergeKilledAfterEachStepCompletesOnRestart() throws {
        for killAfter in 0...3 {  // 3 steps: move the mobile user id, clear and stamp the old recipient, the audit row
            service.stop()
            service = try TestXMLAPIService()
            folder = try TestSupport.temporaryFolder(self)
            let (old, mobile, found) = try killedMerge(after: killAfter, facebookID: "fb-\(killAfter)")
            let shown = try cliJSON(["identity", "show", "--json"])
            let pending = try XCTUnwrap(shown["pendingMerge"] as? [String: Any], "step \(killAfter): the journal knows the merge")
            XCTAssertEqual((pending["steps"] as? [[String: Any]])?.count, 3)
            XCTAssertEqual(shown["recipientId"] as? String, old, "not switched yet")
            let resumed = try cliJSON(["identity", "check", "--column", "facebook_id=fb-\(killAfter)", "--json"])
            XCTAssertEqual(resumed["recipientId"] as? String, found, "step \(killAfter)")
            XCTAssertEqual(resumed["outcome"] as? String, "already_current", "step \(killAfter)")
            assertMergedWithoutMobileUserId(old: old, found: found, mobile: mobile, auditTable: true)
            let after = try cliJSON(["identity", "show", "--json"])
            XCTAssertNil(after["pendingMerge"], "step \(killAfter)")
            XCTAssertEqual(after["mobileUserId"] as? String, mobile)
        }
    }

    /// Sets the identity up with the merge history in the audit table, adds a recipient with
    /// `facebookID`, and has `identity check` (which finds it) kill itself after merge step
    /// `killAfter`: the merge is pending. Returns the old recipient, the mobile user id and the
    /// recipient found.
    private func killedMerge(after killAfter: Int, facebookID: String) throws -> (old: String, mobile: String, found: String) {
        try writeManifest(identity: "mergeHistoryInAuditRecordTable: true\nauditRecordListId: \"777\"")
        let setup = try cliJSON(["identity", "setup", "--json"])
        let old = try XCTUnwrap(setup["recipientId"] as? String)
        let mobile = try XCTUnwrap(setup["mobileUserId"] as? String)
        let found = service.addRecipient(["facebook_id": facebookID])
        let killed = try TestSupport.hubhost(
            ["identity", "check", "--column", "facebook_id=\(facebookID)"], manifest: folder + "/plugins.yaml",
            environment: [MobileIdentityManager.killAfterStepVariable: String(killAfter)], timeout: 60)
        XCTAssertEqual(killed.status, SIGKILL, "step \(killAfter): the child killed itself: \(killed.stderr)")
        return (old, mobile, found)
    }

    /// A merge killed halfway is finished by `hubhost serve` at start, with no check or setup.
    func testServeFinishesAPendingMergeAtStart() async throws {
        let (old, mobile, found) = try killedMerge(after: 1, facebookID: "fb")
        let manifest = try String(contentsOfFile: folder + "/plugins.yaml", encoding: .utf8)
        try TestSupport.write("server: {port: 0}\n" + manifest, to: folder + "/plugins.yaml")
        // serve in this process with its services: the identity journal's, which finishes the merge at start.
        try await InProcessAPI.listening(manifestPath: folder + "/plugins.yaml", services: true) { port, _ in
            try await TestSupport.offPool {
                let server = ListeningAPI(port: port)
                var identity: [String: Any] = [:]
                for _ in 0..<100 {  // bounded: 10 s
                    identity = try XCTUnwrap(try server.call("GET", "/v1/identity").1 as? [String: Any])
                    if identity["pendingMerge"] == nil { break }
                    Thread.sleep(forTimeInterval: 0.1)
                }
                XCTAssertNil(identity["pendingMerge"], "\(identity)")
                XCTAssertEqual(identity["recipientId"] as? String, found)
            }
        }
        assertMergedWithoutMobileUserId(old: old, found: found, mobile: mobile, auditTable: true)
    }

    /// `hubhost ARGS --manifest plugins.yaml`, which must exit 0 and print a JSON object.
    func cliJSON(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try TestSupport.hubhost(arguments, manifest: folder + "/plugins.yaml", timeout: 60).expect(file: file, line: line)
            .json(as: [String: Any].self, file: file, line: line)
    }

    func testAnInjectionInAColumnValueStaysAValue() throws {
        try writeManifest()
        let identity = try openHost().identity()
        let hostile = "x</VALUE></COLUMN><COLUMN><NAME>Mobile User Id</NAME><VALUE>stolen</VALUE></COLUMN><EMAIL>a@evil"
        let result = try identity.checkIdentity([("nickname", hostile)])
        XCTAssertEqual(result.outcome, .updatedCurrent)
        let row = try XCTUnwrap(service.recipient(result.recipientId)?.columns)
        XCTAssertEqual(row["nickname"], hostile, "stored as the value it is")
        XCTAssertEqual(row["Mobile User Id"], result.mobileUserId, "not overwritten by the injected column")
        XCTAssertNil(row["EMAIL"])
        XCTAssertTrue(service.bodies.last?.contains("&lt;/VALUE&gt;") ?? false)
    }

    func testTheSeedsSpellingsAreAcceptedAndDeprecatedCallsMapOrAreRefused() throws {
        try writeManifest(
            identity: """
                "Recipient->mobileUserIdColumn": "Device User"
                "AuditRecord>newRecipientIdColumnName": "Assumed Id"
                """)
        let host = try openHost()
        XCTAssertTrue(host.manifest.diagnostics.isEmpty, "\(host.manifest.diagnostics)")
        XCTAssertEqual(host.manifest.identity.mobileUserIdColumn, "Device User")
        XCTAssertEqual(host.manifest.identity.string("newRecipientIdColumnName"), "Assumed Id")
        let identity = try host.identity()
        XCTAssertThrowsError(try identity.createAnonymousUser(list: "other")) { XCTAssertTrue("\($0)".contains("maps onto setupRecipient"), "\($0)") }
        let created = try identity.createAnonymousUser(list: "45654")
        XCTAssertEqual(service.recipient(created.recipientId)?.columns["Device User"], created.mobileUserId)
        XCTAssertThrowsError(
            try identity.updateAnonymousToPrimaryUser("p1", list: "45654", primaryUserColumn: "CONTACT_ID", mergeColumn: "MERGE_CONTACT_ID")
        ) {
            XCTAssertTrue("\($0)".contains("Use checkIdentity"), "\($0)")
        }
        XCTAssertEqual(service.operations, ["AddRecipient"])
    }

    func testAnUnknownKeyAndAMissingAuditTableAreReported() throws {
        try writeManifest(identity: "mobileUserIdColum: x\nmergeHistoryInAuditRecordTable: true")
        let manifest = try HostManifest.load(path: folder + "/plugins.yaml")
        let messages = manifest.diagnostics.map(\.message).joined(separator: "\n")
        XCTAssertTrue(messages.contains("mobileUserIdColumn"), messages)
        XCTAssertTrue(messages.contains("auditRecordListId"), messages)
    }

    /// A typo in `identity:` stops every identity command (no recipient is made with the default
    /// column), with the problem at its line; logging off does not hide it.
    func testIdentityCommandsRefuseAManifestWithProblemsInTheIdentitySection() throws {
        try writeManifest(identity: "mobileUserIdColum: x")
        try TestSupport.write(
            try String(contentsOfFile: folder + "/plugins.yaml", encoding: .utf8) + "\nlogging:\n  severity: none\n", to: folder + "/plugins.yaml")
        for arguments in [["identity", "setup"], ["identity", "show"], ["identity", "check", "--column", "facebook_id=1"]] {
            let result = try TestSupport.hubhost(arguments, manifest: folder + "/plugins.yaml", in: folder)
            XCTAssertEqual(result.status, 1, "\(arguments): \(result)")
            XCTAssertTrue(result.stderr.contains("plugins.yaml:"), result.stderr)
            XCTAssertTrue(result.stderr.contains("identity.mobileUserIdColum"), result.stderr)
        }
        XCTAssertEqual(service.operations, [], "nothing was sent")
        XCTAssertThrowsError(try openHost().identity()) { XCTAssertTrue($0 is ManifestError, "\($0)") }
        // Other engines are not held back by it.
        XCTAssertNoThrow(try openHost().events().track(Event(type: .namedEvent, name: "STILL TRACKED")))
    }

    /// Engage list and table ids are numbers: a word is a problem at its line, not a request.
    func testListIdsMustBeNumbers() throws {
        try writeManifest(identity: "auditRecordListId: nine")
        let text = try String(contentsOfFile: folder + "/plugins.yaml", encoding: .utf8)
        try TestSupport.write(
            text.replacingOccurrences(of: "databaseListId: \"45654\"", with: "databaseListId: forty-five"), to: folder + "/plugins.yaml")
        let check = try TestSupport.hubhost(["manifest", "check", folder + "/plugins.yaml"], in: folder)
        XCTAssertEqual(check.status, 1, check.description)
        XCTAssertTrue(check.stdout.contains("identity.databaseListId") || check.stderr.contains("identity.databaseListId"), check.description)
        XCTAssertTrue((check.stdout + check.stderr).contains("identity.auditRecordListId"), check.description)
        let setup = try TestSupport.hubhost(["identity", "setup"], manifest: folder + "/plugins.yaml", in: folder)
        XCTAssertEqual(setup.status, 1, setup.description)
        XCTAssertEqual(service.operations, [])
    }

    func testTheUUIDGeneratorPluginMakesTheMobileUserID() throws {
        try writeManifest(
            identity:
                "mobileUserIdGenerator: ids\nauditRecordPrimaryKeyGenerator: keys\nmergeHistoryInAuditRecordTable: true\nauditRecordListId: \"9\"",
            plugins: """
                plugins:
                  - id: ids
                    use: \(TestSupport.plugin("UUIDGenerator"))
                    config: {prefix: "m-", uppercase: false}
                  - id: keys
                    use: \(TestSupport.plugin("UUIDGenerator"))
                    isolation: process
                    config: {prefix: "audit-"}
                """)
        let identity = try openHost().identity()
        let setup = try identity.setupRecipient()
        XCTAssertTrue(setup.mobileUserId.hasPrefix("m-"), setup.mobileUserId)
        XCTAssertNotNil(UUID(uuidString: String(setup.mobileUserId.dropFirst(2))), setup.mobileUserId)
        XCTAssertEqual(setup.mobileUserId, setup.mobileUserId.lowercased())
        service.addRecipient(["k": "v"])
        _ = try identity.checkIdentity([("k", "v")])
        let key = try XCTUnwrap(service.audit.first?["Audit Record Id"])
        XCTAssertTrue(key.hasPrefix("audit-"), "the isolated instance made the audit key: \(key)")
        XCTAssertEqual(key, key.uppercased().replacingOccurrences(of: "AUDIT-", with: "audit-"))
    }

    func testAnABI10PluginStillLoadsBesideTheNewKind() throws {
        // The fault fixture declares ABI 1.0.0 in its hh_library_t.
        let manifest = try TestSupport.faultyFixture(nil, in: folder)
        try TestSupport.write(
            """
            data_dir: data
            plugins:
              - id: old
                use: \(manifest)
              - id: ids
                use: \(TestSupport.plugin("UUIDGenerator"))
            """, to: folder + "/plugins.yaml")
        let host = try openHost()
        XCTAssertEqual(host.registry.entries.map(\.state), [.loaded, .loaded], "\(host.registry.entries)")
        let generated = try XCTUnwrap(host.registry.plugins(of: .userIDGenerator).first.map(UserIDGeneratorPlugin.init)).generate()
        XCTAssertNotNil(UUID(uuidString: generated))
    }
}

/// The user_id_generator kind under `hubhost plugins test` and the loader: the bundled plugin passes,
/// a generator that repeats itself or answers HH_OK without an id fails its test, and a library
/// that claims ABI 1.0 cannot export the kind added in 1.1.
final class UserIDGeneratorKindTests: FolderTestCase {
    /// Compiles the fixture with `define` into its own folder with a plugin.yaml; returns the plugin.yaml.
    func fixture(_ define: String?) throws -> String {
        let dir = folder + "/" + (define ?? "GOOD")
        _ = try TestSupport.compileFixture("user_id_generator_fixture.c", defines: define.map { [$0] } ?? [], into: dir, name: "libids.so")
        try TestSupport.write(
            TestSupport.pluginManifest(
                id: "fixture-ids", name: "Fixture ids", library: "libids.so", abi: "1.1", exports: [("fixture-ids", "user_id_generator")]),
            to: dir + "/plugin.yaml")
        return dir + "/plugin.yaml"
    }

    func pluginsTest(_ path: String) throws -> (status: Int32, results: [String: [String: Any]]) {
        let run = try TestSupport.hubhost(["plugins", "test", path, "--json"], timeout: 300)
        let report = try XCTUnwrap(try run.json as? [String: Any], run.stdout + run.stderr)
        let results = try XCTUnwrap(report["results"] as? [[String: Any]], "\(report)")
        return (run.status, Dictionary(uniqueKeysWithValues: results.compactMap { result in (result["name"] as? String).map { ($0, result) } }))
    }

    func testTheBundledGeneratorAndAGoodFixturePassAndBadOnesFail() throws {
        let bundled = try pluginsTest(TestSupport.plugin("UUIDGenerator"))
        XCTAssertEqual(bundled.status, 0, "\(bundled.results)")
        XCTAssertEqual(bundled.results["uuid-generator/generate-unique"]?["outcome"] as? String, "passed")
        let good = try pluginsTest(try fixture(nil))
        XCTAssertEqual(good.status, 0, "\(good.results)")
        for bad in ["FIXTURE_DUPLICATE", "FIXTURE_NO_SET"] {
            let result = try pluginsTest(try fixture(bad))
            XCTAssertEqual(result.status, 1, bad)
            let unique = try XCTUnwrap(result.results["fixture-ids/generate-unique"], "\(bad): \(result.results.keys)")
            XCTAssertEqual(unique["outcome"] as? String, "failed", bad)
            XCTAssertTrue("\(unique["message"] ?? "")".contains(bad == "FIXTURE_DUPLICATE" ? "twice" : "no id"), "\(bad): \(unique)")
        }
    }

    func testALibraryClaimingABI10CannotExportTheNewKind() throws {
        let path = try fixture("FIXTURE_ABI_1_0")
        try TestSupport.write("data_dir: data\nplugins:\n  - id: ids\n    use: \(path)\n", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        XCTAssertTrue(host.registry.plugins(of: .userIDGenerator).isEmpty)
        let reason = "\(host.registry.entries.first.map { "\($0.state)" } ?? "")"
        XCTAssertTrue(reason.contains("added in ABI 1.1"), reason)
    }
}

/// `hubhost xmlapi call` and `hubhost identity` as a user runs them.
final class IdentityCLITests: XCTestCase {
    func testXMLAPICallPrintsFaultsAndValuesWithExitCodes() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let service = try TestXMLAPIService()
        defer { service.stop() }
        try TestSupport.write(
            "data_dir: data\nidentity: {host: \"\(service.host)\", databaseListId: \"45654\", maxRetries: 0}\n",
            to: folder + "/plugins.yaml")
        let manifest = folder + "/plugins.yaml"
        let missing = try TestSupport.hubhost(
            ["xmlapi", "call", "SelectRecipientData", "--param", "LIST_ID=45654", "--column", "email_id=a@b", "--json"], manifest: manifest,
            timeout: 60)
        XCTAssertEqual(missing.status, 3, missing.stderr)
        let fault = try missing.json(as: [String: Any].self)
        XCTAssertEqual(fault["isSuccess"] as? Bool, false)
        XCTAssertEqual(fault["errorId"] as? Int, 128)
        let id = service.addRecipient(["email_id": "a@b", "Name": "Ann <admin>"])
        let found = try TestSupport.hubhost(
            ["xmlapi", "call", "SelectRecipientData", "--param", "LIST_ID=45654", "--column", "email_id=a@b", "--json"], manifest: manifest,
            timeout: 60)
        XCTAssertEqual(found.status, 0, found.stderr)
        let answer = try found.json(as: [String: Any].self)
        XCTAssertEqual((answer["values"] as? [String: String])?["RESULT.RecipientId"], id)
        XCTAssertEqual((answer["columns"] as? [String: String])?["Name"], "Ann <admin>")
        let text = try TestSupport.hubhost(
            ["xmlapi", "call", "SelectRecipientData", "--param", "LIST_ID=45654", "--column", "email_id=a@b"], manifest: manifest, timeout: 60)
        XCTAssertTrue(text.stdout.contains("isSuccess: true"), text.stdout)
        let badName = try TestSupport.hubhost(["xmlapi", "call", "Select Recipient"], manifest: manifest, timeout: 60)
        XCTAssertEqual(badName.status, 64, badName.stderr)
        XCTAssertTrue(badName.stderr.contains("not a valid XMLAPI element name"), badName.stderr)
        let noColumns = try TestSupport.hubhost(["identity", "check"], manifest: manifest, timeout: 60)
        XCTAssertEqual(noColumns.status, 64, noColumns.stderr)
        try TestSupport.write("data_dir: data2\n", to: folder + "/plugins.yaml")
        let unconfigured = try TestSupport.hubhost(["identity", "setup"], manifest: manifest, timeout: 60)
        XCTAssertEqual(unconfigured.status, 1)
        XCTAssertTrue(unconfigured.stderr.contains("identity.host"), unconfigured.stderr)
        let shown = try TestSupport.hubhost(["identity", "show", "--json"], manifest: manifest, timeout: 60)
        XCTAssertEqual(shown.status, 0, shown.stderr)
        XCTAssertFalse(shown.stdout.contains("mobileUserId"), "a setup that cannot be sent makes no id: \(shown.stdout)")
        try TestSupport.write(
            "data_dir: data\nidentity: {host: \"\(service.host)\", databaseListId: \"45654\", maxRetries: 0}\n",
            to: folder + "/plugins.yaml")
        service.stop()
        let down = try TestSupport.hubhost(["identity", "setup"], manifest: manifest, timeout: 60)
        XCTAssertEqual(down.status, 1)
        XCTAssertTrue(down.stderr.contains("did not answer"), down.stderr)
    }
}
