import Foundation

/// The images of previewed messages (`CampaignPreview`): fetched through the host's HTTP
/// (`HTTPFetcher`, same-host redirects only) when the web hub's allow-list allows their URL, and
/// kept in the data directory (`campaign-images/<sha256 of the URL>`), so a message previewed once
/// shows its image offline.
///
/// An image URL is allowed when it is http(s) and its host is one of `hub.whitelist_domains` (or a
/// subdomain of one), or the URL is one of `hub.whitelist_urls` verbatim. An image is at most
/// `maxImageBytes` (the fetch stops reading past it) and must be a PNG, JPEG, GIF or WebP by its
/// own bytes, whatever the server calls it. The cache keeps at most `maxCacheBytes`, the oldest
/// files going first. Nothing here throws: a refused or failed image is `.unavailable` with why,
/// which the page shows in its place.
public final class CampaignImageCache: Sendable {
    /// The folder of the cached images.
    public let folder: String
    /// Hosts whose images may be fetched (lower case; subdomains too).
    public let allowedDomains: [String]
    /// URLs that may be fetched, verbatim.
    public let allowedURLs: [String]
    /// The largest image read.
    public let maxImageBytes: Int
    /// The most the cache folder keeps.
    public let maxCacheBytes: Int
    /// The longest a fetch may take, redirects included.
    public let timeoutSeconds: Double
    private let http: HTTPFetcher

    /// The largest image by default: 2 MiB.
    public static let defaultMaxImageBytes = 2 << 20
    /// The cache's size by default: 64 MiB.
    public static let defaultMaxCacheBytes = 64 << 20

    package init(
        folder: String, allowedDomains: [String], allowedURLs: [String], http: HTTPFetcher = HTTPFetcher(),
        maxImageBytes: Int = CampaignImageCache.defaultMaxImageBytes, maxCacheBytes: Int = CampaignImageCache.defaultMaxCacheBytes,
        timeoutSeconds: Double = 15
    ) {
        self.folder = folder
        self.allowedDomains = allowedDomains.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        self.allowedURLs = allowedURLs
        self.http = http
        self.maxImageBytes = maxImageBytes
        self.maxCacheBytes = maxCacheBytes
        self.timeoutSeconds = timeoutSeconds
    }

    /// The cache of `manifest`'s data directory, with the allow-list of its `hub:` section.
    public convenience init(manifest: HostManifest) {
        self.init(
            folder: (manifest.dataDirectory as NSString).appendingPathComponent("campaign-images"),
            allowedDomains: manifest.hub.whitelistDomains, allowedURLs: manifest.hub.whitelistURLs)
    }

    /// Why `url` may not be fetched; nil when it may.
    public func refusal(of url: String) -> String? {
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = parsed.host?.lowercased(), !host.isEmpty
        else {
            return "not an http(s) URL"
        }
        if allowedURLs.contains(url) { return nil }
        if allowedDomains.contains(where: { host == $0 || host.hasSuffix("." + $0) }) { return nil }
        return "\(host) is not in hub.whitelist_domains, nor the URL in hub.whitelist_urls"
    }

    /// The image at `url` for a preview: from the cache when it is there, else fetched (when the
    /// allow-list allows it) and cached. Nil `url`: `.none`.
    public func image(for url: String?) -> CampaignPreview.Image {
        guard let url, !url.isEmpty else { return .none }
        if let refusal = refusal(of: url) { return .unavailable(url: url, reason: refusal) }
        let path = (folder as NSString).appendingPathComponent(SHA256.hex(of: Data(url.utf8)))
        if let cached = try? BoundedFile.read(path: path, maxBytes: maxImageBytes), let type = Self.imageType(cached) {
            return .loaded(url: url, mimeType: type, bytes: Data(cached))
        }
        let response: HTTPFetcher.Response
        switch http.fetch("GET", url, headers: ["Accept": "image/*"], timeoutSeconds: timeoutSeconds, maxBodyBytes: maxImageBytes) {
        case .success(let answer): response = answer
        case .failure(let failure): return .unavailable(url: url, reason: "\(failure)")
        }
        guard response.status == 200 else { return .unavailable(url: url, reason: "the server answered \(response.status)") }
        guard let type = Self.imageType(Array(response.body)) else {
            return .unavailable(url: url, reason: "the answer is not a PNG, JPEG, GIF or WebP image")
        }
        store(response.body, at: path)
        return .loaded(url: url, mimeType: type, bytes: response.body)
    }

    /// The image type of `bytes` by their signature: PNG, JPEG, GIF or WebP; nil for anything else.
    static func imageType(_ bytes: [UInt8]) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        return nil
    }

    /// Writes an image to the cache (a failure only costs the next preview a fetch), then removes
    /// the oldest files while the folder holds more than `maxCacheBytes`.
    private func store(_ data: Data, at path: String) {
        let manager = FileManager.default
        do {
            try manager.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try DurableFile.write(data, to: path, atomically: true)
        } catch {
            return
        }
        guard let names = try? manager.contentsOfDirectory(atPath: folder) else { return }
        var files: [(path: String, size: Int, modified: Date)] = names.compactMap { name in
            let file = (folder as NSString).appendingPathComponent(name)
            guard let attributes = try? manager.attributesOfItem(atPath: file) else { return nil }
            return (file, (attributes[.size] as? NSNumber)?.intValue ?? 0, attributes[.modificationDate] as? Date ?? .distantPast)
        }
        var total = files.reduce(0) { $0 + $1.size }
        files.sort { $0.modified < $1.modified }
        for file in files where total > maxCacheBytes && file.path != path {
            try? manager.removeItem(atPath: file.path)
            total -= file.size
        }
    }
}
