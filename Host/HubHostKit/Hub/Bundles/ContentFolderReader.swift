import Foundation
import Yams

/// Reads a content folder (the layout BundleBuilder documents) into hubs, channels, articles,
/// resources and notifications, collecting every problem with its file and line.
struct ContentFolderReader {
    struct Article {
        var id: String
        var title: String
        var tags: [String]
        var html: String
        var sourceURL: String?
    }
    struct Channel {
        var id: String
        var title: String
        var tags: [String]
        var articles: [Article]
    }
    struct Hub {
        var id: String
        var title: String
        var tags: [String]
        var channels: [Channel]
    }
    struct Resource {
        var path: String
        var mimeType: String
        var data: Data
    }
    struct Content {
        var version: String?
        var contentSource: String?
        var hubs: [Hub]
        var resources: [Resource]
        var notifications: [ContentBundle.ScheduledNotification]
    }

    /// Front matter (or an _index.yaml) after validation.
    struct FrontMatter {
        var title: String?
        var tags: [String] = []
        var order: Int?
        var sourceURL: String?
    }

    static let articleExtensions = ["md", "markdown", "html", "htm"]
    static let indexFiles = ["_index.md", "_index.yaml", "_index.yml"]

    let root: String
    private(set) var problems: [BundleBuilder.Problem] = []

    init(root: String) { self.root = root }

