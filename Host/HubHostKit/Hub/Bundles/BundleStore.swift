import Foundation
import Synchronization

/// The host's verified bundles on disk: `<data_dir>/hub/bundles/<sha256>.sqlite3` (each beside its
/// metadata document `<sha256>.json`) and `active.json`, the pointer to the active one.
///
/// Installing verifies first (BundleVerifier), then writes the bytes to a temporary file, fsyncs it,
/// checks it is a content bundle, renames it into place and only then replaces `active.json` (again
/// temp + fsync + rename). A crash at any point leaves the previous pointer and its bundle intact,
/// and a rejected bundle never touches them. The active bundle and the one before it are kept;
/// older ones are deleted, except those another process still has open.
///
/// Several processes share the directory (`hubhost serve` and `hubhost hub sync` beside it):
/// - installing, from writing the file to pruning, holds an exclusive lock on `bundles.lock`, so
///   two processes' installs never interleave (nor prune the other's new file);
/// - a process that opens a stored bundle holds a BundleLease on its file (a shared flock) for as
///   long as the bundle is open, and pruning deletes only files it can lock exclusively: a bundle
///   in use is kept and deleted by a later install once no process has it open;
/// - `activeStamp()` changes whenever any process activates a bundle, so a running engine notices
///   and opens the new one (HubEngine).
/// Sendable: `directory` and `keepPrevious` are `let`s; installs are serialised by the `installing`
/// Mutex in this process and by the install file lock across processes.
public final class BundleStore: Sendable {
    /// What `active.json` holds.
    public struct ActivePointer: Codable, Equatable, Sendable {
        /// The active bundle's SHA-256 (its file is `<sha256>.sqlite3`).
        public var sha256: String
        /// The active bundle's version, from inside the signed file (`ContentBundle.Metadata.version`), e.g. `2026.11.22-1`.
        public var version: String
        /// When it was activated (ISO 8601, UTC).
        public var activated: String
        /// The bundle active before it, kept so an operator can go back; nil for the first.
        public var previous: String?
        /// The active bundle's `created` time from inside the signed file (nil in pointers written
        /// before it was recorded): a bundle created earlier is refused.
        public var created: String?
    }

    /// The folder holding the bundles and `active.json` (the hub engine's is `<data_dir>/hub/bundles`).
    public let directory: String
    /// How many bundles to keep: the active one plus this many before it.
    public let keepPrevious: Int
    /// Held through an install: one at a time in this process.
    private let installing = Mutex(())

