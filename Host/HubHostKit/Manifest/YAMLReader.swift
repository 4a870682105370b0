import Foundation
import Yams

/// Reads one YAML file into nodes that keep their line and column, and collects diagnostics as the
/// manifest parsers walk it. Every check reports and carries on, so one run shows every problem.
final class YAMLReader {
    let file: String
    private(set) var diagnostics: [ManifestDiagnostic] = []

    /// The SHA-256 (hex) the file must have (an installed plugin's plugin.yaml, from plugins.lock):
    /// checked on the bytes that are parsed, so what is checked is what is read.
    let expectedSHA256: String?

    init(file: String, expectedSHA256: String? = nil) {
        self.file = file
        self.expectedSHA256 = expectedSHA256
    }

    /// Parses the file; nil (with a diagnostic) when it cannot be read or is not YAML.
    func load() -> Node? {
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: file, isDirectory: &isFolder)
        if exists, isFolder.boolValue {
            let manifest = (file as NSString).appendingPathComponent("plugin.yaml")
            let hint = FileManager.default.fileExists(atPath: manifest) ? ": name its plugin.yaml, \(manifest)" : ": a YAML file was expected"
            report(line: 1, column: 1, key: "", "this is a folder, not a manifest file\(hint)")
            return nil
        }
        guard exists else {
            report(line: 1, column: 1, key: "", "no such file")
            return nil
        }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path: file, maxBytes: YAMLLimits.maxBytes)
        } catch {
            report(line: 1, column: 1, key: "", "\(error.reason)")
            return nil
        }
        if let expectedSHA256, case let actual = SHA256.hex(of: Data(bytes)), actual != expectedSHA256 {
            report(
                line: 1, column: 1, key: "",
                "changed since it was installed: its SHA-256 is \(actual), plugins.lock says \(expectedSHA256) (add the package again, or run hubhost plugins verify)"
            )
            return nil
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            report(line: 1, column: 1, key: "", "the file is not UTF-8 text")
            return nil
        }
        if let problem = YAMLLimits.problem(text) {
            report(line: 1, column: 1, key: "", problem)
            return nil
        }
        do {
            guard let node = try Yams.compose(yaml: text) else {
                report(line: 1, column: 1, key: "", "the file is empty; expected a mapping of settings")
                return nil
            }
            return node
        } catch let error as YamlError {
            switch error {
            case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
                .composer(let context, let problem, let mark, _):
                let detail = context.map { " (\($0.text) at \($0.mark.line):\($0.mark.column))" } ?? ""
                report(line: mark.line, column: mark.column, key: "", "invalid YAML: \(problem)\(detail)")
            case .duplicatedKeysInMapping(let duplicates, let context):
                report(
                    line: context.mark.line, column: context.mark.column, key: "",
                    "duplicate key\(duplicates.count > 1 ? "s" : "") \(duplicates.map { "'\($0)'" }.joined(separator: ", ")) in one mapping")
            default:
                report(line: 1, column: 1, key: "", "invalid YAML: \(error)")
            }
            return nil
        } catch {
            report(line: 1, column: 1, key: "", "invalid YAML: \(error)")
            return nil
        }
    }

    func report(line: Int, column: Int, key: String, _ message: String) {
        diagnostics.append(ManifestDiagnostic(file: file, line: line, column: column, key: key, message: message))
    }

    func report(_ node: Node, key: String, _ message: String) {
        let mark = node.mark
        report(line: mark?.line ?? 1, column: mark?.column ?? 1, key: key, message)
    }

    // MARK: Shapes

    /// The entries of a mapping, keys as strings; reports and returns nil when the node is not a mapping.
    func mapping(_ node: Node, key: String) -> [(key: String, keyNode: Node, value: Node)]? {
        guard case .mapping(let mapping) = node else {
            if isNull(node) { return [] }
            report(node, key: key, "expected a mapping of keys to values, found \(describe(node))")
            return nil
        }
        return mapping.map { pair in (pair.key.string ?? "\(pair.key)", pair.key, pair.value) }
    }

    /// Reports every key not in `allowed`, with a suggestion; returns the known entries by key.
    /// `none` says why when nothing is allowed at all (default: "no <what>s are accepted here").
    func known(
        _ entries: [(key: String, keyNode: Node, value: Node)], allowed: [String], in path: String,
        what: String = "key", none: String? = nil
    ) -> [String: (keyNode: Node, value: Node)] {
        var result: [String: (keyNode: Node, value: Node)] = [:]
        let allowedSet = Set(allowed)  // a set: many keys against a long schema stay linear
        for entry in entries {
            if allowedSet.contains(entry.key) {
                result[entry.key] = (entry.keyNode, entry.value)
            } else if allowed.isEmpty {
                report(entry.keyNode, key: join(path, entry.key), "unknown \(what) '\(entry.key)': \(none ?? "no \(what)s are accepted here")")
            } else {
                report(
                    entry.keyNode, key: join(path, entry.key),
                    "unknown \(what) '\(entry.key)'\(Suggestion.hint(for: entry.key, in: allowed)); expected one of: \(allowed.joined(separator: ", "))"
                )
            }
        }
        return result
    }

    func sequence(_ node: Node, key: String) -> [Node]? {
        if case .sequence(let sequence) = node { return Array(sequence) }
        if isNull(node) { return [] }
        report(node, key: key, "expected a list, found \(describe(node))")
        return nil
    }

    // MARK: Scalars

    func string(_ node: Node, key: String) -> String? {
        guard case .scalar(let scalar) = node, !isNull(node) else {
            report(node, key: key, "expected a string, found \(describe(node))")
            return nil
        }
        return scalar.string
    }

    func bool(_ node: Node, key: String) -> Bool? {
        if case .scalar = node, let value = Bool.construct(from: node.scalar!) { return value }
        report(node, key: key, "expected true or false, found \(describe(node))")
        return nil
    }

    func int(_ node: Node, key: String) -> Int64? {
        if case .scalar(let scalar) = node, scalar.style == .plain, let value = Int64(scalar.string) { return value }
        report(node, key: key, "expected an integer, found \(describe(node))")
        return nil
    }

    func double(_ node: Node, key: String) -> Double? {
        if case .scalar(let scalar) = node, scalar.style == .plain, let value = Double(scalar.string), value.isFinite {
            return value
        }
        report(node, key: key, "expected a number, found \(describe(node))")
        return nil
    }

    /// Seconds, from a number or an Engage expiration string.
    func duration(_ node: Node, key: String) -> Double? {
        guard case .scalar(let scalar) = node, !isNull(node) else {
            report(node, key: key, "expected a duration (seconds, or a text like '1d 7h 23m 15s'), found \(describe(node))")
            return nil
        }
        switch EngageDuration.parse(scalar.string) {
        case .success(let seconds): return seconds
        case .failure(let error):
            report(node, key: key, "\(error.description); write seconds (90) or a text like '15 sec', '1 day 15m', '1d 7h 23m 15s'")
            return nil
        }
    }

    /// A string that must name one of `options` (parsed by `parse`); reports with a suggestion.
    func choice<T>(_ node: Node, key: String, what: String, options: [String], parse: (String) -> T?) -> T? {
        guard let text = string(node, key: key) else { return nil }
        if let value = parse(text) { return value }
        report(
            node, key: key, "unknown \(what) '\(text)'\(Suggestion.hint(for: text, in: options)); expected one of: \(options.joined(separator: ", "))"
        )
        return nil
    }

    func isNull(_ node: Node) -> Bool {
        if case .scalar(let scalar) = node, scalar.style == .plain, ["", "~", "null", "Null", "NULL"].contains(scalar.string) {
            return true
        }
        return false
    }

    /// A short description of what a node is, for "found ..." messages.
    func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar(let scalar):
            if isNull(node) { return "nothing (null)" }
            // Quoted at most in part: a message must not carry a file's content along.
            if scalar.style != .plain { return "the string \"\(Suggestion.clip(scalar.string))\"" }
            if Int64(scalar.string) != nil { return "the integer \(scalar.string)" }
            if Double(scalar.string) != nil { return "the number \(scalar.string)" }
            if Bool.construct(from: scalar) != nil { return "the boolean \(scalar.string)" }
            return "the string \"\(Suggestion.clip(scalar.string))\""
        }
    }

    func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}
