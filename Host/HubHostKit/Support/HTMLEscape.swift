/// HTML escaping for everything hubhost writes into a page (rendered Markdown, hub pages, status
/// views): `&`, `<`, `>`, `"` and `'` as entities, safe in element content and in double- or
/// single-quoted attribute values.
public enum HTMLEscape {
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text { append(character, to: &out) }
        return out
    }

    public static func append(_ character: Character, to out: inout String) {
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
