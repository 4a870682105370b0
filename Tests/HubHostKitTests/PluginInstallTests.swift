import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost plugins add | upgrade | remove | verify` on real packages of a C plugin, signed with
/// Debian's minisign: installed, locked, loaded by id, verified at every load; hostile packages
/// refused with nothing changed; an upgrade whose create fails rolled back; two adds at once; and a
/// crowd posting events to a live serve while plugins are added, upgraded and removed.
final class PluginInstallTests: XCTestCase {
    private var folder = ""
    private var manifest: String { folder + "/plugins.yaml" }
    private var lockPath: String { folder + "/plugins.lock" }
    /// Runs hubhost on this test's plugins.yaml in its folder; for closures that must not capture the test case.
    private var cli: @Sendable ([String]) throws -> CommandResult {
        let (folder, manifest) = (self.folder, self.manifest)
        return { try TestSupport.hubhost($0, manifest: manifest, in: folder) }
    }

    override func setUpWithError() throws {
        try XCTSkipUnless(
            FileManager.default.isExecutableFile(atPath: MinisignTests.minisign), "minisign is not installed (scripts/debian-packages.txt)")
        folder = try TestSupport.temporaryFolder(self)
        try TestSupport.write(
            """
            # A host for installed plugins.
            data_dir: data
            logging: {severity: warning}
            server: {host: 127.0.0.1, port: 0}
            plugins: []
            """, to: manifest)
    }

    /// The faulty_plugins.c fixture built with `defines`, with a plugin.yaml of `id` and `version`,
    /// packed into `<folder>/<id>-<version>.hhp` (signed with `key` when given); returns the package.
    @discardableResult
    private func package(
        id: String = "faulty", version: String, defines: [String] = [], signWith key: String? = "me.key"
    ) throws -> String {
        let source = folder + "/src/\(id)-\(version)"
        _ = try TestSupport.compileFixture(
            "faulty_plugins.c", defines: defines + [#"FIXTURE_VERSION="\#(version)""#], into: source, name: "libfaulty.so")
        let exports = [("faulty-augmentation", "augmentation"), ("faulty-operator", "trigger_operator")]
        try TestSupport.write(
            TestSupport.pluginManifest(id: id, name: "Faulty", library: "libfaulty.so", version: version, exports: exports),
            to: source + "/plugin.yaml")
        let output = folder + "/\(id)-\(version).hhp"
        _ = try PluginPackage.pack(folder: source, output: output)
        if let key { try sign(output, with: key) }
        return output
    }

    private func sign(_ file: String, with key: String) throws {
        let signed = try TestSupport.run(MinisignTests.minisign, ["-S", "-s", folder + "/" + key, "-m", file], currentDirectory: folder)
        XCTAssertEqual(signed.status, 0, signed.stderr)
    }

    /// A minisign key pair `<name>.pub` / `<name>.key` in the test folder, trusted in plugins.yaml
    /// for `ids` unless `trust` is false.
    private func keyPair(_ name: String = "me", ids: String = "*", trust: Bool = true) throws {
        let made = try TestSupport.run(
            MinisignTests.minisign, ["-G", "-W", "-p", "\(name).pub", "-s", "\(name).key"], currentDirectory: folder)
        XCTAssertEqual(made.status, 0, made.stderr)
        guard trust else { return }
        let trusted = try TestSupport.hubhost(["plugins", "trust", "\(name).pub", "--name", name, "--ids", ids], manifest: manifest, in: folder)
        XCTAssertEqual(trusted.status, 0, trusted.description)
    }

    private func hubhost(_ arguments: [String]) throws -> CommandResult {
        try TestSupport.hubhost(arguments, manifest: manifest, in: folder)
    }

    /// Every file under the test folder except the packages and sources, with its content's hash:
    /// what a refused command must leave exactly as it was. (The empty file the commands lock,
    /// data/plugins/.lock, and its folders are made by the first command, refused or not.)
    private func snapshot() throws -> [String: String] {
        var files: [String: String] = [:]
        let walker = FileManager.default.enumerator(atPath: folder)!
        while let name = walker.nextObject() as? String {
            guard !name.hasPrefix("src"), !name.hasSuffix(".hhp"), !name.hasSuffix(".minisig"),
                !["data", "data/plugins", "data/plugins/.lock"].contains(name)
            else { continue }
            let path = folder + "/" + name
            var isFolder: ObjCBool = false
            FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
            files[name] = isFolder.boolValue ? "folder" : (LibraryFile.sha256(path: path) ?? "?")
        }
        return files
    }

    // MARK: add, verify, load

    func testAddSignedWithMinisignInstallsLocksAndLoadsByIdThenEveryLoadChecksTheLock() throws {
        try keyPair()
        let pkg = try package(version: "1.0.0")
        let added = try hubhost(["plugins", "add", pkg, "--set", "unused=1", "--json"])
        XCTAssertEqual(added.status, 1, "a config key the plugin does not declare is refused: \(added)")
        XCTAssertTrue(added.stderr.contains("unused"), added.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: lockPath), "nothing installed")

        let ok = try hubhost(["plugins", "add", pkg, "--json"])
        XCTAssertEqual(ok.status, 0, ok.description)
        let report = try TestSupport.json(ok.stdout, as: [String: Any].self)
        XCTAssertEqual(report["plugin"] as? String, "faulty")
        XCTAssertTrue((report["signer"] as? String ?? "").hasPrefix("me (key "), "\(report)")
        XCTAssertEqual((report["applied"] as? [String: Any])?["how"] as? String, "checked", "no serve: loaded here as a check")
        XCTAssertTrue(try String(contentsOfFile: manifest, encoding: .utf8).contains("include: plugins.d/*.yaml"))
        XCTAssertTrue(try String(contentsOfFile: manifest, encoding: .utf8).hasPrefix("# A host for installed plugins."), "the rest kept")

        let lock = try PluginLock.read(path: lockPath)
        let entry = try XCTUnwrap(lock.plugins["faulty"])
        XCTAssertEqual(entry.version, "1.0.0")
        XCTAssertEqual(entry.signer, "me")
        XCTAssertEqual(entry.packageSHA256, LibraryFile.sha256(path: pkg))
        let installed = folder + "/data/plugins/faulty/1.0.0"
        XCTAssertEqual(LibraryFile.sha256(path: installed + "/" + entry.library), entry.files[entry.library])

        // Loaded by id from the lock, pinned to the locked library.
        let host = try HostManifest.load(path: manifest)
        XCTAssertEqual(host.diagnostics, [])
        let instance = try XCTUnwrap(host.instances.first { $0.id == "faulty" })
        XCTAssertEqual(instance.file, folder + "/plugins.d/faulty.yaml")
        XCTAssertEqual(instance.installed?.lock, entry)
        XCTAssertEqual(instance.sha256, entry.files[entry.library])
        let listed = try hubhost(["plugins", "list", "--local", "--json"])
        XCTAssertEqual(listed.status, 0, listed.description)
        let row = try XCTUnwrap(try TestSupport.json(listed.stdout, as: [[String: Any]].self).first { $0["id"] as? String == "faulty" })
        let shown = try XCTUnwrap(row["package"] as? [String: Any], "\(row)")
        XCTAssertEqual(shown["version"] as? String, "1.0.0")
        XCTAssertEqual(shown["verification"] as? String, "verified")
        XCTAssertEqual(shown["allowUnsigned"] as? Bool, false)

        let verified = try hubhost(["plugins", "verify", "--json"])
        XCTAssertEqual(verified.status, 0, verified.description)
        XCTAssertEqual(try TestSupport.json(verified.stdout, as: [[String: Any]].self).first?["state"] as? String, "verified")

        // The library changed on disk: the next load refuses it, naming it; verify names it too.
        let library = installed + "/" + entry.library
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: library)))
        bytes[bytes.count - 1] ^= 0xff
        try Data(bytes).write(to: URL(fileURLWithPath: library))
        let registry = PluginRegistry(manifest: try HostManifest.load(path: manifest), pipeline: LogPipeline())
        registry.loadAll()
        defer { registry.shutdown() }
        guard case .failed(.sha256Mismatch(let path, _, _)) = registry.entry(id: "faulty")?.state else {
            return XCTFail("a changed library is refused: \(String(describing: registry.entry(id: "faulty")?.state))")
        }
        XCTAssertEqual(path, library)
        let failed = try hubhost(["plugins", "verify"])
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains("\(library): modified"), failed.stderr)

        // A changed plugin.yaml is refused as it is read.
        try Data(bytes.map { $0 }).write(to: URL(fileURLWithPath: library))
        try TestSupport.write(
            try String(contentsOfFile: installed + "/plugin.yaml", encoding: .utf8) + "\n# edited\n", to: installed + "/plugin.yaml")
        let edited = try HostManifest.load(path: manifest)
        XCTAssertTrue(edited.diagnostics.contains { $0.message.contains("changed since it was installed") }, "\(edited.diagnostics)")
    }

    func testTrustIsCheckedAgainAtLoadAndUnsignedNeedsAllowUnsigned() throws {
        try keyPair()
        let unsigned = try package(id: "plain", version: "1.0.0", signWith: nil)
        let refused = try hubhost(["plugins", "add", unsigned])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("is not signed"), refused.stderr)
        let allowed = try hubhost(["plugins", "add", unsigned, "--allow-unsigned"])
        XCTAssertEqual(allowed.status, 0, allowed.description)
        XCTAssertTrue(try String(contentsOfFile: folder + "/plugins.d/plain.yaml", encoding: .utf8).contains("allow_unsigned: true"))
        let listed = try hubhost(["plugins", "list", "--local"])
        XCTAssertTrue(listed.stdout.contains("unsigned (allow_unsigned)"), listed.stdout)

        // Signed, then its key no longer trusted: every load refuses the instance, naming the signer.
        let signed = try package(version: "1.0.0")
        XCTAssertEqual(try hubhost(["plugins", "add", signed]).status, 0)
        func shownFaulty() throws -> (state: String?, verification: String?) {
            let list = try hubhost(["plugins", "list", "--local", "--json"])
            let row = try TestSupport.json(list.stdout, as: [[String: Any]].self).first { $0["id"] as? String == "faulty" }
            return (row?["state"] as? String, (row?["package"] as? [String: Any])?["verification"] as? String)
        }
        // A config the plugin refuses fails the instance, but its package is still verified.
        let instanceFile = folder + "/plugins.d/faulty.yaml"
        let written = try String(contentsOfFile: instanceFile, encoding: .utf8)
        try TestSupport.write(written + "    config: {nonsense: 1}\n", to: instanceFile)
        XCTAssertEqual(try shownFaulty().state, "failed")
        XCTAssertEqual(try shownFaulty().verification, "verified", "a config problem is not the package's")
        try TestSupport.write(written, to: instanceFile)
        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        text = text.replacingOccurrences(of: "ids: \"*\"", with: "ids: \"acme-*\"")
        try TestSupport.write(text, to: manifest)
        let host = try HostManifest.load(path: manifest)
        let problems = try XCTUnwrap(host.instances.first { $0.id == "faulty" }).problems.map(\.message)
        XCTAssertTrue(problems.contains { $0.contains("signed by 'me'") && $0.contains("no longer trusts") }, "\(problems)")
        XCTAssertEqual(try shownFaulty().verification, "failed", "its signer is no longer trusted")
    }

    // MARK: Hostile packages

    func testHostilePackagesAreRefusedWithAReasonAndNothingChanges() throws {
        try keyPair()
        try keyPair("stranger", trust: false)
        try keyPair("narrow", ids: "acme-*")
        let good = try package(version: "1.0.0")
        let goodBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: good)))
        let before = try snapshot()

        func assertRefused(_ name: String, _ bytes: [UInt8], signWith key: String?, _ reason: String, line: UInt = #line) throws {
            let path = folder + "/\(name).hhp"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            if let key { try sign(path, with: key) }
            let result = try hubhost(["plugins", "add", path])
            XCTAssertEqual(result.status, 1, "\(name): \(result)", line: line)
            XCTAssertTrue(result.stderr.contains(reason), "\(name): \(result.stderr)", line: line)
            XCTAssertEqual(try snapshot(), before, "\(name): nothing installed or changed", line: line)
        }
        let entries = try USTarArchive.read(goodBytes, maxEntryBytes: 1 << 30, maxEntries: 100)
        // One byte changed after signing: the signature no longer verifies.
        var changed = goodBytes
        changed[600] ^= 1
        let changedPath = folder + "/changed.hhp"
        try Data(changed).write(to: URL(fileURLWithPath: changedPath))
        try FileManager.default.copyItem(atPath: good + ".minisig", toPath: changedPath + ".minisig")
        let result = try hubhost(["plugins", "add", changedPath])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("does not verify"), result.stderr)
        XCTAssertEqual(try snapshot(), before)
        // Signed after the change, by a trusted key: the package's own digests refuse it.
        try assertRefused("digest", changed, signWith: "me.key", "SHA256SUMS")
        // A file added (SHA256SUMS not listing it), then a path leaving the folder, a symlink.
        try assertRefused(
            "added", USTarArchive.write(entries.dropLast() + [.init(name: "README.md", bytes: Array("hi".utf8))] + [entries.last!]),
            signWith: "me.key", "not listed in SHA256SUMS")
        try assertRefused(
            "dotdot", USTarArchive.write([.init(name: "../evil.yaml", bytes: [1])] + entries), signWith: "me.key", "'..'")
        try assertRefused("absolute", USTarArchive.write([.init(name: "/tmp/evil", bytes: [1])] + entries), signWith: "me.key", "absolute")
        var link = USTarArchive.header(for: .init(name: "README.md", bytes: []))
        link[156] = UInt8(ascii: "2")  // a symbolic link; the checksum made again for it
        link.replaceSubrange(148..<156, with: Array("        ".utf8))
        let digits = String(link.reduce(0) { $0 + Int($1) }, radix: 8)
        link.replaceSubrange(148..<155, with: Array((String(repeating: "0", count: 6 - digits.count) + digits).utf8) + [0])
        try assertRefused("symlink", link + goodBytes, signWith: "me.key", "symbolic link")
        try assertRefused("truncated", Array(goodBytes.prefix(goodBytes.count - 1024)), signWith: "me.key", "cut short")
        // Signatures: by a key not trusted; by a key trusted for other ids; none at all.
        try assertRefused("stranger", goodBytes, signWith: "stranger.key", "which trust: does not hold")
        try assertRefused("narrow", goodBytes, signWith: "narrow.key", "trusted only for plugin ids matching 'acme-*'")
        try assertRefused("unsigned", goodBytes, signWith: nil, "is not signed")
        // A requires: this hubhost does not meet; a library for another machine only.
        // (pack refuses such a plugin.yaml, so it is put in by hand, SHA256SUMS made again.)
        let future = entries.dropLast().map { entry in
            entry.name == "plugin.yaml"
                ? USTarArchive.Entry(name: entry.name, bytes: entry.bytes + Array("\nrequires: {hubhost: \">=99\"}\n".utf8)) : entry
        }
        let sums = USTarArchive.Entry(name: SHA256Sums.fileName, bytes: Array(SHA256Sums.text(of: future.map { ($0.name, $0.bytes) }).utf8))
        try assertRefused("future", USTarArchive.write(future + [sums]), signWith: "me.key", "requires hubhost >=99")
        let foreign = entries.map { entry in
            USTarArchive.Entry(
                name: entry.name.replacingOccurrences(of: PackagePlatform.host!.folder, with: "lib/other"), bytes: entry.bytes)
        }
        try assertRefused("foreign", USTarArchive.write(foreign), signWith: "me.key", "lib/other")
        XCTAssertEqual(try snapshot(), before)
    }

    // MARK: upgrade and remove

    func testUpgradeWhoseCreateFailsRollsBackThenAGoodOneReplacesTheOldAndRemoveCleansUp() throws {
        try keyPair()
        XCTAssertEqual(try hubhost(["plugins", "add", try package(version: "1.0.0")]).status, 0)
        let lockBefore = try Data(contentsOf: URL(fileURLWithPath: lockPath))
        let bad = try hubhost(["plugins", "upgrade", try package(version: "1.1.0", defines: ["FAULT_CREATE_FAILS"])])
        XCTAssertEqual(bad.status, 1, bad.description)
        XCTAssertTrue(bad.stderr.contains("rolled back: faulty 1.0.0 stays installed"), bad.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: lockPath)), lockBefore, "the lock names the old version again")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/data/plugins/faulty/1.1.0"), "the new files are gone")
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/data/plugins/faulty/1.0.0"))

        let good = try hubhost(["plugins", "upgrade", try package(version: "1.2.0", defines: [#"FIXTURE_VALUE="v2""#]), "--json"])
        XCTAssertEqual(good.status, 0, good.description)
        XCTAssertEqual(try PluginLock.read(path: lockPath).plugins["faulty"]?.version, "1.2.0")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/data/plugins/faulty/1.0.0"), "the old version's files removed")
        XCTAssertEqual(try hubhost(["plugins", "verify"]).status, 0)

        let inPlugins = try hubhost(["plugins", "remove", "nothing-here"])
        XCTAssertEqual(inPlugins.status, 1)
        let removed = try hubhost(["plugins", "remove", "faulty"])
        XCTAssertEqual(removed.status, 0, removed.description)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/plugins.d/faulty.yaml"))
        XCTAssertEqual(try PluginLock.read(path: lockPath).plugins, [:])
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/data/plugins/faulty"))
        XCTAssertEqual(try HostManifest.load(path: manifest).instances.map(\.id), [])
    }

    func testTwoAddsAtOnceOnOneDataDirectoryBothInstallOrOneIsRefused() throws {
        try keyPair()
        let a = try package(id: "alpha", version: "1.0.0")
        let b = try package(id: "beta", version: "1.0.0")
        let folder = self.folder
        let manifest = self.manifest
        let results = try TestSupport.concurrently(4) { index in
            try TestSupport.hubhost(["plugins", "add", index % 2 == 0 ? a : b], manifest: manifest, in: folder)
        }
        // Each package twice at once: one of each pair installs, the other is refused (the instance exists).
        XCTAssertEqual(results.filter { $0.status == 0 }.count, 2, results.map(\.description).joined(separator: "\n"))
        for result in results where result.status != 0 {
            XCTAssertTrue(result.stderr.contains("already an instance"), result.stderr)
        }
        let host = try HostManifest.load(path: manifest)
        XCTAssertEqual(host.diagnostics, [])
        XCTAssertEqual(host.instances.map(\.id).sorted(), ["alpha", "beta"])
        XCTAssertEqual(host.pluginLock.plugins.keys.sorted(), ["alpha", "beta"])
        XCTAssertEqual(try hubhost(["plugins", "verify"]).status, 0)
    }

    // MARK: A live serve

    /// 8 clients post events to a live serve while a plugin is added, upgraded to a version whose
    /// create fails (rolled back), upgraded to a good one, verified and removed: no request fails,
    /// every acknowledged event is stored once, and the serve shows each version as it runs.
    func testACrowdPostingWhilePluginsAreAddedUpgradedAndRemovedLosesNothing() async throws {
        try keyPair()
        let v1 = try package(version: "1.0.0", defines: [#"FIXTURE_VALUE="v1""#])
        let broken = try package(version: "1.1.0", defines: ["FAULT_CREATE_FAILS"])
        let v2 = try package(version: "1.2.0", defines: [#"FIXTURE_VALUE="v2""#])
        // For the closure below, which runs on a Dispatch thread and does not capture the test case.
        let (folder, lockPath, hubhost) = (self.folder, self.lockPath, cli)
        try await InProcessAPI.listening(manifestPath: manifest) { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                let crowd = EventCrowd(serve: serve, perClient: 600)
                func served() throws -> [String: Any]? {
                    let (_, list) = try serve.call("GET", "/v1/plugins")
                    return ((list as? [String: Any])?["instances"] as? [[String: Any]])?.first { $0["id"] as? String == "faulty" }
                }
                let url = ["--url", serve.base]
                let added = try hubhost(["plugins", "add", v1, "--json"] + url)
                XCTAssertEqual(added.status, 0, added.description)
                XCTAssertEqual(
                    (try TestSupport.json(added.stdout, as: [String: Any].self)["applied"] as? [String: Any])?["how"] as? String, "reloaded")
                XCTAssertEqual((try served()?["package"] as? [String: Any])?["version"] as? String, "1.0.0")
                // /metrics names the package, and stays clean Prometheus text with it.
                let metrics = String(decoding: try serve.http.fetch("GET", serve.base + "/metrics", timeoutSeconds: 10).get().body, as: UTF8.self)
                let info = metrics.split(separator: "\n").filter { $0.hasPrefix("hubhost_plugin_package_info{") }
                XCTAssertEqual(info.count, 1, metrics)
                XCTAssertTrue(
                    info.first.map {
                        $0.contains(#"version="1.0.0""#) && $0.contains(#"verification="verified""#) && $0.contains(#"signer="me (key "#)
                    }
                        ?? false, "\(info)")
                try Data(metrics.utf8).write(to: URL(fileURLWithPath: folder + "/metrics.txt"))
                let promtool = try TestSupport.run("/bin/sh", ["-c", "promtool check metrics < metrics.txt"], currentDirectory: folder)
                XCTAssertEqual(promtool.status, 0, promtool.description)
                usleep(300_000)
                let bad = try hubhost(["plugins", "upgrade", broken] + url)
                XCTAssertEqual(bad.status, 1, bad.description)
                XCTAssertTrue(bad.stderr.contains("refused the reload") && bad.stderr.contains("rolled back"), bad.stderr)
                XCTAssertEqual((try served()?["package"] as? [String: Any])?["version"] as? String, "1.0.0", "the old version kept serving")
                XCTAssertEqual(try PluginLock.read(path: lockPath).plugins["faulty"]?.version, "1.0.0")
                usleep(300_000)
                let good = try hubhost(["plugins", "upgrade", v2] + url)
                XCTAssertEqual(good.status, 0, good.description)
                XCTAssertEqual((try served()?["package"] as? [String: Any])?["version"] as? String, "1.2.0")
                XCTAssertEqual(try hubhost(["plugins", "verify"]).status, 0)
                usleep(300_000)
                let removed = try hubhost(["plugins", "remove", "faulty"] + url)
                XCTAssertEqual(removed.status, 0, removed.description)
                XCTAssertNil(try served(), "retired")
                XCTAssertTrue(crowd.finish(), "the clients stopped")

                let (ids, failures) = (crowd.ids, crowd.failures)
                XCTAssertEqual(failures, [], "no request failed")
                XCTAssertGreaterThan(ids.count, 50)
                XCTAssertEqual(Set(ids).count, ids.count)
                let listed = try hubhost(["events", "list", "--limit", "100000", "--json"])
                let events = try TestSupport.json(listed.stdout, as: [[String: Any]].self)
                let stored = Dictionary(grouping: events, by: { $0["id"] as? String ?? "" })
                var versions = Set<String>()
                for id in ids {
                    XCTAssertEqual(stored[id]?.count, 1, "\(id) stored once")
                    if let value = (stored[id]?.first?["attributes"] as? [String: Any])?["Fixture"] as? String { versions.insert(value) }
                }
                XCTAssertTrue(versions.isSubset(of: ["v1", "v2"]), "only the good versions augmented events: \(versions)")
            }
        }
    }

    /// An upgrade whose reload answer is lost after serve applied it (a proxy forwards the POST and
    /// closes the connection instead of answering): the command asks GET /v1/plugins, sees the new
    /// version running and keeps it, rather than rolling the files back under a serve that runs it.
    func testAReloadAnswerLostAfterServeAppliedItKeepsTheUpgrade() async throws {
        try keyPair()
        let v1 = try package(version: "1.0.0", defines: [#"FIXTURE_VALUE="v1""#])
        let v2 = try package(version: "1.2.0", defines: [#"FIXTURE_VALUE="v2""#])
        // For the closure below, which runs on a Dispatch thread and does not capture the test case.
        let (folder, lockPath, hubhost) = (self.folder, self.lockPath, cli)
        try await InProcessAPI.listening(manifestPath: manifest) { port, _ in
            try await TestSupport.offPool {
                let serve = ListeningAPI(port: port)
                XCTAssertEqual(try hubhost(["plugins", "add", v1, "--url", serve.base]).status, 0)
                let proxy = try AnswerDroppingProxy(upstream: serve.base, folder: folder)
                defer { proxy.stop() }

                let upgraded = try hubhost(["plugins", "upgrade", v2, "--url", proxy.base, "--json"])
                XCTAssertEqual(upgraded.status, 0, upgraded.description)
                let applied = try TestSupport.json(upgraded.stdout, as: [String: Any].self)["applied"] as? [String: Any]
                XCTAssertEqual(applied?["how"] as? String, "reloaded")
                XCTAssertTrue((applied?["detail"] as? String ?? "").contains("answer was lost"), "\(applied ?? [:])")
                XCTAssertEqual(try PluginLock.read(path: lockPath).plugins["faulty"]?.version, "1.2.0", "the lock names what serve runs")
                let (_, list) = try serve.call("GET", "/v1/plugins")
                let running = ((list as? [String: Any])?["instances"] as? [[String: Any]])?.first { $0["id"] as? String == "faulty" }
                XCTAssertEqual((running?["package"] as? [String: Any])?["version"] as? String, "1.2.0")
                XCTAssertEqual(try hubhost(["plugins", "verify"]).status, 0, "the files on disk are the new version's")
                XCTAssertGreaterThanOrEqual(proxy.droppedAnswers, 1, "the proxy swallowed the reload's answer")
            }
        }
    }

    // MARK: include:

    func testIncludedFilesAddInstancesInNameOrderAndTheirProblemsNameTheirFile() throws {
        try TestSupport.write(
            "include: [\"conf/*.yaml\", \"more.yaml\"]\nplugins:\n  - {id: first, use: \(TestSupport.plugin("ExtraOperators"))}\n", to: manifest)
        try TestSupport.write("plugins:\n  - {id: b, use: \(TestSupport.plugin("ExtraOperators"))}\n", to: folder + "/conf/2.yaml")
        try TestSupport.write("plugins:\n  - {id: a, use: \(TestSupport.plugin("ExtraOperators"))}\n", to: folder + "/conf/1.yaml")
        try TestSupport.write("plugins:\n  - {id: first, use: extra-operators}\nsurprise: 1\n", to: folder + "/more.yaml")
        let host = try HostManifest.load(path: manifest)
        XCTAssertEqual(host.instances.map(\.id), ["first", "a", "b", "first"])
        XCTAssertEqual(host.instances[1].file, folder + "/conf/1.yaml")
        let messages = host.diagnostics.map(\.description)
        XCTAssertTrue(
            messages.contains { $0.hasPrefix(folder + "/more.yaml:2:") && $0.contains("duplicate instance id 'first' (first used on line 3)") },
            "\(messages)")
        XCTAssertTrue(messages.contains { $0.hasPrefix(folder + "/more.yaml:3:") && $0.contains("surprise") }, "\(messages)")
    }
}

/// An HTTP proxy on 127.0.0.1 (a Python child process) that passes every request to `upstream`,
/// but closes the connection without answering after forwarding POST /v1/admin/reload: an answer
/// lost after the other side acted on it.
final class AnswerDroppingProxy {
    private let process = Process()
    private let portFile: String
    private let droppedFile: String
    let base: String

    init(upstream: String, folder: String) throws {
        portFile = folder + "/proxy.port"
        droppedFile = folder + "/proxy.dropped"
        let script = folder + "/proxy.py"
        try TestSupport.write(
            #"""
            import http.client, http.server, sys, urllib.parse
            upstream = urllib.parse.urlsplit(sys.argv[1])
            class Proxy(http.server.BaseHTTPRequestHandler):
                def forward(self):
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=120)
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                    connection.request(self.command, self.path, body=body, headers=headers)
                    answer = connection.getresponse()
                    data = answer.read()
                    if self.command == "POST" and self.path == "/v1/admin/reload":
                        with open(sys.argv[3], "a") as dropped: dropped.write("1\n")
                        self.close_connection = True
                        return
                    self.send_response(answer.status)
                    for k, v in answer.getheaders():
                        if k.lower() not in ("transfer-encoding", "connection", "content-length"): self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                do_GET = forward
                do_POST = forward
                def log_message(self, *args): pass
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
            with open(sys.argv[2] + ".tmp", "w") as port: port.write(str(server.server_address[1]))
            import os; os.rename(sys.argv[2] + ".tmp", sys.argv[2])
            server.serve_forever()
            """#, to: script)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, upstream, portFile, droppedFile]
        try process.run()
        var port = ""
        let portFile = self.portFile
        _ = TestSupport.waitUntil(timeout: 10) {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            return !port.isEmpty
        }
        guard !port.isEmpty else {
            process.terminate()
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "the proxy did not start"])
        }
        base = "http://127.0.0.1:\(port)"
    }

    /// Reload answers the proxy swallowed.
    var droppedAnswers: Int { ((try? String(contentsOfFile: droppedFile, encoding: .utf8)) ?? "").split(separator: "\n").count }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
