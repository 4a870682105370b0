import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `plugins.lock`, beside plugins.yaml: for every plugin installed from a package (`hubhost plugins
/// add`), the version in use, where its files are, who signed the package, and the SHA-256 of each
/// of its files. Every load and reload checks an installed plugin against it before its library is
/// opened; `hubhost plugins verify` checks every file. Written only by `plugins add`, `upgrade`
/// and `remove`, whole, through a temporary file renamed over it: a reader sees the old lock or
/// the new one, never a mix. JSON (a subset of YAML), sorted, so that it diffs well under version control.
package struct PluginLock: Codable, Equatable, Sendable {
    /// One installed plugin.
    package struct Entry: Codable, Equatable, Sendable {
        /// The plugin's id (plugin.yaml's `id:`), also its key in the lock.
        package var id: String
        package var version: String
        /// The package file it was installed from (its name only) and that file's SHA-256.
        package var package: String
        package var packageSHA256: String
        /// The `trust:` entry whose key signed the package and that key's id; nil: unsigned,
        /// installed with `--allow-unsigned`.
        package var signer: String?
        package var keyID: String?
        /// Every file of the package by its name in the package, with its SHA-256 (hex).
        package var files: [String: String]
        /// The name of the library this machine loads: `lib/<triple>/<library>` or the `.wasm`.
        package var library: String

        package init(
            id: String, version: String, package: String, packageSHA256: String, signer: String?, keyID: String?, files: [String: String],
            library: String
        ) {
            self.id = id
            self.version = version
            self.package = package
            self.packageSHA256 = packageSHA256
            self.signer = signer
            self.keyID = keyID
            self.files = files
            self.library = library
        }

        enum CodingKeys: String, CodingKey {
            case id, version, package, signer, files, library
            case packageSHA256 = "package_sha256"
            case keyID = "key_id"
        }
    }

    /// The format of this file; a lock from a newer hubhost is refused rather than misread.
    package var lockVersion = 1
    /// Installed plugins by id.
    package var plugins: [String: Entry] = [:]

    enum CodingKeys: String, CodingKey {
        case lockVersion = "lock_version"
        case plugins
    }

    package init() {}

    package static let fileName = "plugins.lock"
    /// A lock holds a few hundred plugins at most; anything larger is refused unread.
    package static let maxBytes = 4 << 20

    /// The lock of the plugins.yaml at `manifestFile`: beside it.
    package static func path(forManifest manifestFile: String) -> String {
        ((manifestFile as NSString).deletingLastPathComponent as NSString).appendingPathComponent(fileName)
    }

    /// The folder installed packages go into: `<data_dir>/plugins`.
    package static func installRoot(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("plugins")
    }

    /// Where the plugin `id` at `version` is installed: `<data_dir>/plugins/<id>/<version>`.
    package static func folder(dataDirectory: String, id: String, version: String) -> String {
        ((installRoot(dataDirectory: dataDirectory) as NSString).appendingPathComponent(id) as NSString).appendingPathComponent(version)
    }

    /// Whether `version` may name a folder: letters, digits, '.', '-', '+', '_', not starting with '.', at most 64 bytes.
    package static func isSafeVersion(_ version: String) -> Bool {
        guard let first = version.utf8.first, first != UInt8(ascii: "."), version.utf8.count <= 64 else { return false }
        return version.utf8.allSatisfy { byte in
            (0x61...0x7a).contains(byte) || (0x41...0x5a).contains(byte) || (0x30...0x39).contains(byte) || ".-+_".utf8.contains(byte)
        }
    }

    /// A problem reading a lock.
    package struct Problem: Error, CustomStringConvertible, Equatable {
        package var path: String
        package var reason: String
        package var description: String { "\(path): \(reason)" }
    }

    /// The lock at `path`; an empty lock when there is no file. Throws when the file is there but
    /// cannot be read, is not a lock, or names a plugin in an unsafe way.
    package static func read(path: String) throws(Problem) -> PluginLock {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return PluginLock() }
            throw Problem(path: path, reason: "cannot be read: \(String(cString: strerror(errno)))")
        }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path: path, maxBytes: maxBytes)
        } catch {
            throw Problem(path: path, reason: "cannot be read: \(error.reason)")
        }
        let lock: PluginLock
        do {
            lock = try JSONDecoder().decode(PluginLock.self, from: Data(bytes))
        } catch {
            throw Problem(
                path: path, reason: "is not a plugins.lock (it is written by hubhost plugins add, upgrade and remove; do not edit it): \(error)")
        }
        guard lock.lockVersion == 1 else {
            throw Problem(path: path, reason: "has lock_version \(lock.lockVersion); this hubhost reads version 1 (written by a newer hubhost?)")
        }
        for (key, entry) in lock.plugins {
            guard key == entry.id, PluginManifest.isValidID(key), isSafeVersion(entry.version) else {
                throw Problem(path: path, reason: "its entry '\(key)' has an invalid id or version")
            }
            guard entry.files[entry.library] != nil, entry.files.keys.allSatisfy({ PluginPackage.nameProblem($0) == nil }) else {
                throw Problem(path: path, reason: "its entry '\(key)' lists a file outside the package layout, or not its library")
            }
        }
        return lock
    }

    /// The lock as its file holds it.
    package var fileContents: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { $0 + Data("\n".utf8) } ?? Data()
    }

    /// Writes the lock to `path` whole: into a temporary file beside it, flushed, then renamed over it.
    package func write(to path: String) throws(Problem) {
        do {
            try DurableFile.write(fileContents, to: path, atomically: true)
        } catch {
            throw Problem(path: path, reason: "cannot be written: \(error.localizedDescription)")
        }
    }
}
