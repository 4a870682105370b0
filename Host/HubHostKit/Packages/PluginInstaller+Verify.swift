import Foundation

/// `hubhost plugins verify`: every installed plugin checked again, offline, against plugins.lock,
/// the package it was installed from and plugins.yaml's `trust:`.
extension PluginInstaller {
    /// What `verify` found for one installed plugin.
    package struct Verification: Codable, Sendable, Equatable {
        package var id: String
        package var version: String
        /// "<name> (key <id>)" or "unsigned".
        package var signer: String
        /// "verified", or "failed" with `problems`.
        package var state: String
        package var problems: [String]
        /// The instances that use it.
        package var instances: [String]
    }

    /// Checks every plugin in plugins.lock: each file of its folder has the lock's SHA-256 and no
    /// file was added; the kept package is the one installed (its SHA-256), still opens whole (every
    /// file's hash, `requires:`) and holds exactly the lock's files; its signature verifies with a
    /// key `trust:` holds for its id, or it is unsigned and every instance using it allows that.
    /// Takes the same lock as add, upgrade and remove, so it never sees one half done.
    package func verify() throws(Refusal) -> [Verification] {
        let (manifest, exclusive) = try lockedManifest()
        defer { exclusive.release() }
        return manifest.pluginLock.plugins.values.sorted { $0.id < $1.id }.map { entry in
            let users = manifest.instances.filter { $0.installed?.lock.id == entry.id }
            let problems = Self.problems(of: entry, manifest: manifest, users: users)
            return Verification(
                id: entry.id, version: entry.version, signer: InstalledPlugin(lock: entry, folder: "").signerText,
                state: problems.isEmpty ? "verified" : "failed", problems: problems, instances: users.map(\.id))
        }
    }

    /// What is wrong with the package kept at `kept` against its plugins.lock `entry`, and its
    /// signature as `trust` sees it (unsigned when it could not be read).
    private static func keptPackageProblems(
        _ kept: String, entry: PluginLock.Entry, trust: TrustSettings
    ) -> (problems: [String], signature: PackageSignatureCheck.Outcome) {
        // A box, not a captured `var`: the Swift 6.3 optimizer crashed (a SIL ownership
        // verification failure) on a local enum the typed-throws closure assigned.
        final class Found { var signature = PackageSignatureCheck.Outcome.unsigned }
        let found = Found()
        var problems: [String] = []
        do {
            let package = try PluginPackage.open(path: kept) { (bytes: [UInt8]) throws(PluginPackageError) in
                let digest = SHA256.hex(of: Data(bytes))
                guard digest == entry.packageSHA256 else {
                    throw PluginPackageError(
                        path: kept, reason: "is not the package installed (SHA-256 \(digest), plugins.lock says \(entry.packageSHA256))")
                }
                found.signature = try PackageSignatureCheck.check(archive: bytes, package: kept, trust: trust)
            }
            let packaged = Dictionary(uniqueKeysWithValues: package.files.map { ($0.name, $0.sha256) })
            if packaged != entry.files { problems.append("\(kept): its files are not the ones plugins.lock lists") }
            if package.manifest.id != entry.id || package.manifest.version != entry.version {
                problems.append("\(kept): it is \(package.manifest.id) \(package.manifest.version), not \(entry.id) \(entry.version)")
            }
        } catch {
            problems.append(error.description)
        }
        return (problems, found.signature)
    }

    static func problems(of entry: PluginLock.Entry, manifest: HostManifest, users: [HostManifest.Instance]) -> [String] {
        var problems: [String] = []
        let folder = PluginLock.folder(dataDirectory: manifest.dataDirectory, id: entry.id, version: entry.version)
        // The installed files.
        for (name, expected) in entry.files.sorted(by: { $0.key < $1.key }) {
            let path = (folder as NSString).appendingPathComponent(name)
            guard let actual = LibraryFile.sha256(path: path) else {
                problems.append("\(path): missing or not a regular file")
                continue
            }
            if actual != expected { problems.append("\(path): modified (SHA-256 \(actual), plugins.lock says \(expected))") }
        }
        let present = Self.files(under: folder)
        for extra in present.subtracting(entry.files.keys).sorted() {
            problems.append("\((folder as NSString).appendingPathComponent(extra)): added; it is not a file of the package")
        }
        // The package kept beside the folder.
        let kept = keptPackagePath(folder: folder)
        let (packageProblems, signature) = keptPackageProblems(kept, entry: entry, trust: manifest.trust)
        problems += packageProblems
        switch signature {
        case .signed(let signer, _):
            if signer.name != entry.signer || !signer.key.hasKeyID(entry.keyID) {
                problems.append(
                    "signed by '\(signer.name)' (key \(signer.key.keyIDText)), but plugins.lock says \(entry.signer ?? "unsigned") (key \(entry.keyID ?? "none"))"
                )
            }
            if !signer.covers(pluginID: entry.id) {
                problems.append("the key of '\(signer.name)' is trusted only for ids matching '\(signer.ids)', not '\(entry.id)'")
            }
        case .unsigned:
            if entry.signer != nil {
                problems.append("\(PackageSignatureCheck.signaturePath(ofPackage: kept)): missing; plugins.lock says '\(entry.signer!)' signed it")
            }
            for user in users where !user.allowUnsigned {
                problems.append("unsigned, and instance '\(user.id)' does not say allow_unsigned: true")
            }
        }
        return problems
    }

    /// The regular files under `folder`, relative to it (at most 1,000; a package holds 16).
    static func files(under folder: String) -> Set<String> {
        var found = Set<String>()
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return found }
        while let name = walker.nextObject() as? String, found.count < 1_000 {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent(name), isDirectory: &isFolder), !isFolder.boolValue
            {
                found.insert(name)
            }
        }
        return found
    }
}
