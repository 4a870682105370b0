import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plugin package (`.hhp`): one file that carries a plugin from where it was built to where it
/// runs. A POSIX ustar archive of regular files only, in this layout (docs/plugin-packages.md):
///
///     plugin.yaml
///     README.md                      optional
///     <library>.wasm                 a WebAssembly plugin, or the native libraries:
///     lib/x86_64-linux-gnu/<library>
///     lib/aarch64-linux-gnu/<library>
///     SHA256SUMS                     last: sha256sum's format, every other file, sorted
///
/// `open(path:)` reads one whole into memory and verifies all of it before anything is used;
/// `extract(to:)` then writes it into a new folder, atomically. `pack(folder:output:)` builds one.
package struct PluginPackage: Sendable {
    /// One file of the package.
    package struct File: Equatable, Sendable {
        package var name: String
        package var bytes: [UInt8]
        /// Lowercase hex, as SHA256SUMS lists it (and verified against it).
        package var sha256: String
    }

    /// How large a package may be: the whole file, each library, each text file, the entry count.
    package struct Limits: Sendable {
        package var maxPackageBytes = 1 << 30
        package var maxLibraryBytes = LibraryFile.maxBytes
        /// plugin.yaml, README.md and SHA256SUMS.
        package var maxTextBytes = YAMLLimits.maxBytes
        package var maxEntries = 16

        package init() {}
    }

    /// The package file it was read from.
    package var path: String
    /// Its plugin.yaml, parsed and valid; `file` is "<package>:plugin.yaml".
    package var manifest: PluginManifest
    /// Every file, in the archive's order (SHA256SUMS last).
    package var files: [File]

    /// The platforms it carries a native library for (none for a `.wasm` plugin).
    package var platforms: [PackagePlatform] {
        PackagePlatform.allCases.filter { platform in files.contains { $0.name.hasPrefix(platform.folder + "/") } }
    }

    /// The entry name of the library this machine runs: the `.wasm`, or `lib/<host triple>/<library>`.
    package var hostLibrary: String? {
        if manifest.library.hasSuffix(".wasm") { return manifest.library }
        return PackagePlatform.host.map { "\($0.folder)/\(manifest.library)" }
    }

    /// The top-level names a package may hold, besides the `.wasm` and `lib/<triple>/` libraries.
    static let topLevelNames = ["plugin.yaml", "README.md", SHA256Sums.fileName]

    // MARK: Opening

    /// Reads and verifies the package at `path`: within `limits`, a well-formed ustar archive of
    /// regular files with safe, distinct names in the layout, SHA256SUMS last listing every other
    /// file with its digest, a valid plugin.yaml whose `requires:` this hubhost meets, and the
    /// library for this machine (or the `.wasm`). Nothing is written. Throws PluginPackageError
    /// naming the entry and the reason.
    ///
    /// `inspectArchive` sees the archive's bytes as read, before any of them is parsed (to check
    /// its signature over exactly those bytes, and keep them); what it throws is thrown.
    package static func open(
        path: String, limits: Limits = Limits(), inspectArchive: (([UInt8]) throws(PluginPackageError) -> Void)? = nil
    ) throws(PluginPackageError) -> PluginPackage {
        func refuse(_ entry: String?, _ reason: String) -> PluginPackageError { PluginPackageError(path: path, entry: entry, reason: reason) }
        let archive: [UInt8]
        do {
            archive = try BoundedFile.read(path: path, maxBytes: limits.maxPackageBytes)
        } catch {
            throw refuse(nil, "cannot be read: \(error.reason)")
        }
        try inspectArchive?(archive)
        let entries: [USTarArchive.Entry]
        do {
            entries = try USTarArchive.read(archive, maxEntryBytes: limits.maxLibraryBytes, maxEntries: limits.maxEntries)
        } catch {
            throw refuse(error.entry, error.reason)
        }
        var seen = Set<String>()
        for entry in entries {
            if let problem = nameProblem(entry.name) { throw refuse(entry.name, problem) }
            guard seen.insert(entry.name).inserted else { throw refuse(entry.name, "it appears twice in the archive") }
            if topLevelNames.contains(entry.name), entry.bytes.count > limits.maxTextBytes {
                throw refuse(
                    entry.name, "it is \(entry.bytes.count) bytes, more than the \(ByteCount.text(limits.maxTextBytes)) it may be")
            }
        }

        // SHA256SUMS: last, listing every other file once with its digest.
        guard let last = entries.last, last.name == SHA256Sums.fileName else {
            let misplaced = entries.contains { $0.name == SHA256Sums.fileName }
            throw refuse(SHA256Sums.fileName, misplaced ? "it is not the last file of the archive" : "the package has no SHA256SUMS")
        }
        let sums: [(name: String, sha256: String)]
        do {
            sums = try SHA256Sums.parse(last.bytes)
        } catch {
            throw refuse(error.entry, error.reason)
        }
        let listed = Dictionary(uniqueKeysWithValues: sums.map { ($0.name, $0.sha256) })
        var files: [File] = []
        for entry in entries.dropLast() {
            guard let expected = listed[entry.name] else { throw refuse(entry.name, "it is not listed in SHA256SUMS") }
            let actual = SHA256.hex(of: Data(entry.bytes))
            guard actual == expected else {
                throw refuse(entry.name, "its SHA-256 is \(actual) but SHA256SUMS says \(expected) (changed or damaged)")
            }
            files.append(File(name: entry.name, bytes: entry.bytes, sha256: actual))
        }
        for sum in sums where !seen.contains(sum.name) || sum.name == SHA256Sums.fileName {
            throw refuse(SHA256Sums.fileName, "it lists '\(sum.name)', which is not a file of the package")
        }
        files.append(File(name: last.name, bytes: last.bytes, sha256: SHA256.hex(of: Data(last.bytes))))

        // plugin.yaml: valid, its library a plain name, its requires: met.
        guard let yaml = files.first(where: { $0.name == "plugin.yaml" }) else { throw refuse("plugin.yaml", "the package has no plugin.yaml") }
        let manifest = try parseManifest(yaml.bytes, package: path)
        if let problem = manifest.hubhostRequirementProblem { throw refuse("plugin.yaml", problem) }
        if let readme = files.first(where: { $0.name == "README.md" }), String(validating: readme.bytes, as: UTF8.self) == nil {
            throw refuse("README.md", "it is not UTF-8 text")
        }

        // The libraries: each the one plugin.yaml names, each in its platform's folder.
        let isWasm = manifest.library.hasSuffix(".wasm")
        for file in files where !topLevelNames.contains(file.name) {
            let base = file.name.split(separator: "/").last.map(String.init) ?? file.name
            guard base == manifest.library else {
                throw refuse(file.name, "plugin.yaml names the library '\(manifest.library)'; the package holds no other library")
            }
            if isWasm {
                guard file.name == manifest.library else {
                    throw refuse(file.name, "plugin.yaml's library is a .wasm, which belongs at the top of the package, not under lib/")
                }
                guard file.bytes.starts(with: [0, 0x61, 0x73, 0x6d]) else { throw refuse(file.name, "it is not a WebAssembly module") }
                continue
            }
            guard file.name != manifest.library else {
                throw refuse(file.name, "a native library belongs under lib/<triple>/, the folder of the platform it was built for")
            }
            let folder = String(file.name.dropLast(base.count + 1))
            switch PackagePlatform.of(elf: file.bytes) {
            case .failure(let problem): throw refuse(file.name, problem.reason)
            case .success(let platform) where platform.folder != folder:
                throw refuse(file.name, "it is a library for \(platform.rawValue), in the folder of another platform (\(folder)/)")
            case .success: break
            }
        }
        guard let wanted = PackagePlatform.host.map({ "\($0.folder)/\(manifest.library)" }) ?? (isWasm ? manifest.library : nil) else {
            throw refuse(nil, "this machine is not a platform packages carry (\(PackagePlatform.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let hostName = isWasm ? manifest.library : wanted
        guard let library = files.first(where: { $0.name == hostName }) else {
            let carried = PackagePlatform.allCases.filter { platform in files.contains { $0.name.hasPrefix(platform.folder + "/") } }
            throw refuse(
                hostName,
                "the package has no library for this machine (\(PackagePlatform.host?.rawValue ?? "?")); it carries "
                    + (carried.isEmpty ? "no library at all" : "only \(carried.map(\.rawValue).joined(separator: ", "))"))
        }
        if !isWasm, let problem = ELFCheck.problem(library.bytes) { throw refuse(library.name, problem) }
        return PluginPackage(path: path, manifest: manifest, files: files)
    }

    /// Why `name` is not a name a package may hold, or nil: a relative, normalized path (no empty,
    /// `.` or `..` component, no backslash or control character) in the package layout.
    static func nameProblem(_ name: String) -> String? {
        if name.isEmpty { return "its name is empty" }
        if name.hasPrefix("/") { return "its name is an absolute path; names in a package are relative" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f || $0 == "\\" }) {
            return "its name has a control character or a backslash"
        }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        if parts.contains("..") { return "its name has a '..' component, which would leave the folder it is extracted into" }
        if parts.contains("") || parts.contains(".") { return "its name is not normalized (an empty or '.' component, or a trailing '/')" }
        let layout = "it is outside the package layout (plugin.yaml, README.md, SHA256SUMS, <library>.wasm, lib/<triple>/<library>)"
        switch parts.count {
        case 1:
            return topLevelNames.contains(name) || (name.hasSuffix(".wasm") && !name.hasPrefix(".")) ? nil : layout
        case 3:
            guard parts[0] == "lib", PackagePlatform(rawValue: String(parts[1])) != nil, !parts[2].hasPrefix(".") else { return layout }
            return nil
        default:
            return layout
        }
    }

    /// plugin.yaml's bytes parsed as PluginManifest.load parses a file (through a private temporary
    /// file, removed at once), with its `library:` a plain file name.
    static func parseManifest(_ bytes: [UInt8], package: String) throws(PluginPackageError) -> PluginManifest {
        func refuse(_ reason: String) -> PluginPackageError { PluginPackageError(path: package, entry: "plugin.yaml", reason: reason) }
        let folder: String
        do {
            folder = try TemporaryFolder.create(near: NSTemporaryDirectory())
        } catch {
            throw refuse("cannot be read: \(error.reason)")
        }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/plugin.yaml"
        guard FileManager.default.createFile(atPath: file, contents: Data(bytes)) else { throw refuse("cannot be read: no temporary file") }
        let (parsed, diagnostics) = PluginManifest.load(path: file)
        guard var manifest = parsed, diagnostics.isEmpty else {
            let problems = diagnostics.map { diagnostic in
                var shown = diagnostic
                shown.file = "plugin.yaml"
                return shown.description
            }
            throw refuse("it is not a valid plugin.yaml: " + problems.joined(separator: "; "))
        }
        manifest.file = package + ":plugin.yaml"
        guard isPlainFileName(manifest.library) else {
            throw refuse("its library '\(manifest.library)' is not a plain file name; in a package the library is found by its name")
        }
        return manifest
    }

    /// A name with no folder: not empty, no '/', not starting with '.', no control character.
    static func isPlainFileName(_ name: String) -> Bool {
        !name.isEmpty && !name.contains("/") && !name.hasPrefix(".") && nameProblem(name) != "its name has a control character or a backslash"
    }

    // MARK: Extracting

    /// Writes the package's files into `destination`, a folder that must not exist yet: into a new
    /// temporary folder beside it first, then renamed into place, so that `destination` appears
    /// whole or not at all. Libraries are written 0755, other files 0644. Nothing is written
    /// anywhere else. Throws PluginPackageError.
    package func extract(to destination: String) throws(PluginPackageError) {
        func refuse(_ entry: String?, _ reason: String) -> PluginPackageError {
            PluginPackageError(path: destination, entry: entry, reason: reason)
        }
        var status = stat()
        guard lstat(destination, &status) != 0 else { throw refuse(nil, "it already exists; extract into a new folder") }
        let parent = (destination as NSString).deletingLastPathComponent
        let temporary: String
        do {
            temporary = try TemporaryFolder.create(near: parent.isEmpty ? "." : parent)
        } catch {
            throw refuse(nil, "cannot create a folder beside it: \(error.reason)")
        }
        var renamed = false
        defer { if !renamed { try? FileManager.default.removeItem(atPath: temporary) } }
        for file in files {
            let target = temporary + "/" + file.name
            let folder = (target as NSString).deletingLastPathComponent
            if folder != temporary, mkdirAll(folder, under: temporary) != 0 {
                throw refuse(file.name, "cannot create its folder: \(String(cString: strerror(errno)))")
            }
            let isLibrary = !Self.topLevelNames.contains(file.name)
            let fd = Glibc.open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, isLibrary ? 0o755 : 0o644)
            guard fd >= 0 else { throw refuse(file.name, "cannot be written: \(String(cString: strerror(errno)))") }
            var written = 0
            while written < file.bytes.count {
                let count = file.bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else {
                    let reason = String(cString: strerror(errno))
                    close(fd)
                    throw refuse(file.name, "cannot be written: \(reason)")
                }
                written += count
            }
            guard fsync(fd) == 0, close(fd) == 0 else { throw refuse(file.name, "cannot be written: \(String(cString: strerror(errno)))") }
        }
        if let problem = TemporaryFolder.renameNoReplace(temporary, to: destination) { throw refuse(nil, problem) }
        renamed = true
    }

    /// mkdir -p of `folder`, which lies inside `root` (already there): each component created 0755.
    private func mkdirAll(_ folder: String, under root: String) -> Int32 {
        let relative = folder.dropFirst(root.count + 1)
        var path = root
        for part in relative.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o755) != 0, errno != EEXIST { return -1 }
        }
        return 0
    }
}
