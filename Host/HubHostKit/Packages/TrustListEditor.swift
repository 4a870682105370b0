import Foundation

/// Adds an entry to the `trust:` list of a plugins.yaml without rewriting the rest of the file:
/// the user's comments, order and formatting stay as they are. When there is no top-level
/// `trust:` the section is appended at the end; otherwise the new item goes right after the
/// list's last item (comments and blank lines that follow it stay after the new item).
package enum TrustListEditor {
    package struct Refusal: Error, CustomStringConvertible, Equatable {
        package var description: String
    }

    /// `text` with `entry` added to its `trust:` list.
    package static func adding(_ entry: TrustSettings.Entry, to text: String) throws -> String {
        var lines = text.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }  // the final newline
        guard let start = lines.firstIndex(where: isTrustKey) else {
            var result = text
            if !result.isEmpty && !result.hasSuffix("\n") { result += "\n" }
            if !result.isEmpty && !result.hasSuffix("\n\n") { result += "\n" }
            return result + "trust:\n" + item(entry, indent: "  ").joined(separator: "\n") + "\n"
        }
        let rest = value(afterKeyOn: lines[start])
        guard rest.isEmpty else {
            throw Refusal(
                description:
                    "line \(start + 1) writes trust: on one line ('\(rest)'); write it as a block list (each item on its own '- ' line) or add the entry by hand"
            )
        }
        // The section runs until the next line at column 0 that is neither a comment nor a list item.
        var end = start + 1
        var lastContent = start
        var indent: String?
        while end < lines.count {
            let line = lines[end]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") {
                end += 1
                continue
            }
            if !line.hasPrefix(" ") && !line.hasPrefix("-") && !line.hasPrefix("\t") { break }
            if indent == nil, trimmed.hasPrefix("-") { indent = String(line.prefix { $0 == " " }) }
            lastContent = end
            end += 1
        }
        lines.insert(contentsOf: item(entry, indent: indent ?? "  "), at: lastContent + 1)
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whether `line` is the top-level `trust:` key (with an optional comment or inline value).
    static func isTrustKey(_ line: String) -> Bool {
        line.hasPrefix("trust:") || line.hasPrefix("\"trust\":") || line.hasPrefix("'trust':")
    }

    /// What follows the key on its line, comment removed.
    static func value(afterKeyOn line: String) -> String {
        guard let colon = line.firstIndex(of: ":") else { return "" }
        var rest = String(line[line.index(after: colon)...])
        if let hash = rest.range(of: " #") ?? (rest.hasPrefix("#") ? rest.range(of: "#") : nil) { rest = String(rest[..<hash.lowerBound]) }
        return rest.trimmingCharacters(in: .whitespaces)
    }

    static func item(_ entry: TrustSettings.Entry, indent: String) -> [String] {
        [
            "\(indent)- name: \(quoted(entry.name))",
            "\(indent)  key: \(quoted(entry.key.base64))",
            "\(indent)  ids: \(quoted(entry.ids))"
        ]
    }

    /// A YAML double-quoted scalar.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f: result += String(format: "\\x%02x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
