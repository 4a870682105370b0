import Foundation

/// `hub.preloaded_bundle` may name a content folder instead of a bundle file: content shipped with
/// the app as its sources (what `hubhost bundle build` reads). The host builds it into
/// `<data_dir>/hub/preloaded/` and presents that, rebuilding only when a file in the folder is
/// newer than the last build. Like a preloaded bundle file without metadata, it is trusted as
/// shipped with the app (unsigned); downloaded bundles are always verified.
enum PreloadedContentFolder {
    /// The bundle built from `folder`, (re)built when needed. Throws the builder's problems.
    static func bundle(for folder: String, cacheDirectory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        let name = SHA256.hex(of: Data(folder.utf8)).prefix(16)
        let output = (cacheDirectory as NSString).appendingPathComponent("\(name).sqlite3")
        let built = (try? FileManager.default.attributesOfItem(atPath: output)[.modificationDate] as? Date) ?? nil
        if let built, newestModification(in: folder) <= built { return output }
        // A staging file of this process's own: serve and a CLI command starting together may both build.
        let staging = output + ".building-\(getpid())-\(UUID().uuidString)"
        try? FileManager.default.removeItem(atPath: staging)
        defer { try? FileManager.default.removeItem(atPath: staging) }
        _ = try BundleBuilder.build(from: folder, to: staging)
        guard rename(staging, output) == 0 else {  // atomic, replacing the previous build
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: output, NSLocalizedDescriptionKey: String(cString: strerror(errno))])
        }
        return output
    }

    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The latest modification time of the folder and everything under it (bounded: a content
    /// folder is small; deleting a file changes its folder's time).
    private static func newestModification(in folder: String) -> Date {
        var newest = (try? FileManager.default.attributesOfItem(atPath: folder)[.modificationDate] as? Date) ?? Date.distantFuture
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return Date.distantFuture }
        var seen = 0
        while let relative = walker.nextObject() as? String, seen < 100_000 {
            seen += 1
            let path = (folder as NSString).appendingPathComponent(relative)
            if let date = try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date, date > newest { newest = date }
        }
        return newest
    }
}
