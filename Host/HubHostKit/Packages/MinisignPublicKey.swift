import Foundation

/// A minisign public key: base64 of "Ed", an 8-byte key id and a 32-byte Ed25519 public key,
/// written as a file of two lines (an untrusted comment, then the base64) or as the bare base64
/// line (`minisign -P`, a `trust:` entry's `key`).
package struct MinisignPublicKey: Equatable, Sendable {
    package let keyID: [UInt8]
    package let key: [UInt8]

    /// A public key file is two short lines; anything larger is refused unread.
    package static let maximumFileSize = 4096
    static let what = "public key"

    package init(keyID: [UInt8], key: [UInt8]) {
        precondition(keyID.count == 8 && key.count == 32)
        self.keyID = keyID
        self.key = key
    }

    /// The bare base64 line, e.g. `RWQUucivEHVsFYRnMO2M...`.
    package init(base64 line: String) throws {
        guard line.utf8.count <= Self.maximumFileSize else { throw MinisignError.tooLarge(what: Self.what, limit: Self.maximumFileSize) }
        try self.init(decodedLine: Array(line.utf8), number: 1)
    }

    /// A public key file's contents: `untrusted comment: ...` and the base64 line.
    package init(fileContents bytes: [UInt8]) throws {
        let lines = try MinisignFile.lines(bytes, what: Self.what, limit: Self.maximumFileSize)
        guard lines.count == 2 else { throw MinisignError.lineCount(what: "public key file", expected: "2 lines", found: lines.count) }
        _ = try MinisignFile.after("untrusted comment: ", in: lines[0], number: 1, what: "public key file")
        try self.init(decodedLine: lines[1], number: 2)
    }

    /// The public key file at `path`.
    package init(contentsOf path: String) throws {
        try self.init(fileContents: MinisignFile.read(path, what: "public key file", limit: Self.maximumFileSize))
    }

    private init(decodedLine line: [UInt8], number: Int) throws {
        let bytes = try MinisignFile.decode(line, length: 42, what: Self.what, number: number)
        guard bytes[0] == UInt8(ascii: "E"), bytes[1] == UInt8(ascii: "d") else {
            throw MinisignError.unknownAlgorithm(what: Self.what, found: MinisignFile.algorithmName(bytes[0..<2]))
        }
        self.init(keyID: Array(bytes[2..<10]), key: Array(bytes[10..<42]))
    }

    /// The key id as minisign prints it (uppercase hex, up to 16 digits, no leading zeros).
    package var keyIDText: String { MinisignFile.keyIDText(keyID) }

    /// Whether `text` (a key id as written in plugins.lock or printed by minisign) names this key.
    package func hasKeyID(_ text: String?) -> Bool { MinisignFile.keyID(keyID, isNamedBy: text) }

    /// The base64 line.
    package var base64: String { Data(Array("Ed".utf8) + keyID + key).base64EncodedString() }

    /// The file minisign writes: its comment line, then the base64 line.
    package var fileContents: String { "untrusted comment: minisign public key \(keyIDText)\n\(base64)\n" }
}
