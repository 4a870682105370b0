import Foundation

/// A small, bounded M3U8 reader (RFC 8216) for the prefetch engine's HLS items: it finds every URI
/// a playlist names (variant and rendition playlists of a master playlist; segments, EXT-X-MAP
/// initialisation sections and EXT-X-KEY keys of a media playlist), resolves each against the
/// playlist's URL, and rewrites the text so that each URI becomes a local name chosen by hubhost.
/// The catalog and the origin are not trusted: the text is bounded in bytes and URIs, a URI must
/// resolve to http(s) on the same origin (scheme, host, port) as the item's main index, and the
/// local names never come from the playlist, so nothing in it can name a path on this disk.
/// A file URL as the origin reads a folder on this disk instead (an imported HLS download): each
/// URI must then be a relative name of a file in the origin's folder or below it (no scheme, no
/// leading `/`, no `..` segment even percent-encoded, no query or fragment).
package struct HLSPlaylist: Sendable, Equatable {
    /// The limits of what one playlist, and one item, may hold.
    package enum Limits {
        /// The largest playlist text accepted (a two-hour VOD with 1 s segments is about 300 KiB).
        package static let maxPlaylistBytes = 1 << 20
        /// The most URIs (segments, keys, maps) one media playlist may name.
        package static let maxURIsPerPlaylist = 20_000
        /// The most playlists one master playlist may name (variants and renditions).
        package static let maxVariants = 64
        /// The most resources (segments, keys, maps) of one item, all playlists together.
        package static let maxResourcesPerItem = 100_000
        /// The largest resource (segment, key, map) downloaded or relayed.
        package static let maxResourceBytes: Int64 = 512 << 20
    }

    package struct Invalid: Error, CustomStringConvertible, Equatable {
        package var description: String
    }

    /// Where a URI sits in the text: a line of its own, or the URI="..." attribute of a tag.
    enum Place: Equatable { case line, attribute }

    /// One URI of the playlist: its line, where on the line, and the absolute URL it resolves to.
    struct Reference: Equatable {
        var line: Int
        var place: Place
        var url: String
        /// Seconds of play before it (the #EXTINF durations of the segments above); 0 in a master.
        var start: Double
    }

    /// A master playlist names playlists (variants, renditions); a media playlist names segments.
    package let isMaster: Bool
    let lines: [String]
    let references: [Reference]

    /// Parses `text`, fetched from `url`; `origin` is the URL whose scheme, host and port every
    /// URI must share (the item's main index).
    package init(text: String, url: String, origin: String) throws {
        guard text.utf8.count <= Limits.maxPlaylistBytes else {
            throw Invalid(description: "playlist \(url.prefix(200)) is larger than \(Limits.maxPlaylistBytes) bytes")
        }
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).map(String.init)
        guard lines.first?.trimmingCharacters(in: .whitespaces).hasPrefix("#EXTM3U") == true else {
            throw Invalid(description: "\(url.prefix(200)) is not an M3U8 playlist (no #EXTM3U first line)")
        }
        guard let base = URL(string: url), let home = URL(string: origin) else { throw Invalid(description: "bad playlist URL \(url.prefix(200))") }
        let isMaster = lines.contains {
            $0.hasPrefix("#EXT-X-STREAM-INF") || $0.hasPrefix("#EXT-X-MEDIA:") || $0.hasPrefix("#EXT-X-I-FRAME-STREAM-INF")
        }
        var references: [Reference] = []
        var clock = 0.0
        var segmentDuration: Double?
        func add(_ uri: String, line: Int, place: Place) throws {
            guard references.count < (isMaster ? Limits.maxVariants : Limits.maxURIsPerPlaylist) else {
                throw Invalid(
                    description: "playlist \(url.prefix(200)) names more than \(isMaster ? Limits.maxVariants : Limits.maxURIsPerPlaylist) URIs")
            }
            references.append(Reference(line: line, place: place, url: try Self.resolve(uri, against: base, origin: home), start: clock))
        }
        for (index, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#EXTINF:") {
                // "#EXTINF:<seconds>,<title>": the next segment's duration, range-checked.
                let number = line.dropFirst(8).prefix { $0 != "," }.trimmingCharacters(in: .whitespaces)
                guard let seconds = Double(number), seconds.isFinite, (0...86_400).contains(seconds) else {
                    throw Invalid(description: "playlist \(url.prefix(200)): bad #EXTINF duration '\(number.prefix(40))'")
                }
                segmentDuration = seconds
                continue
            }
            if line.hasPrefix("#") {
                // Tags whose URI attribute names a resource: renditions and I-frame playlists (master),
                // initialisation sections and keys (media). Other tags carry no URI to follow.
                let tags = isMaster ? ["#EXT-X-MEDIA:", "#EXT-X-I-FRAME-STREAM-INF:"] : ["#EXT-X-MAP:", "#EXT-X-KEY:"]
                if tags.contains(where: { line.hasPrefix($0) }), let uri = Self.uriAttribute(line) {
                    try add(uri, line: index, place: .attribute)
                }
                if !isMaster, line.hasPrefix("#EXT-X-STREAM-INF") {
                    throw Invalid(description: "playlist \(url.prefix(200)) mixes master and media tags")
                }
                continue
            }
            try add(line, line: index, place: .line)
            if !isMaster {
                clock += segmentDuration ?? 0
                segmentDuration = nil
            }
        }
        self.isMaster = isMaster
        self.lines = lines
        self.references = references
    }

    /// The absolute URLs the playlist names, in order (a URL named twice is listed twice).
    package var urls: [String] { references.map(\.url) }

    /// The text with each URI replaced by `localName(url)`; the rest of every line kept as it is.
    package func rewritten(_ localName: (String) -> String) -> String {
        var out = lines
        for reference in references {
            let name = localName(reference.url)
            switch reference.place {
            case .line: out[reference.line] = name
            case .attribute: out[reference.line] = Self.replacingURIAttribute(out[reference.line], with: name)
            }
        }
        return out.joined(separator: "\n")
    }

    /// The absolute URL of `uri`, which must be http(s) on the origin's scheme, host and port (a
    /// file origin: a file in the origin's folder or below).
    static func resolve(_ uri: String, against base: URL, origin: URL) throws -> String {
        if origin.isFileURL { return try resolveInFolder(uri, against: base, origin: origin) }
        guard uri.utf8.count <= 4096, let resolved = URL(string: uri, relativeTo: base)?.absoluteURL,
            let scheme = resolved.scheme?.lowercased(), ["http", "https"].contains(scheme), let host = resolved.host?.lowercased()
        else {
            throw Invalid(description: "playlist URI '\(uri.prefix(200))' is not an http(s) URL")
        }
        func port(_ url: URL) -> Int? { url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80) }
        guard scheme == origin.scheme?.lowercased(), host == origin.host?.lowercased(), port(resolved) == port(origin) else {
            throw Invalid(
                description: "playlist URI '\(uri.prefix(200))' points to another origin than the item's main index (\(origin.host ?? "?"))")
        }
        return resolved.absoluteString
    }

    /// The file URL of `uri`, a relative name in the folder of `origin` (a file URL) or below it.
    static func resolveInFolder(_ uri: String, against base: URL, origin: URL) throws -> String {
        let folder = origin.deletingLastPathComponent().standardizedFileURL.path
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        let playlist =
            base.standardizedFileURL.path.hasPrefix(prefix) ? String(base.standardizedFileURL.path.dropFirst(prefix.count)) : base.lastPathComponent
        let shown = "playlist URI '\(uri.prefix(200))' in \(playlist.prefix(200))"
        let rule = "an imported HLS folder names its files by relative names, in the folder or below it"
        guard uri.utf8.count <= 4096, let reference = URL(string: uri) else { throw Invalid(description: "\(shown) is not a valid URI") }
        guard reference.scheme == nil, !uri.hasPrefix("/") else { throw Invalid(description: "\(shown) is not a relative name (\(rule))") }
        guard !(uri.removingPercentEncoding ?? uri).split(separator: "/").contains("..") else {
            throw Invalid(description: "\(shown) leaves the folder with '..' (\(rule))")
        }
        guard !uri.contains("?"), !uri.contains("#") else {
            throw Invalid(description: "\(shown) has a query or fragment: it is not a file name (\(rule))")
        }
        guard let resolved = URL(string: uri, relativeTo: base)?.absoluteURL.standardizedFileURL, resolved.isFileURL,
            resolved.path.hasPrefix(prefix)
        else {
            throw Invalid(description: "\(shown) resolves outside the folder (\(rule))")
        }
        return resolved.absoluteString
    }

    /// The value of a tag's URI="..." attribute (an attribute list: NAME=VALUE pairs, commas
    /// inside quoted strings do not separate), nil when the tag has none.
    static func uriAttribute(_ line: String) -> String? {
        uriRange(line).map { String(line[$0]) }
    }

    static func replacingURIAttribute(_ line: String, with value: String) -> String {
        guard let range = uriRange(line) else { return line }
        var copy = line
        copy.replaceSubrange(range, with: value)
        return copy
    }

    /// The range of the URI attribute's quoted value in a tag line.
    private static func uriRange(_ line: String) -> Range<String.Index>? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        var index = line.index(after: colon)
        var inQuotes = false
        var attributeStart = index
        while index < line.endIndex {
            let character = line[index]
            if character == "\"" { inQuotes.toggle() }
            if !inQuotes && character == "," { attributeStart = line.index(after: index) }
            if !inQuotes, character == "=", line[attributeStart..<index].trimmingCharacters(in: .whitespaces) == "URI" {
                let open = line.index(after: index)
                guard open < line.endIndex, line[open] == "\"" else { return nil }
                let valueStart = line.index(after: open)
                guard let close = line[valueStart...].firstIndex(of: "\"") else { return nil }
                return valueStart..<close
            }
            index = line.index(after: index)
        }
        return nil
    }
}
