import Foundation

/// An unencrypted minisign secret key (`minisign -G -W`, `hubhost plugins keygen`): two lines, an
/// untrusted comment and the base64 of
///
///     "Ed" | kdf "\0\0" | checksum algorithm "B2" | salt[32] | opslimit u64 | memlimit u64
///     | key id[8] | secret key[64] (seed[32] + public key[32]) | checksum[32]
///
/// where the checksum is BLAKE2b-256 of "Ed" + key id + secret key. Password-protected keys
/// (kdf "Sc", scrypt) are refused: hubhost does not decrypt them.
package struct MinisignSecretKey: Sendable {
    package let keyID: [UInt8]
    /// The Ed25519 seed (the first half of minisign's 64-byte secret key).
    let seed: [UInt8]
    package let publicKey: MinisignPublicKey

    package static let maximumFileSize = 4096
    static let what = "secret key"
    static let encodedLength = 158

    /// A new key pair from OpenSSL's random generator.
    package static func generate() throws -> MinisignSecretKey {
        let seed = try MinisignCrypto.randomBytes(32)
        let keyID = try MinisignCrypto.randomBytes(8)
        return MinisignSecretKey(keyID: keyID, seed: seed, publicKey: try MinisignCrypto.publicKey(seed: seed))
    }

    private init(keyID: [UInt8], seed: [UInt8], publicKey: [UInt8]) {
        self.keyID = keyID
        self.seed = seed
        self.publicKey = MinisignPublicKey(keyID: keyID, key: publicKey)
    }

    /// A secret key file's contents (`source` names it in messages).
    package init(fileContents bytes: [UInt8], source: String = "the secret key") throws {
        let lines = try MinisignFile.lines(bytes, what: "secret key file", limit: Self.maximumFileSize)
        guard lines.count == 2 else { throw MinisignError.lineCount(what: "secret key file", expected: "2 lines", found: lines.count) }
        _ = try MinisignFile.after("untrusted comment: ", in: lines[0], number: 1, what: "secret key file")
        let bytes = try MinisignFile.decode(lines[1], length: Self.encodedLength, what: Self.what, number: 2)
        guard bytes[0] == UInt8(ascii: "E"), bytes[1] == UInt8(ascii: "d") else {
            throw MinisignError.unknownAlgorithm(what: Self.what, found: MinisignFile.algorithmName(bytes[0..<2]))
        }
        guard bytes[2] == 0, bytes[3] == 0 else { throw MinisignError.encryptedSecretKey(path: source) }
        guard bytes[4] == UInt8(ascii: "B"), bytes[5] == UInt8(ascii: "2") else {
            throw MinisignError.corruptSecretKey("unknown checksum algorithm '\(MinisignFile.algorithmName(bytes[4..<6]))', not 'B2'")
        }
        let keyID = Array(bytes[54..<62])
        let secret = Array(bytes[62..<126])
        let checksum = Array(bytes[126..<158])
        let seed = Array(secret[0..<32])
        let derived = try MinisignCrypto.publicKey(seed: seed)
        guard derived == Array(secret[32..<64]) else { throw MinisignError.corruptSecretKey("its public half does not belong to its secret half") }
        // minisign 0.11 leaves an unencrypted key's checksum zero; any other is checked when this
        // OpenSSL can compute BLAKE2b-256 (the public half above is checked either way).
        if checksum.contains(where: { $0 != 0 }), let expected = Self.checksum(keyID: keyID, secret: secret), expected != checksum {
            throw MinisignError.corruptSecretKey("its checksum does not match")
        }
        self.init(keyID: keyID, seed: seed, publicKey: derived)
    }

    /// The secret key file at `path`.
    package init(contentsOf path: String) throws {
        try self.init(fileContents: MinisignFile.read(path, what: "secret key file", limit: Self.maximumFileSize), source: path)
    }

    static func checksum(keyID: [UInt8], secret: [UInt8]) -> [UInt8]? {
        MinisignCrypto.blake2b256(Array("Ed".utf8) + keyID + secret)
    }

    /// The file minisign writes for `-G -W`. The checksum is BLAKE2b-256 where OpenSSL offers it,
    /// else zero, as minisign 0.11 itself writes for an unencrypted key.
    package var fileContents: String {
        let secret = seed + publicKey.key
        let checksum = Self.checksum(keyID: keyID, secret: secret) ?? [UInt8](repeating: 0, count: 32)
        let header = Array("Ed".utf8) + [0, 0] + Array("B2".utf8) + [UInt8](repeating: 0, count: 32 + 8 + 8)
        let encoded = Data(header + keyID + secret + checksum).base64EncodedString()
        return "untrusted comment: minisign secret key \(publicKey.keyIDText) (unencrypted, written by hubhost)\n\(encoded)\n"
    }

    /// Signs `data`: Ed25519 over its BLAKE2b-512 hash ("ED"), or over the bytes themselves
    /// (`legacy`, "Ed"); then the global signature over the signature and `trustedComment`.
    package func sign(
        _ data: [UInt8], trustedComment: String, untrustedComment: String = "signature from minisign secret key", legacy: Bool = false
    ) throws -> MinisignSignature {
        try MinisignFile.checkComment(trustedComment, what: "trusted comment", limit: MinisignSignature.maximumTrustedComment)
        try MinisignFile.checkComment(untrustedComment, what: "untrusted comment", limit: MinisignSignature.maximumUntrustedComment)
        let message = try legacy ? data : MinisignCrypto.blake2b512(data)
        let signature = try MinisignCrypto.sign(message, seed: seed)
        let trusted = Array(trustedComment.utf8)
        let global = try MinisignCrypto.sign(signature + trusted, seed: seed)
        return MinisignSignature(
            algorithm: legacy ? .legacy : .hashed, keyID: keyID, signature: signature, untrustedComment: untrustedComment,
            trustedComment: trusted, globalSignature: global)
    }
}