    /// The store in `directory`, keeping the active bundle and `keepPrevious` before it (0 or more); creates the folder
    /// (and its parents) when missing, and throws the file system's error when it cannot.
    public init(directory: String, keepPrevious: Int = 1) throws {
        self.directory = directory
        self.keepPrevious = keepPrevious
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// The path of `active.json`, the pointer to the active bundle (`ActivePointer`); the file is missing until a first install.
    public var activePointerPath: String { file("active.json") }

    /// The lock file installs hold (beside the directory, which holds only bundles and the pointer).
    var installLockPath: String { directory + ".lock" }

    /// Where the bundle of SHA-256 `sha256` (64 lowercase hex digits) is or would be stored: `<sha256>.sqlite3`; it may not exist.
    public func bundlePath(sha256: String) -> String { file("\(sha256).sqlite3") }

    /// Where the metadata document the bundle of `sha256` was installed with is or would be stored: `<sha256>.json`.
    public func metadataPath(sha256: String) -> String { file("\(sha256).json") }

    /// Changes whenever a process activates a bundle (the pointer is replaced by rename).
    package func activeStamp() -> FileStamp { FileStamp(path: activePointerPath) }

    /// The pointer, nil when nothing was installed yet (or the pointer is unreadable).
    public func activePointer() -> ActivePointer? {
        guard let data = FileManager.default.contents(atPath: activePointerPath) else { return nil }
        return try? JSONDecoder().decode(ActivePointer.self, from: data)
    }

    /// Why the active bundle cannot be opened; the hub engine logs it and keeps what it presents (at start: the preloaded bundle, if any).
    package enum LoadError: Error, CustomStringConvertible {
        /// The file at `path` (the bundle, or `active.json` when other processes kept replacing it) cannot be read, no longer
        /// has its SHA-256, or is not a content bundle; `reason` says which. It stays inactive until a new bundle is installed.
        case damaged(path: String, reason: String)
        package var description: String {
            switch self {
            case .damaged(let path, let reason):
                return "the stored bundle \(path) is damaged (\(reason)); it stays inactive until a new bundle is installed"
            }
        }
    }

    /// A bundle opened from the store: the bundle (holding its lease), its SHA-256 and the stamp of
    /// the pointer that named it.
    struct Opened {
        var bundle: ContentBundle
        var sha256: String
        var stamp: FileStamp
    }

    func openActive() throws -> Opened? {
        // Bounded: another process may install (and prune the bundle just named) between reading
        // the pointer and locking the file; then the pointer names a newer bundle.
        for _ in 0..<16 {
            let stamp = activeStamp()  // before the pointer: a change after it is noticed next time
            guard let pointer = activePointer() else { return nil }
            let path = bundlePath(sha256: pointer.sha256)
            guard let lease = BundleLease(path: path) else {
                if activePointer()?.sha256 != pointer.sha256 { continue }
                throw LoadError.damaged(path: path, reason: "it cannot be read")
            }
            guard let digest = SHA256.hex(ofFile: path) else { throw LoadError.damaged(path: path, reason: "it cannot be read") }
            guard digest == pointer.sha256 else { throw LoadError.damaged(path: path, reason: "its SHA-256 is now \(digest)") }
            do { return Opened(bundle: try ContentBundle(path: path, lease: lease), sha256: digest, stamp: stamp) } catch {
                throw LoadError.damaged(path: path, reason: "\(error)")
            }
        }
        throw LoadError.damaged(path: activePointerPath, reason: "other processes kept replacing it while it was read")
    }

    /// Verifies `data` against `metadata` and the public key, stores it and makes it the active
    /// bundle. Throws BundleRejection (and leaves the active bundle as it was) when any check fails.
    @discardableResult
    package func install(_ data: Data, metadata: BundleMetadata, publicKeyPath: String?) throws -> ContentBundle {
        try installOpened(data, metadata: metadata, publicKeyPath: publicKeyPath).bundle
    }

    /// `install`, with the stamp of the pointer it wrote (read while no other process can write one).
    func installOpened(_ data: Data, metadata: BundleMetadata, publicKeyPath: String?) throws -> Opened {
        try BundleVerifier.verify(data, metadata: metadata, publicKeyPath: publicKeyPath)
        return try installing.withLock { _ in
            let locked: Opened
            do { locked = try FileLocks.exclusively(installLockPath) { try storeAndActivate(data, metadata: metadata) } } catch let rejection
                as BundleRejection
            {
                throw rejection
            } catch {
                throw BundleRejection(.unreadable, "the bundle store \(directory) cannot be locked: \(error)")
            }
            return locked
        }
    }

    /// The install itself, holding the in-process lock and the store's install lock.
    private func storeAndActivate(_ data: Data, metadata: BundleMetadata) throws -> Opened {
        let sha = SHA256.hex(of: data)
        let finalPath = bundlePath(sha256: sha)
        let temporary = file(".incoming-\(UUID().uuidString).sqlite3")
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        do { try DurableFile.write(data, to: temporary) } catch {
            throw BundleRejection(.unreadable, "the bundle cannot be stored in \(directory): \(error)")
        }
        do {
            let candidate = try ContentBundle(path: temporary)
            try Self.refuseIfOlder(candidate.metadata.created, than: activePointer()?.created)
        } catch let rejection as BundleRejection {
            throw rejection
        } catch ContentBundle.OpenError.notABundle(_, let reason) {
            throw BundleRejection(.notABundle, "the signed file is not a content bundle: \(reason)")
        } catch {
            throw BundleRejection(.notABundle, "the signed file is not a content bundle: \(error)")
        }
        do {
            try DurableFile.write(metadata.encoded(), to: metadataPath(sha256: sha))
            // The same bytes stored already (and intact) stay: another process may have that file
            // open, and a rename would put a new file under its name.
            if SHA256.hex(ofFile: finalPath) != sha {
                if rename(temporary, finalPath) != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                DurableFile.syncDirectory(directory)
            }
        } catch {
            throw BundleRejection(.unreadable, "the bundle cannot be stored as \(finalPath): \(error)")
        }
        let bundle: ContentBundle
        do {
            guard let lease = BundleLease(path: finalPath) else { throw BundleRejection(.unreadable, "\(finalPath) vanished after it was stored") }
            bundle = try ContentBundle(path: finalPath, lease: lease)
        } catch let rejection as BundleRejection {
            throw rejection
        } catch {
            throw BundleRejection(.notABundle, "\(error)")
        }
        let old = activePointer()
        let pointer = ActivePointer(
            sha256: sha, version: bundle.metadata.version, activated: ISO8601DateFormatter().string(from: Date()),
            previous: old?.sha256 == sha ? old?.previous : old?.sha256, created: bundle.metadata.created)
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try DurableFile.write(try encoder.encode(pointer), to: activePointerPath, atomically: true)
        } catch {
            throw BundleRejection(.unreadable, "the bundle was stored but \(activePointerPath) cannot be written: \(error)")
        }
        let stamp = activeStamp()  // ours: no other process writes the pointer while we hold the install lock
        prune(keeping: [pointer.sha256, pointer.previous].compactMap { $0 })
        return Opened(bundle: bundle, sha256: sha, stamp: stamp)
    }

