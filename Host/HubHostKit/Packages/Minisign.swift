import Foundation

/// minisign-compatible signatures of plugin packages: files signed with `minisign -S` verify here,
/// and keys and signatures hubhost writes verify with `minisign -V`. The formats are in
/// MinisignPublicKey, MinisignSignature and MinisignSecretKey; the cryptography is OpenSSL's
/// (MinisignCrypto).
package enum Minisign {
    /// What a successful verification vouches for.
    package struct Verified: Equatable, Sendable {
        package var keyID: String
        package var algorithm: MinisignSignature.Algorithm
        /// The trusted comment, signed with the file.
        package var trustedComment: String
    }

    /// Checks `signature` of `data` against `publicKey`: the key ids match, the signature is the
    /// key's over the file (its BLAKE2b-512 hash, or the bytes for a legacy signature), and the
    /// global signature covers the trusted comment. Throws a MinisignError saying which failed.
    @discardableResult
    package static func verify(_ data: [UInt8], signature: MinisignSignature, publicKey: MinisignPublicKey) throws -> Verified {
        try checkKeyID(signature, publicKey)
        let message = try signature.algorithm == .legacy ? data : MinisignCrypto.blake2b512(data)
        return try verify(message: message, signature: signature, publicKey: publicKey)
    }

    /// Checks `signature` of the file at `path` (hashed in chunks unless the signature is legacy).
    @discardableResult
    package static func verify(fileAt path: String, signature: MinisignSignature, publicKey: MinisignPublicKey) throws -> Verified {
        try checkKeyID(signature, publicKey)
        let message: [UInt8]
        if signature.algorithm == .legacy {
            guard let data = FileManager.default.contents(atPath: path) else { throw MinisignError.unreadable(path: path) }
            message = [UInt8](data)
        } else {
            message = try MinisignCrypto.blake2b512(fileAt: path)
        }
        return try verify(message: message, signature: signature, publicKey: publicKey)
    }

    /// Checks the file at `path` against `path.minisig` (or `signaturePath`) and the public key file.
    @discardableResult
    package static func verify(fileAt path: String, signaturePath: String? = nil, publicKeyPath: String) throws -> Verified {
        let signature = try MinisignSignature(contentsOf: signaturePath ?? path + ".minisig")
        return try verify(fileAt: path, signature: signature, publicKey: MinisignPublicKey(contentsOf: publicKeyPath))
    }

    private static func checkKeyID(_ signature: MinisignSignature, _ publicKey: MinisignPublicKey) throws {
        guard signature.keyID == publicKey.keyID else {
            throw MinisignError.keyIDMismatch(signature: signature.keyIDText, key: publicKey.keyIDText)
        }
    }

    private static func verify(message: [UInt8], signature: MinisignSignature, publicKey: MinisignPublicKey) throws -> Verified {
        guard MinisignCrypto.verify(signature.signature, of: message, publicKey: publicKey.key) else { throw MinisignError.signatureMismatch }
        guard MinisignCrypto.verify(signature.globalSignature, of: signature.signature + signature.trustedComment, publicKey: publicKey.key) else {
            throw MinisignError.trustedCommentMismatch
        }
        return Verified(keyID: publicKey.keyIDText, algorithm: signature.algorithm, trustedComment: signature.trustedCommentText)
    }

    /// minisign's default trusted comment: the signing time and the file's name.
    package static func defaultTrustedComment(file: String, date: Date = Date()) -> String {
        "timestamp:\(Int(date.timeIntervalSince1970))\tfile:\((file as NSString).lastPathComponent)"
    }
}
