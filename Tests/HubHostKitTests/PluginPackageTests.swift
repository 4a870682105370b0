import Foundation
import XCTest

@testable import HubHostKit

/// Plugin packages (.hhp): `pack` of a real C plugin read back by `open`, by GNU tar and by
/// sha256sum; then hostile archives made here, each refused naming the entry and why, with nothing
/// extracted.
final class PluginPackageTests: FolderTestCase {
    /// The faulty_plugins.c fixture, well-behaved, compiled into `<folder>/GOOD` with its plugin.yaml
    /// and a README.md; returns the plugin folder.
    private func pluginFolder() throws -> String {
        let manifest = try TestSupport.faultyFixture(nil, in: folder + "/src")
        let dir = (manifest as NSString).deletingLastPathComponent
        try TestSupport.write("# Faulty\n\nA test plugin.\n", to: dir + "/README.md")
        return dir
    }

    /// A package packed from `pluginFolder()`; returns its path.
    private func goodPackage() throws -> String {
        let output = folder + "/faulty-1.0.0.hhp"
        _ = try PluginPackage.pack(folder: try pluginFolder(), output: output)
        return output
    }

    private var hostLibrary: String { "\(PackagePlatform.host!.folder)/libfaulty.so" }

    private func entries(_ path: String) throws -> [USTarArchive.Entry] {
        try USTarArchive.read(Array(try Data(contentsOf: URL(fileURLWithPath: path))), maxEntryBytes: 1 << 30, maxEntries: 100)
    }

    /// `entries` with SHA256SUMS (if `resum`) made again for them, as the last file.
    private func archive(_ entries: [USTarArchive.Entry], resum: Bool = false) -> [UInt8] {
        guard resum else { return USTarArchive.write(entries) }
        let files = entries.filter { $0.name != SHA256Sums.fileName }
        let sums = USTarArchive.Entry(name: SHA256Sums.fileName, bytes: Array(SHA256Sums.text(of: files.map { ($0.name, $0.bytes) }).utf8))
        return USTarArchive.write(files + [sums])
    }

    /// A header for `name` of type `type` ("0" regular, "1" hard link, "2" symlink) declaring `size`
    /// (octal text), with a correct checksum unless `damage`.
    private func header(_ name: String, type: Character = "0", link: String = "", size: String? = nil, damage: Bool = false) -> [UInt8] {
        var header = USTarArchive.header(for: .init(name: name, bytes: []))
        header[156] = type.asciiValue!
        header.replaceSubrange(157..<157 + link.utf8.count, with: Array(link.utf8))
        if let size { header.replaceSubrange(124..<136, with: Array(size.utf8) + Array(repeating: 0, count: 12 - size.utf8.count)) }
        header.replaceSubrange(148..<156, with: Array("        ".utf8))
        let sum = header.reduce(0) { $0 + Int($1) } + (damage ? 1 : 0)
        let digits = String(sum, radix: 8)
        header.replaceSubrange(148..<155, with: Array((String(repeating: "0", count: 6 - digits.count) + digits).utf8) + [0])
        return header
    }

