import Foundation

extension PluginPackage {
    /// What `pack(folder:output:)` put in a package.
    package struct PackReport: Codable, Equatable, Sendable {
        package struct Entry: Codable, Equatable, Sendable {
            package var name: String
            package var bytes: Int
            package var sha256: String
        }

        package var output: String
        package var id: String
        package var version: String
        /// The platforms of its native libraries (empty for a `.wasm` plugin).
        package var platforms: [String]
        package var files: [Entry]
        /// What was not checked, e.g. a library for another platform that cannot be loaded here.
        package var notes: [String]
    }

    /// The default package name for `manifest`: `<id>-<version>.hhp`.
    package static func defaultFileName(for manifest: PluginManifest) -> String { "\(manifest.id)-\(manifest.version).hhp" }

    /// Builds a package of the plugin in `folder` into `output` (replaced if it exists; written to a
    /// temporary file beside it, then renamed): its plugin.yaml (valid, its `requires:` met by this
    /// hubhost), README.md if there is one, and the library `library:` names, found beside
    /// plugin.yaml (its platform taken from its ELF machine) and in `lib/<triple>/` of the folder.
    /// The library for this machine (or the `.wasm`) is opened and must agree with plugin.yaml (ids,
    /// kinds, versions, ABI), as `plugins inspect` checks; a library for another platform is checked
    /// as an ELF file of that platform only, which the report's notes say.
    package static func pack(folder: String, output: String) throws(PluginPackageError) -> PackReport {
        func refuse(_ entry: String?, _ reason: String) -> PluginPackageError { PluginPackageError(path: folder, entry: entry, reason: reason) }
        let manifestPath = (folder as NSString).appendingPathComponent("plugin.yaml")
        let (parsed, diagnostics) = PluginManifest.load(path: manifestPath)
        guard let manifest = parsed, diagnostics.isEmpty else {
            throw refuse("plugin.yaml", "it is not a valid plugin.yaml: " + diagnostics.map(\.description).joined(separator: "; "))
        }
        if let problem = manifest.hubhostRequirementProblem { throw refuse("plugin.yaml", problem) }
        guard isPlainFileName(manifest.library) else {
            throw refuse(
                "plugin.yaml", "its library '\(manifest.library)' is not a plain file name; to be packed, the library lies beside plugin.yaml")
        }
        let limits = Limits()
        func readFile(_ path: String, entry: String, maxBytes: Int) throws(PluginPackageError) -> [UInt8] {
            do {
                return try BoundedFile.read(path: path, maxBytes: maxBytes)
            } catch {
                throw refuse(entry, "\(path) cannot be read: \(error.reason)")
            }
        }
        var entries: [USTarArchive.Entry] = [
            .init(name: "plugin.yaml", bytes: try readFile(manifestPath, entry: "plugin.yaml", maxBytes: limits.maxTextBytes))
        ]
        let readme = (folder as NSString).appendingPathComponent("README.md")
        if FileManager.default.fileExists(atPath: readme) {
            entries.append(.init(name: "README.md", bytes: try readFile(readme, entry: "README.md", maxBytes: limits.maxTextBytes)))
        }
        var notes: [String] = []
        var platforms: [PackagePlatform] = []
        /// Opens the library at `path` (this machine's, or the .wasm) and compares it with plugin.yaml.
        func checkAgreement(_ path: String, entry: String) throws(PluginPackageError) {
            let disagreements: [String]
            do {
                disagreements = try PluginBinary.open(path: path).disagreements(with: manifest)
            } catch {
                throw refuse(entry, "\(error)")
            }
            guard disagreements.isEmpty else {
                throw refuse(entry, "the library does not match plugin.yaml: " + disagreements.joined(separator: "; "))
            }
        }
        if manifest.library.hasSuffix(".wasm") {
            let path = (folder as NSString).appendingPathComponent(manifest.library)
            let bytes = try readFile(path, entry: manifest.library, maxBytes: limits.maxLibraryBytes)
            try checkAgreement(path, entry: manifest.library)
            entries.append(.init(name: manifest.library, bytes: bytes, mode: 0o755))
        } else {
            // Beside plugin.yaml, then lib/<triple>/ for each platform.
            let candidates =
                [(folder as NSString).appendingPathComponent(manifest.library)]
                + PackagePlatform.allCases.map { (folder as NSString).appendingPathComponent("\($0.folder)/\(manifest.library)") }
            var libraries: [(platform: PackagePlatform, path: String, bytes: [UInt8])] = []
            for path in candidates where FileManager.default.fileExists(atPath: path) {
                let bytes = try readFile(path, entry: manifest.library, maxBytes: limits.maxLibraryBytes)
                let platform: PackagePlatform
                switch PackagePlatform.of(elf: bytes) {
                case .failure(let problem): throw refuse(manifest.library, "\(path): \(problem.reason)")
                case .success(let found): platform = found
                }
                let folderPlatform = PackagePlatform.allCases.first { path.hasSuffix("/\($0.folder)/\(manifest.library)") }
                if let folderPlatform, folderPlatform != platform {
                    throw refuse(manifest.library, "\(path) is a library for \(platform.rawValue), in the folder of \(folderPlatform.rawValue)")
                }
                if let twice = libraries.first(where: { $0.platform == platform }) {
                    throw refuse(manifest.library, "\(twice.path) and \(path) are both libraries for \(platform.rawValue); keep one")
                }
                libraries.append((platform, path, bytes))
            }
            guard !libraries.isEmpty else {
                throw refuse(
                    manifest.library,
                    "no library '\(manifest.library)' beside plugin.yaml or in lib/<triple>/ of \(folder); build it first")
            }
            for library in libraries.sorted(by: { $0.platform.rawValue < $1.platform.rawValue }) {
                let name = "\(library.platform.folder)/\(manifest.library)"
                if library.platform == PackagePlatform.host {
                    if let problem = ELFCheck.problem(library.bytes) { throw refuse(name, "\(library.path): \(problem)") }
                    try checkAgreement(library.path, entry: name)
                } else {
                    notes.append("\(name) was not loaded on this machine, so its exports were not compared with plugin.yaml")
                }
                platforms.append(library.platform)
                entries.append(.init(name: name, bytes: library.bytes, mode: 0o755))
            }
        }
        let sums = SHA256Sums.text(of: entries.map { ($0.name, $0.bytes) })
        entries.append(.init(name: SHA256Sums.fileName, bytes: Array(sums.utf8)))
        let archive = USTarArchive.write(entries)
        if let problem = writeReplacing(output, archive) {
            throw PluginPackageError(path: output, reason: "cannot be written: \(problem)")
        }
        return PackReport(
            output: output, id: manifest.id, version: manifest.version, platforms: platforms.map(\.rawValue),
            files: entries.map { .init(name: $0.name, bytes: $0.bytes.count, sha256: SHA256.hex(of: Data($0.bytes))) }, notes: notes)
    }

    /// Writes `bytes` to a temporary file beside `path`, then renames it over `path`; the problem, or nil.
    private static func writeReplacing(_ path: String, _ bytes: [UInt8]) -> String? {
        let parent = (path as NSString).deletingLastPathComponent
        let temporary = (parent.isEmpty ? "." : parent) + "/.\((path as NSString).lastPathComponent).\(getpid()).partial"
        unlink(temporary)
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes), attributes: [.posixPermissions: 0o644]) else {
            return "cannot create \(temporary)"
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return reason
        }
        return nil
    }
}
