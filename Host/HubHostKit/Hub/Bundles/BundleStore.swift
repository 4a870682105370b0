import Foundation

/// The host's verified bundles on disk: `<data_dir>/hub/bundles/<sha256>.sqlite3` (each beside its
/// metadata document `<sha256>.json`) and `active.json`, the pointer to the active one.
///
/// Installing verifies first (BundleVerifier), then writes the bytes to a temporary file, fsyncs it,
/// checks it is a content bundle, renames it into place and only then replaces `active.json` (again
/// temp + fsync + rename). A crash at any point leaves the previous pointer and its bundle intact,
/// and a rejected bundle never touches them. The active bundle and the one before it are kept;
/// older ones are deleted.
public final class BundleStore: @unchecked Sendable {
    /// What `active.json` holds.
    public struct ActivePointer: Codable, Equatable, Sendable {
        /// The active bundle's SHA-256 (its file is `<sha256>.sqlite3`).
        public var sha256: String
        public var version: String
        /// When it was activated (ISO 8601, UTC).
        public var activated: String
        /// The bundle active before it, kept so an operator can go back; nil for the first.
        public var previous: String?
        /// The active bundle's `created` time from inside the signed file (nil in pointers written
        /// before it was recorded): a bundle created earlier is refused.
        public var created: String?
    }

    public let directory: String
    /// How many bundles to keep: the active one plus this many before it.
    public let keepPrevious: Int
    private let lock = NSLock()

    public init(directory: String, keepPrevious: Int = 1) throws {
        self.directory = directory
        self.keepPrevious = keepPrevious
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    public var activePointerPath: String { file("active.json") }

    public func bundlePath(sha256: String) -> String { file("\(sha256).sqlite3") }

    public func metadataPath(sha256: String) -> String { file("\(sha256).json") }

    /// The pointer, nil when nothing was installed yet (or the pointer is unreadable).
    public func activePointer() -> ActivePointer? {
        guard let data = FileManager.default.contents(atPath: activePointerPath) else { return nil }
        return try? JSONDecoder().decode(ActivePointer.self, from: data)
    }

    public enum LoadError: Error, CustomStringConvertible {
        case damaged(path: String, reason: String)
        public var description: String {
            switch self {
            case .damaged(let path, let reason): return "the stored bundle \(path) is damaged (\(reason)); it stays inactive until a new bundle is installed"
            }
        }
    }

    /// Opens the active bundle, nil when none was installed. Its bytes are checked against the
    /// SHA-256 it was stored under (the signature was checked at install time); a file changed on
    /// disk since throws LoadError.
    public func loadActive() throws -> ContentBundle? {
        guard let pointer = activePointer() else { return nil }
        let path = bundlePath(sha256: pointer.sha256)
        guard let digest = SHA256.hex(ofFile: path) else { throw LoadError.damaged(path: path, reason: "it cannot be read") }
        guard digest == pointer.sha256 else { throw LoadError.damaged(path: path, reason: "its SHA-256 is now \(digest)") }
        do { return try ContentBundle(path: path) } catch { throw LoadError.damaged(path: path, reason: "\(error)") }
    }

    /// Verifies `data` against `metadata` and the public key, stores it and makes it the active
    /// bundle. Throws BundleRejection (and leaves the active bundle as it was) when any check fails.
    @discardableResult
    public func install(_ data: Data, metadata: BundleMetadata, publicKeyPath: String?) throws -> ContentBundle {
        try BundleVerifier.verify(data, metadata: metadata, publicKeyPath: publicKeyPath)
        return try lock.withLock {
            let sha = SHA256.hex(of: data)
            let finalPath = bundlePath(sha256: sha)
            let temporary = file(".incoming-\(UUID().uuidString).sqlite3")
            defer { try? FileManager.default.removeItem(atPath: temporary) }
            do { try Self.writeDurably(data, to: temporary) } catch {
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
                try Self.writeDurably(metadata.encoded(), to: metadataPath(sha256: sha))
                if rename(temporary, finalPath) != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                Self.syncDirectory(directory)
            } catch {
                throw BundleRejection(.unreadable, "the bundle cannot be stored as \(finalPath): \(error)")
            }
            let bundle: ContentBundle
            do { bundle = try ContentBundle(path: finalPath) } catch {
                throw BundleRejection(.notABundle, "\(error)")
            }
            let old = activePointer()
            let pointer = ActivePointer(sha256: sha, version: bundle.metadata.version, activated: ISO8601DateFormatter().string(from: Date()),
                                        previous: old?.sha256 == sha ? old?.previous : old?.sha256, created: bundle.metadata.created)
            do {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try Self.writeDurably(try encoder.encode(pointer), to: activePointerPath, atomically: true)
            } catch {
                throw BundleRejection(.unreadable, "the bundle was stored but \(activePointerPath) cannot be written: \(error)")
            }
            prune(keeping: [pointer.sha256, pointer.previous].compactMap { $0 })
            return bundle
        }
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
        throw BundleRejection(.older, "the bundle was created \(created), before the active bundle (\(active)): an older bundle never replaces newer content")
    }

    /// Reads the bundle file at `path` and installs it (see install(_:metadata:publicKeyPath:)).
    @discardableResult
    public func install(bundleAt path: String, metadata: BundleMetadata, publicKeyPath: String?) throws -> ContentBundle {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe) } catch {
            throw BundleRejection(.unreadable, "the bundle \(path) cannot be read: \(error.localizedDescription)")
        }
        return try install(data, metadata: metadata, publicKeyPath: publicKeyPath)
    }

    // MARK: Files

    private func file(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Deletes stored bundles other than `keep` (and stray temporary files), oldest first beyond
    /// `keepPrevious`. The pointer names at most the active one and its predecessor.
    private func prune(keeping keep: [String]) {
        let kept = Set(keep.prefix(1 + keepPrevious))
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name != "active.json" {
            let stem = name.hasSuffix(".sqlite3") ? String(name.dropLast(8)) : name.hasSuffix(".json") ? String(name.dropLast(5)) : nil
            guard let stem, !kept.contains(stem) else { continue }
            try? FileManager.default.removeItem(atPath: file(name))
        }
    }

    /// Writes `data` to `path` and fsyncs it; `atomically` writes a sibling temp file first and
    /// renames it over `path`, so readers see the old or the new content, never a mix.
    static func writeDurably(_ data: Data, to path: String, atomically: Bool = false) throws {
        let target = atomically ? path + ".tmp-\(getpid())" : path
        let fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var failure: Int32 = 0
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure != 0 {
            unlink(target)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
        }
        if atomically {
            guard rename(target, path) == 0 else {
                let code = errno
                unlink(target)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
            syncDirectory((path as NSString).deletingLastPathComponent)
        }
    }

    /// fsync on the directory, so a rename survives a power loss.
    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
