import XCTest

@testable import HubHostKit

/// Each way a plugin can fail to load gets its own clear message, and the host keeps running with
/// the remaining plugins (here: the bundled fixed-location and static-advertiser-id plugins).
final class LoaderFaultTests: FolderTestCase {
    /// Starts a host with a good location plugin, the instance under test, and a good advertiser
    /// plugin after it; returns the host and the entry under test.
    private func startHost(faultyEntry: String) throws -> (HubHost, PluginRegistry.Entry, CapturedLog) {
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: info, verbosity: debug}
            plugins:
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config: {location_id: store-17}
            \(faultyEntry)
              - id: ads
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                config: {advertiser_id: ad-123}
            """, to: folder + "/plugins.yaml")
        let capture = CapturedLog()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml", extraDestinations: [capture])
        addTeardownBlock { host.shutdown() }
        // The host is still running with the remaining plugins:
        XCTAssertEqual(host.registry.entry(id: "geo")?.state, .loaded)
        XCTAssertEqual(host.registry.entry(id: "ads")?.state, .loaded)
        XCTAssertEqual(host.location()?.location.locationID, "store-17")
        XCTAssertEqual(host.advertiserID().advertiserID, "ad-123")
        let entry = try XCTUnwrap(host.registry.entry(id: "faulty"))
        return (host, entry, capture)
    }

    private func fixtureEntry(library: String, manifestLibrary: String? = nil, sha256: String? = nil, id: String = "fault-fixture") throws -> String {
        try TestSupport.write(
            TestSupport.fixtureManifest(library: manifestLibrary ?? (library as NSString).lastPathComponent, id: id),
            to: folder + "/fixture/plugin.yaml")
        return """
              - id: faulty
                use: fixture/plugin.yaml
            \(sha256.map { "    sha256: \($0)" } ?? "")
            """
    }

    private func failure(_ entry: PluginRegistry.Entry, file: StaticString = #filePath, line: UInt = #line) -> PluginLoadError? {
        guard case .failed(let error) = entry.state else {
            XCTFail("expected the instance to fail, it is \(entry.state.name)", file: file, line: line)
            return nil
        }
        return error
    }

    func testWellBehavedFixtureLoadsAndWorks() throws {
        _ = try TestSupport.compileFixture(into: folder + "/fixture", name: "libfixture.so")
        let (host, entry, capture) = try startHost(faultyEntry: try fixtureEntry(library: "libfixture.so"))
        XCTAssertEqual(entry.state, .loaded)
        let op = TriggerOperatorPlugin(try XCTUnwrap(host.registry.plugins(of: .triggerOperator).first))
        XCTAssertEqual(op.operatorName, "FIXTURE_EQUALS")
        XCTAssertTrue(op.compare(event: .int(4), trigger: .int(4)).result)
        XCTAssertFalse(op.compare(event: .int(4), trigger: .int(5)).result)
        XCTAssertEqual(op.compare(event: .string("4"), trigger: .int(4)).status, 4 /* HH_ERR_TYPE_MISMATCH */)
        // The plugin's own log call went through the pipeline, tagged with its instance id.
        XCTAssertTrue(capture.records.contains { $0.source == "faulty" && $0.message == "fixture created" })
    }

    func testMissingLibrary() throws {
        let (_, entry, capture) = try startHost(faultyEntry: try fixtureEntry(library: "libnot-built.so"))
        guard case .libraryNotFound(let library, let searched)? = failure(entry) else { return XCTFail("\(entry.state)") }
        XCTAssertEqual(library, "libnot-built.so")
        XCTAssertEqual(searched.first, folder + "/fixture")
        XCTAssertTrue(failure(entry)!.description.contains("HUBHOST_PLUGIN_PATH"))
        XCTAssertTrue(
            capture.messages.contains { $0.contains("instance 'faulty' not loaded: library libnot-built.so not found") },
            "\(capture.messages)")
    }

    func testFileThatIsNotASharedObject() throws {
        try TestSupport.write("this is text, not ELF\n", to: folder + "/fixture/libtext.so")
        let (_, entry, _) = try startHost(faultyEntry: try fixtureEntry(library: "libtext.so"))
        guard case .notASharedObject(let path, let reason)? = failure(entry) else { return XCTFail("\(entry.state)") }
        XCTAssertEqual(path, folder + "/fixture/libtext.so")
        XCTAssertFalse(reason.isEmpty)
        XCTAssertTrue(failure(entry)!.description.contains("is not a loadable shared object"))
    }

    func testMissingEntrySymbol() throws {
        _ = try TestSupport.compileFixture(defines: ["FAULT_NO_ENTRY"], into: folder + "/fixture", name: "libnoentry.so")
        let (_, entry, _) = try startHost(faultyEntry: try fixtureEntry(library: "libnoentry.so"))
        XCTAssertEqual(failure(entry), .missingEntrySymbol(path: folder + "/fixture/libnoentry.so"))
        XCTAssertTrue(failure(entry)!.description.contains("does not export the entry symbol 'hubhost_library_entry'"))
    }

    func testABIMajorMismatchNamesFileAndBothVersions() throws {
        _ = try TestSupport.compileFixture(defines: ["FAULT_ABI_MAJOR=2"], into: folder + "/fixture", name: "libabi2.so")
        let (_, entry, _) = try startHost(faultyEntry: try fixtureEntry(library: "libabi2.so"))
        let path = folder + "/fixture/libabi2.so"
        XCTAssertEqual(failure(entry), .abiMismatch(path: path, plugin: ABIVersion(major: 2, minor: 0, patch: 0), host: .host))
        XCTAssertEqual(
            failure(entry)!.description,
            "\(path) was built for plugin ABI 2.0.0, but this hubhost speaks ABI \(ABIVersion.host); rebuild the plugin against the ABI 1.x headers")
    }

    func testCreateFailingDisablesOnlyThatInstanceWithThePluginsMessage() throws {
        _ = try TestSupport.compileFixture(defines: ["FAULT_CREATE_FAILS"], into: folder + "/fixture", name: "libfails.so")
        let (_, entry, _) = try startHost(faultyEntry: try fixtureEntry(library: "libfails.so"))
        XCTAssertEqual(
            failure(entry),
            .createFailed(
                instance: "faulty", plugin: "fault-fixture", status: 2,
                message: "the fixture was built to fail in create"))
        XCTAssertEqual(
            failure(entry)!.description,
            "instance 'faulty' disabled: fault-fixture create failed (HH_ERR_CONFIG): the fixture was built to fail in create")
    }

    func testDuplicateInstanceIDIsDisabledWithItsMessage() throws {
        try TestSupport.write(
            """
            plugins:
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config: {location_id: first}
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config: {location_id: second}
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        XCTAssertEqual(host.registry.entries.map(\.state.name), ["loaded", "failed"])
        guard case .failed(.manifestProblems(let problems)) = host.registry.entries[1].state else { return XCTFail() }
        XCTAssertEqual(problems.map(\.line), [5])
        XCTAssertTrue(problems[0].message.contains("duplicate instance id 'geo' (first used on line 2)"))
        XCTAssertEqual(host.location()?.location.locationID, "first")
    }

    func testSHA256PinIsCheckedBeforeDlopen() throws {
        let library = try TestSupport.compileFixture(into: folder + "/fixture", name: "libpinned.so")
        let wrong = String(repeating: "ab", count: 32)
        let (_, entry, _) = try startHost(faultyEntry: try fixtureEntry(library: "libpinned.so", sha256: wrong))
        let actual = try XCTUnwrap(SHA256.hex(ofFile: library))
        XCTAssertEqual(failure(entry), .sha256Mismatch(path: library, expected: wrong, actual: actual))
        // The binary was never loaded: the pin is checked first.
        XCTAssertNil(entry.binaryABI)
    }

    func testMatchingSHA256PinLoads() throws {
        let library = try TestSupport.compileFixture(into: folder + "/fixture", name: "libpinned-ok.so")
        let pin = try XCTUnwrap(SHA256.hex(ofFile: library))
        let (_, entry, _) = try startHost(faultyEntry: try fixtureEntry(library: "libpinned-ok.so", sha256: pin.uppercased()))
        XCTAssertEqual(entry.state, .loaded)
    }

    func testSHA256MatchesTheSystemTool() throws {
        try TestSupport.write("abc", to: folder + "/abc.txt")
        XCTAssertEqual(SHA256.hex(ofFile: folder + "/abc.txt"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testBinaryThatDisagreesWithItsManifest() throws {
        _ = try TestSupport.compileFixture(defines: ["FAULT_PLUGIN_ID=\"renamed\""], into: folder + "/fixture", name: "librenamed.so")
        let (_, entry, _) = try startHost(faultyEntry: try fixtureEntry(library: "librenamed.so"))
        guard case .manifestMismatch(_, let reason)? = failure(entry) else { return XCTFail("\(entry.state)") }
        XCTAssertTrue(reason.contains("plugin.yaml exports 'fault-fixture', the binary does not"), reason)
        XCTAssertTrue(reason.contains("the binary exports 'renamed'"), reason)
    }

    func testUnknownManifestKeyDisablesOnlyItsInstance() throws {
        let (_, entry, _) = try startHost(
            faultyEntry: """
                  - id: faulty
                    use: \(TestSupport.plugin("FixedLocation"))
                    confg: {location_id: x}
                """)
        guard case .manifestProblems(let problems)? = failure(entry) else { return XCTFail("\(entry.state)") }
        XCTAssertEqual(problems.count, 1)
        XCTAssertEqual(problems[0].line, 9)
        XCTAssertEqual(problems[0].column, 5)
        XCTAssertTrue(problems[0].message.contains("unknown key 'confg' (did you mean 'config'?)"), problems[0].message)
    }

    func testConfigValueOfTheWrongType() throws {
        let (_, entry, _) = try startHost(
            faultyEntry: """
                  - id: faulty
                    use: \(TestSupport.plugin("StaticAdvertiserID"))
                    config: {limit_ad_tracking: maybe}
                """)
        guard case .manifestProblems(let problems)? = failure(entry) else { return XCTFail("\(entry.state)") }
        XCTAssertEqual(problems.map(\.key), ["plugins[1].config.limit_ad_tracking"])
        XCTAssertEqual(problems[0].message, "expected true or false, found the string \"maybe\"")
    }

    func testDisabledInstanceIsNotLoaded() throws {
        let (host, entry, _) = try startHost(
            faultyEntry: """
                  - id: faulty
                    use: \(TestSupport.plugin("ConsoleLogger"))
                    enabled: false
                """)
        XCTAssertEqual(entry.state, .disabled)
        XCTAssertTrue(host.registry.plugins(of: .logging).isEmpty)
    }
}
