import Foundation

/// A minisign signature file (`FILE.minisig`), four lines:
///
///     untrusted comment: <anything>
///     base64("ED" or "Ed" + key id[8] + signature[64])
///     trusted comment: <text>
///     base64(global signature[64])
///
/// "ED" signs the BLAKE2b-512 hash of the file, the legacy "Ed" the file itself. The global
/// signature signs the signature bytes followed by the trusted comment, so the trusted comment
/// cannot be changed without the key.
package struct MinisignSignature: Equatable, Sendable {
    package enum Algorithm: String, Sendable {
        /// "ED": Ed25519 over BLAKE2b-512 of the file (minisign's default).
        case hashed = "ED"
        /// "Ed": Ed25519 over the file itself (`minisign -l`).
        case legacy = "Ed"
    }

    package var algorithm: Algorithm
    package var keyID: [UInt8]
    package var signature: [UInt8]
    package var untrustedComment: String
    /// The trusted comment's bytes, exactly as signed.
    package var trustedComment: [UInt8]
    package var globalSignature: [UInt8]

    /// minisign's own bounds: comments of at most 1 KiB (untrusted) and 8 KiB (trusted) make a
    /// file well under 16 KiB; a larger one is refused unread.
    package static let maximumFileSize = 16_384
    package static let maximumUntrustedComment = 1024
    package static let maximumTrustedComment = 8192
    static let what = "signature file"

    /// The trusted comment as text.
    package var trustedCommentText: String { String(decoding: trustedComment, as: UTF8.self) }

    /// The key id as minisign prints it.
    package var keyIDText: String { MinisignFile.keyIDText(keyID) }

    package init(
        algorithm: Algorithm, keyID: [UInt8], signature: [UInt8], untrustedComment: String, trustedComment: [UInt8], globalSignature: [UInt8]
    ) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.signature = signature
        self.untrustedComment = untrustedComment
        self.trustedComment = trustedComment
        self.globalSignature = globalSignature
    }

    /// A signature file's contents.
    package init(fileContents bytes: [UInt8]) throws {
        let lines = try MinisignFile.lines(bytes, what: Self.what, limit: Self.maximumFileSize)
        guard lines.count == 4 else { throw MinisignError.lineCount(what: Self.what, expected: "4 lines", found: lines.count) }
        let untrusted = try MinisignFile.after("untrusted comment: ", in: lines[0], number: 1, what: Self.what)
        let first = try MinisignFile.decode(lines[1], length: 74, what: "signature", number: 2)
        let name = String(decoding: first[0..<2], as: UTF8.self)
        guard first[0..<2].allSatisfy({ $0 < 0x80 }), let algorithm = Algorithm(rawValue: name) else {
            throw MinisignError.unknownAlgorithm(what: "signature", found: MinisignFile.algorithmName(first[0..<2]))
        }
        let trusted = try MinisignFile.after("trusted comment: ", in: lines[2], number: 3, what: Self.what)
        guard trusted.count <= Self.maximumTrustedComment else {
            throw MinisignError.invalidComment("the trusted comment is longer than \(Self.maximumTrustedComment) bytes")
        }
        let global = try MinisignFile.decode(lines[3], length: 64, what: "global signature", number: 4)
        self.init(
            algorithm: algorithm, keyID: Array(first[2..<10]), signature: Array(first[10..<74]),
            untrustedComment: String(decoding: untrusted, as: UTF8.self), trustedComment: trusted, globalSignature: global)
    }

    /// The signature file at `path`.
    package init(contentsOf path: String) throws {
        try self.init(fileContents: MinisignFile.read(path, what: Self.what, limit: Self.maximumFileSize))
    }

    /// The file, as minisign writes it.
    package var fileContents: [UInt8] {
        let first = Data(Array(algorithm.rawValue.utf8) + keyID + signature).base64EncodedString()
        let text = "untrusted comment: \(untrustedComment)\n\(first)\ntrusted comment: "
        return Array(text.utf8) + trustedComment + Array("\n\(Data(globalSignature).base64EncodedString())\n".utf8)
    }
}