    mutating func read() -> Content? {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isFolder), isFolder.boolValue else {
            report(root, "no such folder; give the content folder (DIR/<hub>/<channel>/<article>.md)")
            return nil
        }
        var content = Content(hubs: [], resources: [], notifications: [])
        var hubs: [(order: Int?, hub: Hub)] = []
        for name in entries(root) {
            let path = join(root, name)
            switch (name, isDirectory(path)) {
            case ("bundle.yaml", false), ("bundle.yml", false): readBundleFile(path, into: &content)
            case ("notifications.yaml", false), ("notifications.yml", false): content.notifications = readNotifications(path)
            case ("resources", true): content.resources = readResources(path)
            case (_, true):
                if let hub = readHub(path, name: name) { hubs.append(hub) }
            case (_, false):
                report(
                    path,
                    "a file at the hub level; hubs are folders (DIR/<hub>/<channel>/<article>.md), styles and images go in DIR/resources/, settings in DIR/bundle.yaml"
                )
            }
        }
        if hubs.isEmpty && problems.isEmpty { report(root, "no hubs: make one folder per hub, with one folder per channel holding the articles") }
        content.hubs = sorted(hubs)
        return content
    }

    // MARK: Hierarchy

    private mutating func readHub(_ path: String, name: String) -> (Int?, Hub)? {
        guard checkName(name, at: path) else { return nil }
        var index = FrontMatter()
        var channels: [(order: Int?, channel: Channel)] = []
        var channelFolders = 0
        for entry in entries(path) {
            let child = join(path, entry)
            if Self.indexFiles.contains(entry) && !isDirectory(child) {
                index = readIndex(child, kind: "hub")
            } else if isDirectory(child) {
                channelFolders += 1
                if let channel = readChannel(child, hubID: name, name: entry) { channels.append(channel) }
            } else {
                report(
                    child,
                    "a file at the channel level; channels are folders inside the hub (\(name)/<channel>/<article>.md), only _index.md or _index.yaml may sit beside them"
                )
            }
        }
        if entries(path).filter({ Self.indexFiles.contains($0) }).count > 1 { report(path, "more than one _index file; keep one") }
        if channels.isEmpty {
            if channelFolders == 0 { report(path, "the hub has no channels; add a channel folder with articles or remove the folder") }
            return nil
        }
        return (index.order, Hub(id: name, title: index.title ?? name, tags: index.tags, channels: sorted(channels)))
    }

    private mutating func readChannel(_ path: String, hubID: String, name: String) -> (Int?, Channel)? {
        guard checkName(name, at: path) else { return nil }
        let id = hubID + "/" + name
        var index = FrontMatter()
        var articles: [(order: Int?, name: String, article: Article)] = []
        var seen: [String: String] = [:]
        for entry in entries(path) {
            let child = join(path, entry)
            if Self.indexFiles.contains(entry) && !isDirectory(child) {
                index = readIndex(child, kind: "channel")
                continue
            }
            if isDirectory(child) {
                report(
                    child,
                    "a folder inside a channel; articles are files directly in the channel folder (\(id)/<article>.md), resources go in DIR/resources/"
                )
                continue
            }
            let ext = (entry as NSString).pathExtension.lowercased()
            guard Self.articleExtensions.contains(ext) else {
                report(child, "not an article (.md, .markdown, .html or .htm); images and styles go in DIR/resources/")
                continue
            }
            let stem = (entry as NSString).deletingPathExtension
            guard checkName(stem, at: child) else { continue }
            if let other = seen[stem] {
                report(child, "two articles named '\(stem)' (\(other) and \(entry)); article ids come from the file name without its extension")
                continue
            }
            seen[stem] = entry
            if let (order, article) = readArticle(child, id: id + "/" + stem, name: stem, isHTML: ext.hasPrefix("htm")) {
                articles.append((order, stem, article))
            }
        }
        if entries(path).filter({ Self.indexFiles.contains($0) }).count > 1 { report(path, "more than one _index file; keep one") }
        if articles.isEmpty && seen.isEmpty {
            report(path, "the channel has no articles; add .md or .html files or remove the folder")
            return nil
        }
        let ordered = articles.sorted { Self.before(($0.order, $0.name), ($1.order, $1.name)) }.map(\.article)
        return (index.order, Channel(id: id, title: index.title ?? name, tags: index.tags, articles: ordered))
    }

    private mutating func readArticle(_ path: String, id: String, name: String, isHTML: Bool) -> (Int?, Article)? {
        guard let text = readText(path) else { return nil }
        guard let (frontMatter, body, bodyLine) = splitFrontMatter(text, path: path, allowed: ["title", "tags", "order", "source_url"]) else {
            return nil
        }
        let rendered = isHTML ? MarkdownRenderer.Article(html: HTMLSanitizer.sanitize(body), firstHeading: nil) : MarkdownRenderer.renderArticle(body)
        guard rendered.hazards.isEmpty else {
            for hazard in rendered.hazards { report(path, line: hazard.line + bodyLine - 1, hazard.message) }
            return nil
        }
        let title = frontMatter.title ?? rendered.firstHeading ?? name
        return (frontMatter.order, Article(id: id, title: title, tags: frontMatter.tags, html: rendered.html, sourceURL: frontMatter.sourceURL))
    }

    private mutating func readIndex(_ path: String, kind: String) -> FrontMatter {
        guard let text = readText(path) else { return FrontMatter() }
        if path.hasSuffix(".md") {
            return splitFrontMatter(text, path: path, allowed: ["title", "tags", "order"])?.frontMatter ?? FrontMatter()
        }
        return parseFields(text, path: path, lineOffset: 0, allowed: ["title", "tags", "order"]) ?? FrontMatter()
    }

    // MARK: Front matter

    /// Splits `---\n<yaml>\n---\n<body>`; a file that does not start with `---` has no front matter.
    /// Only the front matter is cut into lines; the body is the rest of the text as it is.
    /// `bodyLine`: the file's line the body starts on.
    private mutating func splitFrontMatter(_ text: String, path: String, allowed: [String]) -> (
        frontMatter: FrontMatter, body: String, bodyLine: Int
    )? {
        let utf8 = text.utf8
        var lineStart = utf8.startIndex
        var lineNumber = 0
        var yaml: [Substring] = []
        while true {
            let newline = utf8[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? utf8.endIndex
            var line = text[lineStart..<newline]
            if line.hasSuffix("\r") { line = line.dropLast() }
            lineNumber += 1
            let isFence = line.trimmingCharacters(in: .whitespaces) == "---"
            if lineNumber == 1 {
                guard isFence else { return (FrontMatter(), text, 1) }
            } else if isFence || line == "..." {
                guard let fields = parseFields(yaml.joined(separator: "\n"), path: path, lineOffset: 1, allowed: allowed) else { return nil }
                let bodyStart = newline == utf8.endIndex ? newline : utf8.index(after: newline)
                return (fields, String(text[bodyStart...]), lineNumber + 1)
            } else {
                yaml.append(line)
            }
            guard newline < utf8.endIndex else { break }
            lineStart = utf8.index(after: newline)
        }
        report(path, line: 1, "the front matter starting here is not closed by a '---' line")
        return nil
    }

    /// Parses a YAML mapping of front-matter fields; `lineOffset` maps its lines to the file's.
    private mutating func parseFields(_ yaml: String, path: String, lineOffset: Int, allowed: [String]) -> FrontMatter? {
        guard let node = compose(yaml, path: path, lineOffset: lineOffset) else { return FrontMatter() }
        guard let mapping = node.mapping else {
            report(path, line: line(node, lineOffset), "the front matter must be a mapping of \(allowed.joined(separator: ", "))")
            return nil
        }
        var fields = FrontMatter()
        var ok = true
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            let at = line(keyNode, lineOffset)
            guard allowed.contains(key) else {
                report(path, line: at, "unknown front-matter key '\(key)'; known keys: \(allowed.joined(separator: ", "))")
                ok = false
                continue
            }
            switch key {
            case "title", "source_url":
                guard let text = value.scalar?.string, !text.isEmpty else {
                    report(path, line: at, "'\(key)' must be a non-empty text")
                    ok = false
                    continue
                }
                if key == "title" { fields.title = text } else { fields.sourceURL = text }
            case "order":
                guard let number = value.int else {
                    report(path, line: at, "'order' must be a whole number (lower comes first)")
                    ok = false
                    continue
                }
                fields.order = number
            default:  // tags
                if let list = value.sequence {
                    let tags = list.compactMap { $0.scalar?.string }
                    guard tags.count == list.count, !tags.contains(where: { $0.isEmpty }) else {
                        report(path, line: at, "'tags' must be a list of texts, e.g. [sports, football]")
                        ok = false
                        continue
                    }
                    fields.tags = tags
                } else if let text = value.scalar?.string {
                    fields.tags = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                } else {
                    report(path, line: at, "'tags' must be a list of texts, e.g. [sports, football]")
                    ok = false
                }
            }
        }
        return ok ? fields : nil
    }

    private mutating func compose(_ yaml: String, path: String, lineOffset: Int) -> Node? {
        if let problem = YAMLLimits.problem(yaml) {
            report(path, line: lineOffset + 1, problem)
            return nil
        }
        do {
            return try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            switch error {
            case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
                .composer(let context, let problem, let mark, _):
                let detail = context.map { " (\($0.text) that starts on line \($0.mark.line + lineOffset))" } ?? ""
                // An error found at the end of the YAML is reported on its last line, not on the closing ---.
                let lastLine = lineOffset + max(1, yaml.split(separator: "\n", omittingEmptySubsequences: false).count)
                report(path, line: min(mark.line + lineOffset, lastLine), "invalid YAML: \(problem)\(detail)")
            case .duplicatedKeysInMapping(let duplicates, let context):
                report(path, line: context.mark.line + lineOffset, "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", "))")
            default:
                report(path, line: lineOffset + 1, "invalid YAML: \(error)")
            }
        } catch {
            report(path, line: lineOffset + 1, "invalid YAML: \(error)")
        }
        return nil
    }

    private func line(_ node: Node, _ offset: Int) -> Int? { node.mark.map { $0.line + offset } }

    // MARK: bundle.yaml, notifications.yaml, resources

    private mutating func readBundleFile(_ path: String, into content: inout Content) {
        guard let text = readText(path), let node = compose(text, path: path, lineOffset: 0) else { return }
        guard let mapping = node.mapping else {
            report(path, line: line(node, 0), "bundle.yaml must be a mapping with version and content_source")
            return
        }
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            guard let text = value.scalar?.string, !text.isEmpty else {
                report(path, line: line(keyNode, 0), "'\(key)' must be a non-empty text")
                continue
            }
            switch key {
            case "version": content.version = text
            case "content_source": content.contentSource = text
            default: report(path, line: line(keyNode, 0), "unknown key '\(key)'; known keys: version, content_source")
            }
        }
    }

    private mutating func readNotifications(_ path: String) -> [ContentBundle.ScheduledNotification] {
        guard let text = readText(path), let node = compose(text, path: path, lineOffset: 0) else { return [] }
        guard let list = node.sequence else {
            report(path, line: line(node, 0), "notifications.yaml must be a list of {id, at, message, action_uri}")
            return []
        }
        var result: [ContentBundle.ScheduledNotification] = []
        var ids: Set<String> = []
        for item in list {
            let at = line(item, 0)
            guard let mapping = item.mapping else {
                report(path, line: at, "each notification must be a mapping {id, at, message, action_uri}")
                continue
            }
            var fields: [String: String] = [:]
            var ok = true
            for (keyNode, value) in mapping {
                let key = keyNode.string ?? ""
                guard ["id", "at", "message", "action_uri"].contains(key) else {
                    report(path, line: line(keyNode, 0), "unknown key '\(key)'; known keys: id, at, message, action_uri")
                    ok = false
                    continue
                }
                guard let text = value.scalar?.string, !text.isEmpty else {
                    report(path, line: line(keyNode, 0), "'\(key)' must be a non-empty text")
                    ok = false
                    continue
                }
                fields[key] = text
            }
            for key in ["id", "at", "message", "action_uri"] where fields[key] == nil && ok {
                report(path, line: at, "the notification has no '\(key)'")
                ok = false
            }
            guard ok, let id = fields["id"], let when = fields["at"], let message = fields["message"], let action = fields["action_uri"] else {
                continue
            }
            guard let date = Self.parseDate(when) else {
                report(path, line: at, "'at' must be an ISO 8601 time with its zone, e.g. 2026-12-01T09:00:00Z (got '\(when)')")
                continue
            }
            guard ids.insert(id).inserted else {
                report(path, line: at, "notification id '\(id)' appears twice")
                continue
            }
            result.append(.init(id: id, fireAtMs: Int64((date.timeIntervalSince1970 * 1000).rounded()), message: message, actionURI: action))
        }
        return result
    }

    private mutating func readResources(_ folder: String) -> [Resource] {
        var resources: [Resource] = []
        func walk(_ path: String, relative: String) {
            let names = entries(path)
            if names.isEmpty { report(path, "an empty folder; remove it or add files") }
            for name in names {
                let child = join(path, name)
                let rel = relative + "/" + name
                if isDirectory(child) {
                    walk(child, relative: rel)
                } else if let data = FileManager.default.contents(atPath: child) {
                    resources.append(Resource(path: rel, mimeType: BundleBuilder.mimeType(forPath: name), data: data))
                } else {
                    report(child, "cannot be read")
                }
            }
        }
        walk(folder, relative: "resources")
        return resources.sorted { $0.path < $1.path }
    }

    // MARK: Helpers

    static func parseDate(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }

    /// Entries with an `order` come first, lower first; then the rest; ties by name.
    static func before(_ a: (Int?, String), _ b: (Int?, String)) -> Bool {
        switch (a.0, b.0) {
        case (let x?, let y?) where x != y: return x < y
        case (.some, nil): return true
        case (nil, .some): return false
        default: return a.1 < b.1
        }
    }

    private func sorted(_ items: [(order: Int?, hub: Hub)]) -> [Hub] {
        items.sorted { Self.before(($0.order, $0.hub.id), ($1.order, $1.hub.id)) }.map(\.hub)
    }

    private func sorted(_ items: [(order: Int?, channel: Channel)]) -> [Channel] {
        items.sorted { Self.before(($0.order, $0.channel.id), ($1.order, $1.channel.id)) }.map(\.channel)
    }

    /// Names become ids and URL path segments: letters, digits, '-', '_' and '.', not starting with '_'.
    private mutating func checkName(_ name: String, at path: String) -> Bool {
        let ok =
            !name.isEmpty && !name.hasPrefix("_")
            && name.unicodeScalars.allSatisfy { ($0.isASCII && (CharacterSet.alphanumerics.contains($0))) || "-_.".unicodeScalars.contains($0) }
        if !ok {
            report(
                path,
                "the name '\(name)' is not usable as an id: use letters, digits, '-', '_' and '.' (not starting with '_'); it becomes part of zbimdb:// URIs and page URLs"
            )
        }
        return ok
    }

    private mutating func readText(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else {
            report(path, "cannot be read")
            return nil
        }
        if let offset = Self.firstInvalidUTF8(data) {
            let line = data.prefix(offset).reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
            report(path, line: line, "is not UTF-8 text (byte \(offset) is not valid UTF-8); save the file as UTF-8")
            return nil
        }
        let text = String(decoding: data, as: UTF8.self)
        return text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    }

    /// The offset of the first byte that is not part of valid UTF-8, or nil when all of it is.
    static func firstInvalidUTF8(_ data: Data) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = data.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded): offset += encoded.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// Visible entries of a folder, sorted (hidden `.name` entries are ignored).
    private func entries(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    private func isDirectory(_ path: String) -> Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue
    }

    private func join(_ a: String, _ b: String) -> String { (a as NSString).appendingPathComponent(b) }

    private mutating func report(_ path: String, line: Int? = nil, _ message: String) {
        problems.append(.init(path: path, line: line, message: message))
    }
}