    /// Opens `bytes` as a package and extracts it: asserts that it is refused with `entry` named and
    /// `reason` in the message, and that the destination folder was not created.
    private func assertRefused(
        _ bytes: [UInt8], entry: String?, _ reason: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let path = folder + "/hostile-\(UUID().uuidString).hhp"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let destination = folder + "/out-\(UUID().uuidString)"
        do {
            try PluginPackage.open(path: path).extract(to: destination)
            XCTFail("the package was accepted", file: file, line: line)
        } catch {
            XCTAssertEqual(error.entry, entry, "\(error)", file: file, line: line)
            XCTAssertTrue(error.reason.contains(reason), "\(error)", file: file, line: line)
            XCTAssertTrue(error.description.hasPrefix(path), "\(error)", file: file, line: line)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination), file: file, line: line)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix(".hhp-") }
        XCTAssertEqual(leftovers, [], file: file, line: line)
    }

    // MARK: Packing and reading back

    func testPackedCPluginOpensBackWithItsFilesAndHashesAndExtractsAtomically() throws {
        let source = try pluginFolder()
        let output = folder + "/faulty-1.0.0.hhp"
        let report = try PluginPackage.pack(folder: source, output: output)
        XCTAssertEqual(report.id, "faulty")
        XCTAssertEqual(report.platforms, [PackagePlatform.host!.rawValue])
        XCTAssertEqual(report.files.map(\.name), ["plugin.yaml", "README.md", hostLibrary, "SHA256SUMS"])

        let package = try PluginPackage.open(path: output)
        XCTAssertEqual(package.manifest.id, "faulty")
        XCTAssertEqual(package.hostLibrary, hostLibrary)
        XCTAssertEqual(package.files.map(\.name), report.files.map(\.name))
        let library = try XCTUnwrap(package.files.first { $0.name == hostLibrary })
        XCTAssertEqual(library.bytes, Array(try Data(contentsOf: URL(fileURLWithPath: source + "/libfaulty.so"))))
        XCTAssertEqual(library.sha256, SHA256.hex(ofFile: source + "/libfaulty.so"))
        XCTAssertEqual(package.files.first { $0.name == "plugin.yaml" }?.sha256, SHA256.hex(ofFile: source + "/plugin.yaml"))

        let destination = folder + "/installed"
        try package.extract(to: destination)
        XCTAssertEqual(SHA256.hex(ofFile: destination + "/" + hostLibrary), library.sha256)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: destination + "/" + hostLibrary)[.posixPermissions] as? Int, 0o755)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: destination + "/plugin.yaml")[.posixPermissions] as? Int, 0o644)
        // A second extraction into the same folder is refused and changes nothing.
        XCTAssertThrowsError(try package.extract(to: destination)) { error in
            XCTAssertTrue("\(error)".contains("already exists"), "\(error)")
        }
        // The same folder packs to the same bytes (mtime 0, fixed owner).
        _ = try PluginPackage.pack(folder: source, output: folder + "/again.hhp")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: output)), try Data(contentsOf: URL(fileURLWithPath: folder + "/again.hhp")))
    }

    func testGNUTarListsAndExtractsThePackageAndSha256sumChecksIt() throws {
        let output = try goodPackage()
        let listing = try TestSupport.run("/usr/bin/env", ["tar", "-tf", output])
        XCTAssertEqual(listing.status, 0, listing.stderr)
        XCTAssertEqual(listing.stdout.split(separator: "\n"), ["plugin.yaml", "README.md", Substring(hostLibrary), "SHA256SUMS"])
        XCTAssertEqual(listing.stderr, "")
        let unpacked = folder + "/gnu"
        try FileManager.default.createDirectory(atPath: unpacked, withIntermediateDirectories: true)
        let extract = try TestSupport.run("/usr/bin/env", ["tar", "-xf", output, "-C", unpacked])
        XCTAssertEqual(extract.status, 0, extract.stderr)
        let check = try TestSupport.run("/usr/bin/env", ["sha256sum", "-c", "--strict", "SHA256SUMS"], currentDirectory: unpacked)
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        XCTAssertTrue(check.stdout.contains("\(hostLibrary): OK"), check.stdout)
    }

    func testPackCommandWritesIdVersionHhpAndReportsJSON() throws {
        let source = try pluginFolder()
        let work = folder + "/cwd"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let result = try TestSupport.run(TestSupport.hubhostExecutable, ["plugins", "pack", source, "--json"], currentDirectory: work)
        XCTAssertEqual(result.status, 0, result.stderr)
        let report = try JSONDecoder().decode(PluginPackage.PackReport.self, from: Data(result.stdout.utf8))
        XCTAssertEqual(report.output, "faulty-1.0.0.hhp")
        XCTAssertEqual(report.files.last?.name, "SHA256SUMS")
        XCTAssertNoThrow(try PluginPackage.open(path: work + "/faulty-1.0.0.hhp"))

        let text = try TestSupport.run(TestSupport.hubhostExecutable, ["plugins", "pack", source, "-o", folder + "/x.hhp"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("packed faulty 1.0.0 into \(folder)/x.hhp"), text.stdout)
        XCTAssertTrue(text.stdout.contains(hostLibrary), text.stdout)

        let missing = try TestSupport.run(TestSupport.hubhostExecutable, ["plugins", "pack", folder + "/nothing-here"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("plugin.yaml"), missing.stderr)
    }

    // MARK: Refused at pack

    func testPackRefusesALibraryThatDisagreesWithPluginYAML() throws {
        let source = try pluginFolder()
        let yaml = try String(contentsOfFile: source + "/plugin.yaml", encoding: .utf8)
        try TestSupport.write(yaml.replacingOccurrences(of: "version: 1.0.0", with: "version: 2.0.0"), to: source + "/plugin.yaml")
        XCTAssertThrowsError(try PluginPackage.pack(folder: source, output: folder + "/x.hhp")) { error in
            let error = error as! PluginPackageError
            XCTAssertEqual(error.entry, hostLibrary)
            XCTAssertTrue(error.reason.contains("is version 1.0.0 in the binary but 2.0.0 in plugin.yaml"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/x.hhp"))
    }

    // MARK: Refused at open

    func testOneChangedByteIsRefusedByItsDigest() throws {
        var files = try entries(try goodPackage())
        let index = try XCTUnwrap(files.firstIndex { $0.name == hostLibrary })
        files[index].bytes[files[index].bytes.count / 2] ^= 0x01
        try assertRefused(archive(files), entry: hostLibrary, "SHA256SUMS says")
    }

    func testAFileNotListedInSHA256SUMSIsRefused() throws {
        var files = try entries(try goodPackage())
        let sums = files.removeLast()
        files += [.init(name: "extra.wasm", bytes: [0, 0x61, 0x73, 0x6d]), sums]
        try assertRefused(archive(files), entry: "extra.wasm", "not listed in SHA256SUMS")
    }

    func testDotDotAndAbsoluteNamesAreRefused() throws {
        let good = Array(try Data(contentsOf: URL(fileURLWithPath: try goodPackage())))
        let evil = USTarArchive.write([.init(name: "../evil.wasm", bytes: Array("x".utf8))]).dropLast(1024)
        try assertRefused(Array(evil) + good, entry: "../evil.wasm", "'..' component")
        try assertRefused(header("lib/../../evil") + good, entry: "lib/../../evil", "'..' component")
        try assertRefused(header("/etc/cron.d/evil") + good, entry: "/etc/cron.d/evil", "absolute path")
        try assertRefused(header("lib/x86_64-linux-gnu//libfaulty.so") + good, entry: "lib/x86_64-linux-gnu//libfaulty.so", "not normalized")
        try assertRefused(header("bin/run.sh") + good, entry: "bin/run.sh", "outside the package layout")
    }

    func testLinkEntriesAreRefused() throws {
        let good = Array(try Data(contentsOf: URL(fileURLWithPath: try goodPackage())))
        try assertRefused(header("README.md", type: "2", link: "/etc/passwd") + good, entry: "README.md", "symbolic link (to '/etc/passwd')")
        try assertRefused(header("README.md", type: "1", link: "plugin.yaml") + good, entry: "README.md", "hard link")
        try assertRefused(header("README.md", type: "3") + good, entry: "README.md", "device node")
    }

    func testTruncatedArchivesAreRefused() throws {
        let good = Array(try Data(contentsOf: URL(fileURLWithPath: try goodPackage())))
        let library = try XCTUnwrap(try entries(folder + "/faulty-1.0.0.hhp").first { $0.name == hostLibrary })
        // Cut inside the library's bytes, at a block boundary, and at a byte that is not one.
        let cut = (good.count - 2048 - library.bytes.count / 2) / 512 * 512
        try assertRefused(Array(good.prefix(cut)), entry: hostLibrary, "but only")
        try assertRefused(Array(good.prefix(cut + 100)), entry: nil, "not a whole number of 512-byte blocks")
        // Everything but the end-of-archive blocks.
        try assertRefused(Array(good.dropLast(1024)), entry: nil, "without the end-of-archive blocks")
    }

    func testABadHeaderChecksumIsRefused() throws {
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: try goodPackage())))
        bytes[140] = UInt8(ascii: "7")  // plugin.yaml's mtime, checksum not updated
        try assertRefused(bytes, entry: "plugin.yaml", "header checksum")
        let good = Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/faulty-1.0.0.hhp")))
        try assertRefused(header("README.md", damage: true) + good, entry: "README.md", "header checksum")
    }

    func testAHugeDeclaredSizeIsRefusedBeforeAnythingIsRead() throws {
        let good = Array(try Data(contentsOf: URL(fileURLWithPath: try goodPackage())))
        try assertRefused(header("plugin.yaml", size: "77777777777") + good, entry: "plugin.yaml", "declares 8589934591 bytes, more than")
        try assertRefused(header("plugin.yaml", size: "9999") + good, entry: "plugin.yaml", "not an octal number")
    }

    func testDuplicateEntriesAreRefused() throws {
        var files = try entries(try goodPackage())
        files.insert(files[0], at: 1)
        try assertRefused(archive(files, resum: true), entry: "plugin.yaml", "appears twice")
    }

    func testALibraryOnlyForAnotherPlatformIsRefused() throws {
        let source = try pluginFolder()
        let other = PackagePlatform.allCases.first { $0 != PackagePlatform.host }!
        var library = Array(try Data(contentsOf: URL(fileURLWithPath: source + "/libfaulty.so")))
        library[18] = UInt8(other.elfMachine & 0xff)
        library[19] = UInt8(other.elfMachine >> 8)
        try Data(library).write(to: URL(fileURLWithPath: source + "/libfaulty.so"))
        let output = folder + "/other.hhp"
        let report = try PluginPackage.pack(folder: source, output: output)
        XCTAssertEqual(report.platforms, [other.rawValue])
        XCTAssertEqual(report.notes.count, 1)
        try assertRefused(
            Array(try Data(contentsOf: URL(fileURLWithPath: output))), entry: hostLibrary,
            "no library for this machine (\(PackagePlatform.host!.rawValue)); it carries only \(other.rawValue)")

        // A library in the folder of the other platform that is this machine's is refused too.
        var files = try entries(try goodPackage())
        let index = try XCTUnwrap(files.firstIndex { $0.name == hostLibrary })
        files[index].name = "\(other.folder)/libfaulty.so"
        try assertRefused(archive(files, resum: true), entry: "\(other.folder)/libfaulty.so", "in the folder of another platform")
    }

    // MARK: requires:

    func testRequiresIsParsedCheckedAtPackOpenAndRegistryLoad() throws {
        let good = try goodPackage()
        let source = folder + "/src/GOOD"
        let yaml = try String(contentsOfFile: source + "/plugin.yaml", encoding: .utf8)
        let requiringLater = yaml + "\nrequires: { hubhost: \">=0.3 <0.4\" }\n"
        try TestSupport.write(requiringLater, to: source + "/plugin.yaml")
        let (manifest, diagnostics) = PluginManifest.load(path: source + "/plugin.yaml")
        XCTAssertEqual(diagnostics, [])
        XCTAssertEqual(manifest?.requiresHubhost?.text, ">=0.3 <0.4")

        // pack refuses it, naming both versions.
        XCTAssertThrowsError(try PluginPackage.pack(folder: source, output: folder + "/x.hhp")) { error in
            XCTAssertTrue("\(error)".contains("requires hubhost >=0.3 <0.4, but this is hubhost \(HubHostVersion.current)"), "\(error)")
        }
        // So does open, for a package made elsewhere.
        var files = try entries(good)
        files[0].bytes = Array(requiringLater.utf8)
        try assertRefused(
            archive(files, resum: true), entry: "plugin.yaml", "requires hubhost >=0.3 <0.4, but this is hubhost \(HubHostVersion.current)")

        // And plugins.yaml, for an instance of it: a manifest problem `manifest check` reports, and
        // the instance does not load.
        try TestSupport.write("data_dir: data\nplugins:\n  - id: late\n    use: \(source)/plugin.yaml\n", to: folder + "/plugins.yaml")
        let hostManifest = try HostManifest.load(path: folder + "/plugins.yaml")
        XCTAssertEqual(
            hostManifest.diagnostics.map(\.message),
            ["plugin 'faulty' requires hubhost >=0.3 <0.4; this is hubhost \(HubHostVersion.current)"])
        let registry = PluginRegistry(manifest: hostManifest, pipeline: LogPipeline())
        registry.loadAll()
        defer { registry.shutdown() }
        guard case .failed(let error) = try XCTUnwrap(registry.entries.first).state else { return XCTFail("it loaded") }
        XCTAssertTrue(error.description.contains("requires hubhost >=0.3 <0.4"), error.description)

        // A range this hubhost meets loads.
        try TestSupport.write(yaml + "\nrequires: { hubhost: \">=0.2 <0.3\" }\n", to: source + "/plugin.yaml")
        XCTAssertNoThrow(try PluginPackage.pack(folder: source, output: folder + "/ok.hhp"))
    }

    func testABadRangeIsAManifestDiagnostic() throws {
        let source = try pluginFolder()
        let yaml = try String(contentsOfFile: source + "/plugin.yaml", encoding: .utf8)
        for (range, reason) in [
            ("~0.2", "'~0.2' is not a comparison"), (">=0.3 <0.2", "no version satisfies"), ("", "it is empty"), (">=1.2.3.4", "not a comparison")
        ] {
            try TestSupport.write(yaml + "\nrequires: { hubhost: \"\(range)\" }\n", to: source + "/plugin.yaml")
            let (manifest, diagnostics) = PluginManifest.load(path: source + "/plugin.yaml")
            XCTAssertNil(manifest)
            XCTAssertEqual(diagnostics.map(\.key), ["requires.hubhost"], range)
            XCTAssertTrue(diagnostics.first?.message.contains(reason) ?? false, "\(diagnostics)")
        }
        try TestSupport.write(yaml + "\nrequires: { hubhostt: \">=0.1\" }\n", to: source + "/plugin.yaml")
        XCTAssertNil(PluginManifest.load(path: source + "/plugin.yaml").manifest)

        let range = try VersionRequirement(">=0.2 <0.3")
        XCTAssertTrue(range.contains("0.2.0"))
        XCTAssertTrue(range.contains("0.2.9-beta"))
        XCTAssertFalse(range.contains("0.3.0"))
        XCTAssertFalse(range.contains("0.1.0"))
        XCTAssertTrue(try VersionRequirement("0.1").contains("0.1.0"))
    }
}

/// An extracted package keeps its library in `lib/<triple>/`: the loader finds it there for this
/// machine, and only for this machine.
final class PackagedLibraryLocationTests: XCTestCase {
    func testALibraryInLibTripleBesideItsManifestIsFoundForThisMachine() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let platform = try XCTUnwrap(PackagePlatform.host)
        let other = try XCTUnwrap(PackagePlatform.allCases.first { $0 != platform })
        try FileManager.default.createDirectory(atPath: folder + "/p/" + platform.folder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/q/" + other.folder, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: folder + "/p/" + platform.folder + "/libx.so", contents: Data())
        _ = FileManager.default.createFile(atPath: folder + "/q/" + other.folder + "/libx.so", contents: Data())
        let locator = LibraryLocator(environment: [:], executableFolder: nil)
        XCTAssertEqual(try locator.locate(library: "libx.so", manifestFolder: folder + "/p").get(), folder + "/p/" + platform.folder + "/libx.so")
        XCTAssertThrowsError(try locator.locate(library: "libx.so", manifestFolder: folder + "/q").get())
    }
}
