import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Installs plugin packages into a host: `hubhost plugins add`, `upgrade` and `remove` (and
/// `verify`, in PluginInstaller+Verify). Each one, under an exclusive lock on the data directory's
/// `plugins/` folder (two at once on one data directory take turns):
///
/// 1. opens the package, verifying its signature over the bytes read, then the whole package
///    (PluginPackage.open: every file's hash, the layout, `requires:`, the library for this machine);
/// 2. installs it into `<data_dir>/plugins/<id>/<version>/` (never over an installed version), with
///    the package and its signature kept beside the folder for `verify`;
/// 3. records it in plugins.lock and writes the instance's file into plugins.d/;
/// 4. loads the changed plugins.yaml and checks the instance (config keys against the schema);
/// 5. applies it (`Apply`): a reload of the running serve, or, when none runs, a trial load and create.
///
/// When a step fails every file is put back as it was (InstallTransaction): for an upgrade the old
/// version, which the running serve never stopped using, stays in place.
package struct PluginInstaller: Sendable {
    /// A refusal, with what was done about it.
    package struct Refusal: Error, CustomStringConvertible, Sendable {
        package var description: String
        /// The change was made and undone (an upgrade rolled back).
        package var rolledBack = false

        package init(_ description: String, rolledBack: Bool = false) {
            self.description = description
            self.rolledBack = rolledBack
        }

        /// `error` as a Refusal (every step throws one; a `throw` in a `do` block widens the type).
        static func from(_ error: any Error) -> Refusal { error as? Refusal ?? Refusal("\(error)") }
    }

    /// How a change reached the host.
    package struct Applied: Codable, Sendable, Equatable {
        /// "reloaded": the running serve reloaded (`generation` after it); "checked": no serve
        /// answered, the instances were loaded and created in this process and then let go.
        package var how: String
        package var generation: Int?
        package var detail: String

        package init(how: String, generation: Int? = nil, detail: String) {
            self.how = how
            self.generation = generation
            self.detail = detail
        }
    }

    /// Applies the changed manifest to the host, checking `instances` (the ids added or changed);
    /// returns what happened, or throws a Refusal saying why it was not applied.
    package typealias Apply = (_ manifest: HostManifest, _ instances: [String]) throws(Refusal) -> Applied

    /// What `add`, `upgrade` and `remove` did.
    package struct Report: Codable, Sendable {
        package var action: String
        package var instance: String?
        package var plugin: String
        package var version: String?
        package var previousVersion: String?
        /// "<name> (key <id>)" or "unsigned".
        package var signer: String?
        package var folder: String?
        package var instanceFile: String?
        package var applied: Applied?
    }

    /// plugins.yaml, absolute.
    package let manifestFile: String
    /// How long to wait for another add, upgrade, remove or verify on the same data directory.
    package var lockWaitSeconds: Double = 120

    package init(manifestFile: String) {
        self.manifestFile = HostManifest.absolute(manifestFile, from: FileManager.default.currentDirectoryPath)
    }

    // MARK: add

    /// Installs the package at `path` as a new instance `instanceID` (default: the plugin's id) with
    /// `settings` as its config. Throws a Refusal with nothing changed.
    package func add(
        package path: String, instanceID: String? = nil, settings: [(key: String, value: String)] = [], allowUnsigned: Bool = false,
        apply: Apply
    ) throws(Refusal) -> Report {
        let (manifest, exclusive) = try lockedManifest()
        defer { exclusive.release() }
        let opened = try open(path, manifest: manifest, allowUnsigned: allowUnsigned)
        let plugin = opened.package.manifest
        let instance = instanceID ?? plugin.id
        guard PluginManifest.isValidID(instance) else {
            throw Refusal("'\(instance)' is not a valid instance id: use lowercase letters, digits, '-', '_' and '.'")
        }
        if let existing = manifest.instances.first(where: { $0.id == instance }) {
            throw Refusal(
                "there is already an instance '\(instance)' (\(existing.file):\(existing.line)); give the new one another --id, or use hubhost plugins upgrade to change its version"
            )
        }
        let instanceFile = InstanceFile.path(manifestFile: manifestFile, instance: instance)
        guard !FileManager.default.fileExists(atPath: instanceFile) else {
            throw Refusal("\(instanceFile) already exists; remove it, or give the instance another --id")
        }
        let transaction = InstallTransaction()
        do {
            var lock = manifest.pluginLock
            if let installed = lock.plugins[plugin.id] {
                // Another instance of a plugin already installed: the same package is used as it is.
                guard installed.version == plugin.version, installed.packageSHA256 == opened.sha256 else {
                    throw Refusal(
                        "plugin '\(plugin.id)' \(installed.version) is installed (from \(installed.package)); hubhost plugins upgrade changes its version for every instance"
                    )
                }
            } else {
                lock.plugins[plugin.id] = try install(opened, manifest: manifest, transaction: transaction)
                try transaction.write(lock.fileContents, to: PluginLock.path(forManifest: manifestFile))
            }
            try ensureInclude(transaction)
            mkdir(InstanceFile.folder(manifestFile: manifestFile), 0o755)
            let text = InstanceFile.text(
                instance: instance, pluginID: plugin.id, version: plugin.version, package: (path as NSString).lastPathComponent,
                settings: settings, allowUnsigned: allowUnsigned && opened.signature == .unsigned)
            try transaction.write(Data(text.utf8), to: instanceFile)
            let next = try loadManifest()
            guard let added = next.instances.first(where: { $0.id == instance }), added.file == instanceFile else {
                throw Refusal("plugins.yaml's include: does not include \(instanceFile); add \(InstanceFile.includePattern) to it")
            }
            try requireNoProblems(next, instances: [instance])
            let applied = try apply(next, [instance])
            transaction.commit()
            return Report(
                action: "add", instance: instance, plugin: plugin.id, version: plugin.version, signer: opened.signerText,
                folder: added.installed?.folder, instanceFile: instanceFile, applied: applied)
        } catch {
            transaction.rollback()
            throw Refusal.from(error)
        }
    }

    // MARK: upgrade

    /// Installs the package at `path` as the new version of an installed plugin, for every
    /// instance of it. When the new version does not load or create (in the running serve's
    /// reload, or in this process when none runs), rolls back to the old version by itself and
    /// throws a Refusal with `rolledBack`.
    package func upgrade(package path: String, allowUnsigned: Bool = false, apply: Apply) throws(Refusal) -> Report {
        let (manifest, exclusive) = try lockedManifest()
        defer { exclusive.release() }
        let users = { (id: String) in manifest.instances.filter { $0.installed?.lock.id == id } }
        let opened = try open(path, manifest: manifest, allowUnsigned: true)
        let plugin = opened.package.manifest
        guard let current = manifest.pluginLock.plugins[plugin.id] else {
            throw Refusal("plugin '\(plugin.id)' is not installed; hubhost plugins add \(path) installs it")
        }
        guard current.version != plugin.version else {
            throw Refusal("plugin '\(plugin.id)' \(plugin.version) is already installed; nothing to upgrade")
        }
        let instances = users(plugin.id)
        if opened.signature == .unsigned, !allowUnsigned, instances.contains(where: { !$0.allowUnsigned }) || instances.isEmpty {
            // Unsigned is accepted when asked for, or when every instance already runs unsigned.
            do {
                try PackageSignatureCheck.requireTrusted(opened.signature, pluginID: plugin.id, package: path, allowUnsigned: false)
            } catch {
                throw Refusal("\(error.description); nothing was installed")
            }
        }
        let transaction = InstallTransaction()
        let applied: Applied
        do {
            var lock = manifest.pluginLock
            lock.plugins[plugin.id] = try install(opened, manifest: manifest, transaction: transaction)
            try transaction.write(lock.fileContents, to: PluginLock.path(forManifest: manifestFile))
            let next = try loadManifest()
            try requireNoProblems(next, instances: instances.map(\.id))
            applied = try apply(next, instances.map(\.id))
            transaction.commit()
        } catch {
            transaction.rollback()
            throw Refusal(
                "upgrade of '\(plugin.id)' to \(plugin.version) refused: \(Refusal.from(error).description)\nrolled back: \(plugin.id) \(current.version) stays installed and running",
                rolledBack: true)
        }
        // The old version is no longer named by the lock; its library stays loaded where it ran.
        removeInstalled(manifest: manifest, id: plugin.id, version: current.version)
        return Report(
            action: "upgrade", instance: nil, plugin: plugin.id, version: plugin.version, previousVersion: current.version,
            signer: opened.signerText, folder: PluginLock.folder(dataDirectory: manifest.dataDirectory, id: plugin.id, version: plugin.version),
            instanceFile: nil, applied: applied)
    }

    // MARK: remove

    /// Retires the instance `id` that `plugins add` wrote (a reload, when serve runs), then, when no
    /// instance uses its plugin any more, removes the plugin from the lock and its files. `id` may
    /// also name an installed plugin no instance uses.
    package func remove(_ id: String, apply: Apply) throws(Refusal) -> Report {
        let (manifest, exclusive) = try lockedManifest()
        defer { exclusive.release() }
        var pluginID: String?
        var applied: Applied?
        var instanceFile: String?
        if let instance = manifest.instances.first(where: { $0.id == id }) {
            guard instance.file == InstanceFile.path(manifestFile: manifestFile, instance: id) else {
                throw Refusal(
                    "instance '\(id)' is written in \(instance.file) (line \(instance.line)), not by hubhost plugins add: remove its entry there"
                )
            }
            pluginID = instance.installed?.lock.id
            instanceFile = instance.file
            let transaction = InstallTransaction()
            do {
                try transaction.remove(file: instance.file)
                let next = try loadManifest()
                applied = try apply(next, [])
                transaction.commit()
            } catch {
                transaction.rollback()
                throw error
            }
        } else if manifest.pluginLock.plugins[id] != nil {
            pluginID = id
        } else {
            throw Refusal("no instance and no installed plugin '\(id)' in \(manifestFile) (hubhost plugins list shows the instances)")
        }
        var version: String?
        if let pluginID, let entry = manifest.pluginLock.plugins[pluginID] {
            version = entry.version
            let next = try loadManifest()
            let stillUsed = next.instances.filter { $0.installed?.lock.id == pluginID }.map(\.id)
            if stillUsed.isEmpty {
                var lock = next.pluginLock
                lock.plugins[pluginID] = nil
                let transaction = InstallTransaction()
                try transaction.write(lock.fileContents, to: PluginLock.path(forManifest: manifestFile))
                transaction.commit()
                try? FileManager.default.removeItem(
                    atPath: (PluginLock.installRoot(dataDirectory: manifest.dataDirectory) as NSString).appendingPathComponent(pluginID))
            } else if instanceFile == nil {
                throw Refusal(
                    "plugin '\(pluginID)' is still used by instance\(stillUsed.count == 1 ? "" : "s") \(stillUsed.joined(separator: ", ")); remove \(stillUsed.count == 1 ? "it" : "them") first"
                )
            }
        }
        return Report(
            action: "remove", instance: instanceFile == nil ? nil : id, plugin: pluginID ?? id, version: version, signer: nil, folder: nil,
            instanceFile: instanceFile, applied: applied)
    }

    // MARK: Steps

    /// A package opened and verified, with its signature's outcome and the archive's digest.
    struct Opened {
        var package: PluginPackage
        var archive: [UInt8]
        var sha256: String
        var signature: PackageSignatureCheck.Outcome
        var signatureBytes: [UInt8]?

        var signerText: String {
            if case .signed(let signer, _) = signature { return "\(signer.name) (key \(signer.key.keyIDText))" }
            return "unsigned"
        }
    }

    /// Opens the package at `path`: its signature checked over the bytes read and against
    /// `trust:` (and the key trusted for the plugin's id), then the whole package.
    func open(_ path: String, manifest: HostManifest, allowUnsigned: Bool) throws(Refusal) -> Opened {
        var archive: [UInt8] = []
        var signature = PackageSignatureCheck.Outcome.unsigned
        let package: PluginPackage
        do {
            package = try PluginPackage.open(path: path) { (bytes: [UInt8]) throws(PluginPackageError) in
                signature = try PackageSignatureCheck.check(archive: bytes, package: path, trust: manifest.trust)
                archive = bytes
            }
            try PackageSignatureCheck.requireTrusted(signature, pluginID: package.manifest.id, package: path, allowUnsigned: allowUnsigned)
        } catch {
            throw Refusal("\(error.description); nothing was installed")
        }
        guard PluginLock.isSafeVersion(package.manifest.version) else {
            throw Refusal("\(path): plugin.yaml's version '\(package.manifest.version)' cannot name a folder (letters, digits, '.', '-', '+', '_')")
        }
        guard package.hostLibrary != nil else { throw Refusal("\(path): the package has no library for this machine") }
        let signatureBytes = FileManager.default.contents(atPath: PackageSignatureCheck.signaturePath(ofPackage: path)).map { [UInt8]($0) }
        return Opened(
            package: package, archive: archive, sha256: SHA256.hex(of: Data(archive)), signature: signature,
            signatureBytes: signature == .unsigned ? nil : signatureBytes)
    }

    /// Extracts the package into `<data_dir>/plugins/<id>/<version>/` and keeps the package (and its
    /// signature) beside it; returns its lock entry.
    func install(_ opened: Opened, manifest: HostManifest, transaction: InstallTransaction) throws(Refusal) -> PluginLock.Entry {
        let plugin = opened.package.manifest
        let folder = PluginLock.folder(dataDirectory: manifest.dataDirectory, id: plugin.id, version: plugin.version)
        let parent = (folder as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw Refusal("\(parent): cannot be created: \(error.localizedDescription)")
        }
        if manifest.pluginLock.plugins[plugin.id]?.version != plugin.version, FileManager.default.fileExists(atPath: folder) {
            // Not named by the lock: left by an add that was interrupted. Replaced.
            try? FileManager.default.removeItem(atPath: folder)
        }
        do {
            try opened.package.extract(to: folder)
        } catch {
            throw Refusal("\(error.description); nothing was installed")
        }
        transaction.created(folder: folder)
        let kept = Self.keptPackagePath(folder: folder)
        try transaction.write(Data(opened.archive), to: kept)
        if let signature = opened.signatureBytes {
            try transaction.write(Data(signature), to: PackageSignatureCheck.signaturePath(ofPackage: kept))
        }
        var signer: TrustSettings.Entry?
        if case .signed(let entry, _) = opened.signature { signer = entry }
        return PluginLock.Entry(
            id: plugin.id, version: plugin.version, package: (opened.package.path as NSString).lastPathComponent,
            packageSHA256: opened.sha256, signer: signer?.name, keyID: signer?.key.keyIDText,
            files: Dictionary(uniqueKeysWithValues: opened.package.files.map { ($0.name, $0.sha256) }),
            library: opened.package.hostLibrary!)
    }

    /// Where the package an installed folder came from is kept: `<folder>.hhp`, beside it.
    static func keptPackagePath(folder: String) -> String { folder + ".hhp" }

    /// Removes an installed version's folder and kept package (best effort: it is no longer in the lock).
    func removeInstalled(manifest: HostManifest, id: String, version: String) {
        let folder = PluginLock.folder(dataDirectory: manifest.dataDirectory, id: id, version: version)
        let kept = Self.keptPackagePath(folder: folder)
        try? FileManager.default.removeItem(atPath: folder)
        unlink(kept)
        unlink(PackageSignatureCheck.signaturePath(ofPackage: kept))
    }

    /// Adds `include: plugins.d/*.yaml` to plugins.yaml when it has no `include:` at all.
    func ensureInclude(_ transaction: InstallTransaction) throws(Refusal) {
        guard let data = FileManager.default.contents(atPath: manifestFile), let text = String(data: data, encoding: .utf8) else {
            throw Refusal("\(manifestFile): cannot be read")
        }
        guard !InstanceFile.hasIncludeKey(text) else { return }
        try transaction.write(Data(InstanceFile.addingInclude(to: text).utf8), to: manifestFile)
    }

    func loadManifest() throws(Refusal) -> HostManifest {
        do {
            return try HostManifest.load(path: manifestFile)
        } catch {
            throw Refusal("\(error)")
        }
    }

    /// Throws with the problems of `instances` in `manifest`, and of plugins.yaml as a whole.
    func requireNoProblems(_ manifest: HostManifest, instances: [String]) throws(Refusal) {
        let problems = manifest.instances.filter { instances.contains($0.id) }.flatMap(\.problems)
        guard problems.isEmpty else { throw Refusal(problems.map(\.description).joined(separator: "\n")) }
    }

    /// The exclusive lock of the data directory's `plugins/` folder, and plugins.yaml as read
    /// once it is held (so a change made by the holder before is seen).
    func lockedManifest() throws(Refusal) -> (HostManifest, FileLock) {
        let exclusive = try takeLock(try loadManifest())
        do {
            return (try loadManifest(), exclusive)
        } catch {
            exclusive.release()
            throw error
        }
    }

    /// The exclusive lock of the data directory's `plugins/` folder.
    func takeLock(_ manifest: HostManifest) throws(Refusal) -> FileLock {
        let root = PluginLock.installRoot(dataDirectory: manifest.dataDirectory)
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            return try FileLock(path: (root as NSString).appendingPathComponent(".lock"), waitSeconds: lockWaitSeconds)
        } catch {
            throw Refusal("\(error)")
        }
    }
}
