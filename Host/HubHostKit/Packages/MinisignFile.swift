import Foundation

/// Reading minisign's small text files (keys and signatures): bounded in size, split into lines
/// (`\n` or `\r\n`), base64 lines decoded strictly.
enum MinisignFile {
    /// The bytes of the file at `path`, refusing one larger than `limit` without reading it all.
    static func read(_ path: String, what: String, limit: Int) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw MinisignError.unreadable(path: path) }
        defer { try? handle.close() }
        let data: Data?
        do { data = try handle.read(upToCount: limit + 1) } catch { throw MinisignError.unreadable(path: path) }
        let bytes = [UInt8](data ?? Data())
        guard bytes.count <= limit else { throw MinisignError.tooLarge(what: what, limit: limit) }
        return bytes
    }

    /// The lines of `bytes`: split at `\n`, a `\r` before it dropped, one final newline optional.
    static func lines(_ bytes: [UInt8], what: String, limit: Int) throws -> [[UInt8]] {
        guard bytes.count <= limit else { throw MinisignError.tooLarge(what: what, limit: limit) }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? Array(line.dropLast()) : Array(line)
        }
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }

    /// The text after `prefix` on line `number` (1-based) of the file.
    static func after(_ prefix: String, in line: [UInt8], number: Int, what: String) throws -> [UInt8] {
        let prefixBytes = Array(prefix.utf8)
        guard line.starts(with: prefixBytes) else { throw MinisignError.missingPrefix(what: what, line: number, prefix: prefix) }
        return Array(line.dropFirst(prefixBytes.count))
    }

    /// A base64 line decoded, exactly `length` bytes long.
    static func decode(_ line: [UInt8], length: Int, what: String, number: Int) throws -> [UInt8] {
        // Strict: no whitespace, padding required (the file's size bounds the line already).
        guard let data = Data(base64Encoded: String(decoding: line, as: UTF8.self)) else {
            throw MinisignError.notBase64(what: what, line: number)
        }
        guard data.count == length else { throw MinisignError.wrongLength(what: what, expected: length, found: data.count) }
        return [UInt8](data)
    }

    /// The two algorithm bytes as text for a message ("Ed", or hex when not printable).
    static func algorithmName(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f } ? String(decoding: bytes, as: UTF8.self) : bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// A key id as minisign prints it: the 8 bytes as a little-endian number in uppercase hex,
    /// without leading zeros (minisign's `%" PRIX64 "`; one key in sixteen prints 15 digits or fewer).
    static func keyIDText(_ keyID: [UInt8]) -> String {
        String(keyIDNumber(keyID), radix: 16, uppercase: true)
    }

    /// The 8 key id bytes as the little-endian number minisign prints.
    static func keyIDNumber(_ keyID: [UInt8]) -> UInt64 {
        keyID.reversed().reduce(0) { ($0 << 8) | UInt64($1) }
    }

    /// Whether `text` names this key id: hex in either case, with or without leading zeros (so a
    /// plugins.lock written when hubhost padded ids to 16 digits still matches).
    static func keyID(_ keyID: [UInt8], isNamedBy text: String?) -> Bool {
        guard let text, (1...16).contains(text.utf8.count), text.allSatisfy(\.isHexDigit), let number = UInt64(text, radix: 16) else {
            return false
        }
        return number == keyIDNumber(keyID)
    }

    /// A one-line comment: no line breaks, bounded.
    static func checkComment(_ comment: String, what: String, limit: Int) throws {
        guard !comment.contains(where: { $0 == "\n" || $0 == "\r" }) else {
            throw MinisignError.invalidComment("the \(what) must be one line")
        }
        guard comment.utf8.count <= limit else { throw MinisignError.invalidComment("the \(what) is longer than \(limit) bytes") }
    }
}
