/// A list of texts bound to ONE statement argument as a JSON array, which SQL reads back with
/// `IN (SELECT value FROM json_each(?))`: one statement (compiled once, cached) whatever the
/// list's length, where `IN (?, ?, ...)` needs a statement per length and a binding per value.
enum SQLiteJSONList {
    /// `["a","b",...]`, each text a JSON string (any character escaped as JSON requires).
    static func strings(_ texts: [String]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(2 + texts.count * 40)
        out.append(UInt8(ascii: "["))
        for (index, text) in texts.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            CollectorJSON.string(text, into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }
}
