/// HTML escaping for everything hubhost writes into a page (rendered Markdown, hub pages, status
/// views): `&`, `<`, `>`, `"` and `'` as entities, safe in element content and in double- or
/// single-quoted attribute values.
package enum HTMLEscape {
    package static func escape(_ text: String) -> String {
        // Most text (ids, plain titles) has nothing to escape: returned as is, without a copy.
        guard text.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text { append(character, to: &out) }
        return out
    }

    package static func append(_ character: Character, to out: inout String) {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default: out.append(character)
        }
    }
}
