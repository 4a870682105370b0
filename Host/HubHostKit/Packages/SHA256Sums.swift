import Foundation

/// A package's SHA256SUMS, in the format `sha256sum` writes and `sha256sum -c` checks: one line per
/// file, `<64 lowercase hex>  <name>`, sorted by name (byte order).
enum SHA256Sums {
    static let fileName = "SHA256SUMS"

    /// The SHA256SUMS of `files` (name and bytes), sorted by name.
    static func text(of files: [(name: String, bytes: [UInt8])]) -> String {
        files.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
            .map { "\(SHA256.hex(of: Data($0.bytes)))  \($0.name)\n" }.joined()
    }

    /// The digests by name, or why the text is not a SHA256SUMS this package format writes: lines of
    /// `<hex>  <name>`, sorted, each name once.
    static func parse(_ bytes: [UInt8]) throws(USTarArchive.Refusal) -> [(name: String, sha256: String)] {
        func refuse(_ reason: String) -> USTarArchive.Refusal { USTarArchive.Refusal(entry: fileName, reason: reason) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw refuse("it is not UTF-8 text") }
        guard text.isEmpty || text.hasSuffix("\n") else { throw refuse("its last line does not end with a newline") }
        var sums: [(name: String, sha256: String)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            let hex = line.prefix(64)
            let separator = line.dropFirst(64).prefix(2)
            let name = String(line.dropFirst(66))
            guard hex.count == 64, hex.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) }), separator == "  ", !name.isEmpty
            else {
                throw refuse("line \(index + 1) is not '<64 lowercase hex digits>  <file name>'")
            }
            if let last = sums.last, !Array(last.name.utf8).lexicographicallyPrecedes(Array(name.utf8)) {
                throw refuse(last.name == name ? "it lists '\(name)' twice" : "it is not sorted by name ('\(name)' after '\(last.name)')")
            }
            sums.append((name, String(hex)))
        }
        return sums
    }
}
