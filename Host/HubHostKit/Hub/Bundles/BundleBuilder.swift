import Foundation
import GRDB
import Yams

/// Builds a content bundle (ContentBundle.schema, one SQLite file) from a folder, one folder level
/// per hierarchy level (see README "Content bundles"):
///
///     DIR/bundle.yaml                       version, content_source (optional)
///     DIR/notifications.yaml                [{id, at, message, action_uri}] (optional)
///     DIR/resources/**                      CSS, images, ... stored as `resources/<path>`
///     DIR/<hub>/_index.md|_index.yaml       the hub's title, tags, order (optional)
///     DIR/<hub>/<channel>/_index.md|.yaml   the channel's title, tags, order (optional)
///     DIR/<hub>/<channel>/<article>.md|.html  front matter: title, tags, order, source_url
///
/// Every problem is collected (file, and line for YAML) and reported together; nothing is silently
/// dropped: a stray file, an empty folder, an unknown front-matter key or a folder too deep is an
/// error naming it. Hidden files and folders (`.name`) are ignored.
package enum BundleBuilder {
    package struct Summary: Codable, Equatable, Sendable {
        package var version: String
        package var contentSource: String
        package var created: String
        package var hubs: Int
        package var channels: Int
        package var articles: Int
        package var resources: Int
        package var notifications: Int
    }

    package struct Problem: Codable, Equatable, Sendable, CustomStringConvertible {
        package var path: String
        package var line: Int?
        package var message: String
        package var description: String { "\(path)\(line.map { ":\($0)" } ?? ""): \(message)" }
    }

    package struct BuildError: Error, CustomStringConvertible {
        package var problems: [Problem]
        package var description: String {
            "the bundle was not built (\(problems.count) problem\(problems.count == 1 ? "" : "s")):\n"
                + problems.map { "  \($0)" }.joined(separator: "\n")
        }
    }

    /// Builds the bundle from `directory` into `output` (replaced). `version` overrides bundle.yaml's;
    /// with neither, the version is the creation time. Throws BuildError listing every problem.
    @discardableResult
    package static func build(from directory: String, to output: String, version: String? = nil, now: Date = Date()) throws -> Summary {
        var reader = ContentFolderReader(root: directory)
        let content = reader.read()
        guard reader.problems.isEmpty, let content else { throw BuildError(problems: reader.problems) }
        let created = ISO8601DateFormatter().string(from: now)
        let summary = Summary(
            version: version ?? content.version ?? created, contentSource: content.contentSource ?? (directory as NSString).lastPathComponent,
            created: created, hubs: content.hubs.count, channels: content.hubs.reduce(0) { $0 + $1.channels.count },
            articles: content.hubs.reduce(0) { $0 + $1.channels.reduce(0) { $0 + $1.articles.count } },
            resources: content.resources.count, notifications: content.notifications.count)
        try write(content, summary: summary, to: output)
        return summary
    }

    /// Builds, signs with the PEM private key at `privateKeyPath` and writes the metadata document to
    /// `FILE.json` (BundleMetadata.path(besideBundle:)). The key is checked before anything is built.
    package static func buildSigned(
        from directory: String, to output: String, privateKeyPath: String, version: String? = nil,
        now: Date = Date()
    ) throws -> (summary: Summary, metadata: BundleMetadata) {
        _ = try BundleSignature.sign(Data(), privateKeyAt: privateKeyPath)
        let summary = try build(from: directory, to: output, version: version, now: now)
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let signature = try BundleSignature.sign(data, privateKeyAt: privateKeyPath)
        let metadata = BundleMetadata.describing(data, version: summary.version, created: summary.created, signature: signature)
        try DurableFile.write(metadata.encoded(), to: BundleMetadata.path(besideBundle: output), atomically: true)
        return (summary, metadata)
    }

    private static func write(_ content: ContentFolderReader.Content, summary: Summary, to output: String) throws {
        let temporary = output + ".building-\(getpid())"
        try? FileManager.default.removeItem(atPath: temporary)
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        do {
            let queue = try DatabaseQueue(path: temporary)
            try queue.write { db in
                try db.execute(sql: ContentBundle.schema)
                for (key, value) in [
                    (ContentBundle.MetadataKey.version, summary.version), (ContentBundle.MetadataKey.created, summary.created),
                    (ContentBundle.MetadataKey.contentSource, summary.contentSource), (ContentBundle.MetadataKey.formatVersion, "1")
                ] {
                    try db.execute(sql: "INSERT INTO metadata VALUES (?, ?)", arguments: [key, value])
                }
                for (h, hub) in content.hubs.enumerated() {
                    try db.execute(sql: "INSERT INTO hubs VALUES (?, ?, ?, ?)", arguments: [hub.id, hub.title, json(hub.tags), h])
                    for (c, channel) in hub.channels.enumerated() {
                        try db.execute(
                            sql: "INSERT INTO channels VALUES (?, ?, ?, ?, ?)",
                            arguments: [channel.id, hub.id, channel.title, json(channel.tags), c])
                        for (a, article) in channel.articles.enumerated() {
                            try db.execute(
                                sql: "INSERT INTO articles VALUES (?, ?, ?, ?, ?, ?, ?)",
                                arguments: [article.id, channel.id, article.title, json(article.tags), a, article.html, article.sourceURL])
                        }
                    }
                }
                for resource in content.resources {
                    try db.execute(sql: "INSERT INTO resources VALUES (?, ?, ?)", arguments: [resource.path, resource.mimeType, resource.data])
                }
                for n in content.notifications {
                    try db.execute(sql: "INSERT INTO notifications VALUES (?, ?, ?, ?)", arguments: [n.id, n.fireAtMs, n.message, n.actionURI])
                }
            }
            try queue.close()
        } catch {
            throw BuildError(problems: [Problem(path: output, line: nil, message: "cannot write the bundle: \(error)")])
        }
        guard rename(temporary, output) == 0 else {
            throw BuildError(problems: [Problem(path: output, line: nil, message: "cannot write the bundle: \(String(cString: strerror(errno)))")])
        }
    }

    private static func json(_ tags: [String]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: tags)) ?? Data("[]".utf8), as: UTF8.self)
    }

    /// The MIME type a resource is served with, from its extension.
    package static func mimeType(forPath path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "css": return "text/css"
        case "js", "mjs": return "text/javascript"
        case "html", "htm": return "text/html"
        case "json": return "application/json"
        case "txt": return "text/plain"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "svg": return "image/svg+xml"
        case "ico": return "image/x-icon"
        case "avif": return "image/avif"
        case "woff": return "font/woff"
        case "woff2": return "font/woff2"
        case "ttf": return "font/ttf"
        case "otf": return "font/otf"
        case "mp4": return "video/mp4"
        case "webm": return "video/webm"
        case "mp3": return "audio/mpeg"
        case "pdf": return "application/pdf"
        default: return "application/octet-stream"
        }
    }
}
