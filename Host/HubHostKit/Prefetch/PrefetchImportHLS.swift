import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `FullyDownloaded` import of an HLS download, as the PCD SDK's migration example makes one: the
/// local `.m3u8` with its segments and keys in the same folder. FilePath names the main index (a
/// file whose name ends in `.m3u8`) or the folder holding it (then the main index is the folder's
/// one top-level `.m3u8` that no other top-level playlist names). The main index and every file it
/// names (a master playlist's variant and rendition playlists; their segments, EXT-X-MAP and
/// EXT-X-KEY files) are read with HLSPlaylist and HLSLayout, a file URL as the origin, so each URI
/// must be a relative name in the main index's folder or below it; each file must be a regular file
/// that stays in that folder once symlinks are followed. The lengths of all of them, playlists
/// included, make the import's length (checked against Size). Reading checks everything and writes
/// nothing; PrefetchEngine.storeHLSImport then stores the files as an HLS download does.
struct PrefetchHLSImport {
    /// The main index's file URL (the layout's indexURL) and its bytes as read.
    let indexURL: String
    let indexData: Data
    let layout: HLSLayout
    /// The real path of each resource, by its local name in the layout.
    let sources: [String: String]
    /// The length of the playlists (the main index included) and of the resources.
    let playlistLength: Int64
    let resourceLength: Int64
    /// The length of every file: the import's length, checked against Size.
    var length: Int64 { playlistLength + resourceLength }
    /// How many playlists (the main index included) and resources were read.
    let playlistCount: Int
    var resourceCount: Int { layout.order.count }

    /// True when FilePath is imported as HLS: a folder, or a name ending in `.m3u8`.
    static func applies(to path: String) -> Bool {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return true }
        return (path as NSString).pathExtension.lowercased() == "m3u8"
    }

    /// Reads and checks the HLS download at `path` (a `.m3u8` file or the folder holding it);
    /// throws PrefetchError.invalid naming the first file or URI that breaks a rule.
    init(path given: String) throws {
        let absolute = given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given
        let path = URL(fileURLWithPath: absolute).standardizedFileURL.path
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        let indexPath = exists && isDirectory.boolValue ? try Self.mainIndex(inFolder: path) : path
        let folder = (indexPath as NSString).deletingLastPathComponent
        guard let realFolder = Self.realPath(folder) else { throw PrefetchError.invalid("FilePath's folder '\(folder)' cannot be read") }
        let files = Folder(path: folder, realPath: realFolder)
        let index = try files.regularFile(indexPath, what: "the main index")
        let indexData = try files.playlistData(index, name: (indexPath as NSString).lastPathComponent)
        let indexURL = URL(fileURLWithPath: indexPath).absoluteString
        var playlistLength = Int64(indexData.count)
        var playlistCount = 1
        let layout: HLSLayout
        do {
            layout = try HLSLayout.build(indexURL: indexURL, indexText: String(decoding: indexData, as: UTF8.self)) { url in
                let name = files.name(of: url)
                let data = try files.playlistData(try files.regularFile(files.path(of: url), what: "playlist '\(name)'"), name: name)
                playlistLength += Int64(data.count)
                playlistCount += 1
                return String(decoding: data, as: UTF8.self)
            }
        } catch let invalid as HLSPlaylist.Invalid {
            throw PrefetchError.invalid("HLS import: \(invalid.description)")
        }
        var sources: [String: String] = [:]
        var resourceLength: Int64 = 0
        for name in layout.order {
            guard let url = layout.resources[name] else { continue }
            let file = try files.regularFile(files.path(of: url), what: "'\(files.name(of: url))'")
            sources[name] = file.realPath
            resourceLength += file.length
        }
        self.indexURL = indexURL
        self.indexData = indexData
        self.layout = layout
        self.sources = sources
        self.playlistLength = playlistLength
        self.resourceLength = resourceLength
        self.playlistCount = playlistCount
    }

    /// What the import holds, for a refusal: "N bytes (P playlists and R files)".
    var summary: String {
        "\(length) bytes (\(playlistCount) playlist\(playlistCount == 1 ? "" : "s") and \(resourceCount) file\(resourceCount == 1 ? "" : "s"))"
    }

    /// The folder's main index: its one top-level `.m3u8`, or the one of several no other names.
    static func mainIndex(inFolder folder: String) throws -> String {
        let rule = "a FullyDownloaded folder is an HLS download: its main index at the top, or give the .m3u8 as FilePath"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            .filter { ($0 as NSString).pathExtension.lowercased() == "m3u8" }.sorted()
        guard !names.isEmpty else { throw PrefetchError.invalid("FilePath '\(folder)' is a folder with no .m3u8 playlist at its top (\(rule))") }
        if names.count == 1 { return (folder as NSString).appendingPathComponent(names[0]) }
        guard names.count <= HLSPlaylist.Limits.maxVariants + 1 else {
            throw PrefetchError.invalid("FilePath '\(folder)' holds \(names.count) .m3u8 playlists at its top (\(rule))")
        }
        let paths = names.map { URL(fileURLWithPath: (folder as NSString).appendingPathComponent($0)).standardizedFileURL.path }
        var named: Set<String> = []
        for path in paths {
            // A playlist that cannot be read names nothing here; if it is the main index, the import says why.
            let url = URL(fileURLWithPath: path).absoluteString
            guard FileManager.default.isReadableFile(atPath: path), FileDownloader.fileLength(path) <= HLSPlaylist.Limits.maxPlaylistBytes,
                let data = FileManager.default.contents(atPath: path),
                let playlist = try? HLSPlaylist(text: String(decoding: data, as: UTF8.self), url: url, origin: url)
            else { continue }
            for reference in playlist.urls { if let target = URL(string: reference)?.standardizedFileURL.path { named.insert(target) } }
        }
        let mains = zip(names, paths).filter { !named.contains($0.1) }.map(\.0)
        guard mains.count == 1, let main = mains.first else {
            throw PrefetchError.invalid(
                "FilePath '\(folder)' holds \(names.count) .m3u8 playlists at its top and \(mains.count) of them (\(mains.prefix(8).joined(separator: ", "))) are named by no other: give the main index as FilePath"
            )
        }
        return (folder as NSString).appendingPathComponent(main)
    }

    /// The real path of `path` (symlinks followed), nil when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The imported folder: paths and names of its files, and the checks each file passes.
    struct Folder {
        /// The folder as FilePath names it, and with symlinks followed.
        let path: String
        let realPath: String

        /// The path of a file URL the layout holds (inside the folder: HLSPlaylist checked it).
        func path(of url: String) -> String { URL(string: url)?.standardizedFileURL.path ?? url }

        /// The name of a file URL relative to the folder, as a refusal names it.
        func name(of url: String) -> String {
            let full = path(of: url)
            return full.hasPrefix(path + "/") ? String(full.dropFirst(path.count + 1)) : full
        }

        /// The real path and length of the regular file at `path` in the folder.
        func regularFile(_ path: String, what: String) throws -> (realPath: String, length: Int64) {
            var status = stat()
            guard lstat(path, &status) == 0 else { throw PrefetchError.invalid("HLS import: \(what) is missing") }
            guard let real = PrefetchHLSImport.realPath(path) else {
                throw PrefetchError.invalid("HLS import: \(what) is a symlink to nothing")
            }
            guard real.hasPrefix(realPath.hasSuffix("/") ? realPath : realPath + "/") else {
                throw PrefetchError.invalid("HLS import: \(what) is a symlink that leaves the folder (to \(real))")
            }
            guard stat(real, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                throw PrefetchError.invalid("HLS import: \(what) is not a regular file")
            }
            return (real, Int64(status.st_size))
        }

        /// A playlist's bytes, at most HLSPlaylist.Limits.maxPlaylistBytes.
        func playlistData(_ file: (realPath: String, length: Int64), name: String) throws -> Data {
            guard file.length <= HLSPlaylist.Limits.maxPlaylistBytes else {
                throw PrefetchError.invalid("HLS import: playlist '\(name)' is larger than \(HLSPlaylist.Limits.maxPlaylistBytes) bytes")
            }
            guard let data = FileManager.default.contents(atPath: file.realPath) else {
                throw PrefetchError.invalid("HLS import: playlist '\(name)' cannot be read (check its permissions)")
            }
            return data
        }
    }
}

