import Foundation

/// An HLS item as hubhost serves and stores it: the main index and the playlists it names, each
/// rewritten so that every URI is a local name, and the origin URL of each local resource
/// (segment, key, initialisation section). Local names are made by hubhost, never taken from a
/// playlist: `index.m3u8` (the main index), `v<K>.m3u8` (the K-th playlist a master names),
/// `m-<N>.<ext>` (the N-th resource of a media main index) and `v<K>-<N>.<ext>` (of playlist K);
/// the same URL named twice gets one name. The names are the same whether the layout is built at
/// download time (kept as `hls/layout.json` in the item's folder) or for playback from the origin.
package struct HLSLayout: Codable, Sendable, Equatable {
    /// The catalog URL of the main index the layout was built from.
    package var indexURL: String
    /// Local playlist name → rewritten text.
    package var playlists: [String: String]
    /// Local resource name → origin URL.
    package var resources: [String: String]
    /// Resource names in playlist order: the order a download fetches them.
    package var order: [String]
    /// Resource name → seconds of play before it in its playlist (the earliest when named twice):
    /// a partial download by seconds fetches the resources that start before N.
    package var starts: [String: Double]? = nil

    /// The local name of the main index.
    package static let indexName = "index.m3u8"

    /// Builds the layout of the main index `indexText` fetched from `indexURL`; `fetch` gets the
    /// text of a playlist the main index names (a master playlist's variants), one after another.
    /// Throws HLSPlaylist.Invalid for a playlist that breaks the rules or limits.
    package static func build(indexURL: String, indexText: String, fetch: (String) async throws -> String) async throws -> HLSLayout {
        var builder = try Builder(indexURL: indexURL, indexText: indexText)
        for (index, variant) in builder.variants.enumerated() {
            try builder.addVariant(index, text: try await fetch(variant.url))
        }
        return builder.layout
    }

    /// The same with `read` giving a variant's text at once: the playlists of a folder on this
    /// disk (PrefetchEngine's HLS import, whose `indexURL` is a file URL).
    package static func build(indexURL: String, indexText: String, read: (String) throws -> String) throws -> HLSLayout {
        var builder = try Builder(indexURL: indexURL, indexText: indexText)
        for (index, variant) in builder.variants.enumerated() {
            try builder.addVariant(index, text: try read(variant.url))
        }
        return builder.layout
    }

    /// A layout as it is built: the main index parsed and rewritten (a media playlist's resources
    /// named), then each variant of a master playlist added in order.
    private struct Builder {
        var layout: HLSLayout
        /// A master playlist's variants: local name and URL, in the order the master names them.
        var variants: [(name: String, url: String)] = []
        private var nameOf: [String: String] = [:]

        init(indexURL: String, indexText: String) throws {
            let main = try HLSPlaylist(text: indexText, url: indexURL, origin: indexURL)
            layout = HLSLayout(indexURL: indexURL, playlists: [:], resources: [:], order: [], starts: [:])
            if main.isMaster {
                var variantOf: [String: String] = [:]
                var variants: [(name: String, url: String)] = []
                layout.playlists[HLSLayout.indexName] = main.rewritten { url in
                    if let name = variantOf[url] { return name }
                    let name = "v\(variants.count).m3u8"
                    variantOf[url] = name
                    variants.append((name, url))
                    return name
                }
                self.variants = variants
            } else {
                layout.playlists[HLSLayout.indexName] = addResources(main, prefix: "m")
            }
        }

        /// Adds variant `index` (of `variants`) from its text.
        mutating func addVariant(_ index: Int, text: String) throws {
            let variant = variants[index]
            let playlist = try HLSPlaylist(text: text, url: variant.url, origin: layout.indexURL)
            guard !playlist.isMaster else {
                throw HLSPlaylist.Invalid(description: "variant \(variant.url.prefix(200)) is a master playlist too")
            }
            layout.playlists[variant.name] = addResources(playlist, prefix: "v\(index)")
            guard layout.resources.count <= HLSPlaylist.Limits.maxResourcesPerItem else {
                throw HLSPlaylist.Invalid(description: "the item names more than \(HLSPlaylist.Limits.maxResourcesPerItem) segments")
            }
        }

        /// Names the playlist's resources (a URL named before keeps its name) and returns its text
        /// rewritten with those names.
        private mutating func addResources(_ playlist: HLSPlaylist, prefix: String) -> String {
            var count = 0
            var layout = self.layout
            var nameOf = self.nameOf
            let text = playlist.rewritten { url in
                if let name = nameOf[url] { return name }
                let name = "\(prefix)-\(count).\(HLSLayout.extensionOf(url))"
                count += 1
                nameOf[url] = name
                layout.resources[name] = url
                layout.order.append(name)
                return name
            }
            for reference in playlist.references {
                guard let name = nameOf[reference.url] else { continue }
                let earliest = min(layout.starts?[name] ?? reference.start, reference.start)
                layout.starts?[name] = earliest
            }
            self.layout = layout
            self.nameOf = nameOf
            return text
        }
    }

    /// A short lowercase extension from the URL's path (ts, m4s, aac, key...), else "bin".
    static func extensionOf(_ url: String) -> String {
        let ext = (URL(string: url)?.pathExtension ?? "").lowercased()
        return (1...8).contains(ext.count) && ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) ? ext : "bin"
    }

    /// True for a name this layout may hold: the grammar above, so a request's name can be
    /// checked before any lookup (and never reaches the file system unless the layout lists it).
    package static func isLocalName(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count), name != "layout.json" else { return false }
        return name.unicodeScalars.allSatisfy { ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || $0 == "-" || $0 == "." }
            && !name.hasPrefix(".") && !name.contains("..")
    }

    /// The media type of a local name, by its extension.
    package static func contentType(_ name: String) -> String {
        switch (name as NSString).pathExtension {
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "ts": return "video/mp2t"
        case "aac": return "audio/aac"
        case "m4s", "mp4", "m4v": return "video/mp4"
        case "m4a": return "audio/mp4"
        case "vtt": return "text/vtt"
        default: return "application/octet-stream"
        }
    }
}