    /// Throws `.older` when `created` (the candidate's signed creation time) is before the active
    /// bundle's. Times that do not parse as ISO 8601 are not compared.
    static func refuseIfOlder(_ created: String, than active: String?) throws {
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func date(_ text: String) -> Date? {
            if let date = parser.date(from: text) { return date }
            return ISO8601DateFormatter().date(from: text)
        }
        guard let active, let activeDate = date(active), let candidate = date(created), candidate < activeDate else { return }
        throw BundleRejection(
            .older, "the bundle was created \(created), before the active bundle (\(active)): an older bundle never replaces newer content")
    }

    /// Reads the bundle file at `path` and installs it (see install(_:metadata:publicKeyPath:)).
    @discardableResult
    package func install(bundleAt path: String, metadata: BundleMetadata, publicKeyPath: String?) throws -> ContentBundle {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe) } catch {
            throw BundleRejection(.unreadable, "the bundle \(path) cannot be read: \(error.localizedDescription)")
        }
        return try install(data, metadata: metadata, publicKeyPath: publicKeyPath)
    }

    /// `install(bundleAt:...)`, with the stamp of the pointer it wrote.
    func installOpened(bundleAt path: String, metadata: BundleMetadata, publicKeyPath: String?) throws -> Opened {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe) } catch {
            throw BundleRejection(.unreadable, "the bundle \(path) cannot be read: \(error.localizedDescription)")
        }
        return try installOpened(data, metadata: metadata, publicKeyPath: publicKeyPath)
    }

    // MARK: Files

    private func file(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Deletes stored bundles other than `keep` (and stray temporary files), oldest first beyond
    /// `keepPrevious`. The pointer names at most the active one and its predecessor. A bundle a
    /// process still has open (a BundleLease) is kept, with its metadata, for a later prune. Runs
    /// under the install lock, so no other process is storing a file meanwhile.
    private func prune(keeping keep: [String]) {
        let kept = Set(keep.prefix(1 + keepPrevious))
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        var inUse = Set<String>()
        for name in names where name.hasSuffix(".sqlite3") {
            let stem = String(name.dropLast(8))
            guard !kept.contains(stem) else { continue }
            if !FileLocks.removeUnlessLeased([file(name)]) { inUse.insert(stem) }
        }
        for name in names where name != "active.json" && name.hasSuffix(".json") {
            let stem = String(name.dropLast(5))
            guard !kept.contains(stem), !inUse.contains(stem) else { continue }
            unlink(file(name))
        }
    }
}