extension PrefetchEngine {
    /// Stores a checked HLS import as item `id`'s files, as an HLS download leaves them: each
    /// resource copied to `<item>/hls/` under its local name, `hls/layout.json`, and the main index
    /// as the `hls_main_index` file, done, with the import's length as its bytes. A failure
    /// (a file changed or vanished since it was read, a full disk) removes what was written.
    func storeHLSImport(_ source: PrefetchHLSImport, id: String) throws -> PrefetchFile {
        let itemFolder = folder(id)
        let hls = hlsFolder(id)
        let folderExisted = FileManager.default.fileExists(atPath: itemFolder)
        var file = PrefetchFile(
            role: "hls_main_index", index: 0, url: source.indexURL, size: Int64(source.indexData.count), sha256: nil, autoDownload: true,
            localPath: localPath(item: id, index: 0, role: "hls_main_index", url: source.indexURL), bytesDownloaded: 0, done: false,
            validator: nil)
        do {
            try FileManager.default.createDirectory(atPath: itemFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try? FileManager.default.removeItem(atPath: hls)
            try FileManager.default.createDirectory(atPath: hls, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            var copied: Int64 = 0
            for name in source.layout.order {
                guard let from = source.sources[name] else { continue }
                let target = (hls as NSString).appendingPathComponent(name)
                try FileManager.default.copyItem(atPath: from, toPath: target)
                copied += FileDownloader.fileLength(target)
            }
            guard copied == source.resourceLength else {
                throw PrefetchError.invalid(
                    "HLS import: the files changed while they were copied (\(copied) bytes copied, \(source.resourceLength) read before)")
            }
            try source.indexData.write(to: URL(fileURLWithPath: file.localPath), options: .atomic)
            try PrefetchStore.encoder.encode(source.layout).write(to: URL(fileURLWithPath: hlsLayoutPath(id)), options: .atomic)
        } catch {
            if folderExisted {
                try? FileManager.default.removeItem(atPath: hls)
                try? FileManager.default.removeItem(atPath: file.localPath)
            } else {
                try? FileManager.default.removeItem(atPath: itemFolder)
            }
            throw error
        }
        file.bytesDownloaded = source.length
        file.done = true
        return file
    }
}
