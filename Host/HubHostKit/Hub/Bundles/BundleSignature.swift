import COpenSSL
import Foundation

/// Signs and verifies a bundle file's bytes with OpenSSL's libcrypto: the author signs with a PEM
/// private key (RSA, EC or Ed25519), the host verifies with the matching DER SubjectPublicKeyInfo
/// public key (the ZBiM SDK's pubkey.der). RSA and EC sign a SHA-256 digest (RSA PKCS#1 v1.5,
/// ECDSA); Ed25519 signs the bytes themselves, as the algorithm requires.
package enum BundleSignature {
    package enum KeyError: Error, CustomStringConvertible, Equatable {
        case unreadable(path: String)
        case notAPrivateKey(source: String, openssl: String)
        case encryptedPrivateKey(source: String)
        case notAPublicKey(source: String, openssl: String)
        case signingFailed(openssl: String)

        package var description: String {
            switch self {
            case .unreadable(let path): return "\(path) cannot be read"
            case .notAPrivateKey(let source, let openssl):
                return
                    "\(source) is not a PEM private key (RSA, EC or Ed25519; make one with `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem`): \(openssl)"
            case .encryptedPrivateKey(let source):
                return
                    "\(source) is an encrypted private key; write an unencrypted copy with `openssl pkey -in \(source) -out plain.pem` and sign with that"
            case .notAPublicKey(let source, let openssl):
                return
                    "\(source) is not a DER SubjectPublicKeyInfo public key (make one with `openssl pkey -in key.pem -pubout -outform DER -out pubkey.der`): \(openssl)"
            case .signingFailed(let openssl): return "OpenSSL could not sign: \(openssl)"
            }
        }
    }

    /// Signs `data` with the PEM private key `pem` (`source` names it in errors).
    package static func sign(_ data: Data, privateKeyPEM pem: Data, source: String = "the private key") throws -> Data {
        let key = try privateKey(pem, source: source)
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw KeyError.signingFailed(openssl: openSSLErrors()) }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest(for: key), nil, key) == 1 else {
            throw KeyError.signingFailed(openssl: openSSLErrors())
        }
        return try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Data in
            let input = bytes.bindMemory(to: UInt8.self).baseAddress
            var length = 0
            guard EVP_DigestSign(context, nil, &length, input, bytes.count) == 1 else { throw KeyError.signingFailed(openssl: openSSLErrors()) }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &signature, &length, input, bytes.count) == 1 else {
                throw KeyError.signingFailed(openssl: openSSLErrors())
            }
            return Data(signature.prefix(length))
        }
    }

    /// Signs `data` with the PEM private key in the file at `path`.
    package static func sign(_ data: Data, privateKeyAt path: String) throws -> Data {
        guard let pem = FileManager.default.contents(atPath: path) else { throw KeyError.unreadable(path: path) }
        return try sign(data, privateKeyPEM: pem, source: path)
    }

    /// True when `signature` is a valid signature of `data` for the DER public key `der`; false when
    /// it is not (wrong key, changed bytes, garbage). Throws only when `der` is not a public key.
    ///
    /// `sha256`, when the caller already hashed `data` (the verifier compares it with the
    /// metadata first), is used for RSA and EC keys instead of hashing the bytes a second time:
    /// the signature is over that same digest, so verification costs one pass over the file.
    /// Ed25519 signs the bytes themselves and always reads them.
    package static func verify(
        _ data: Data, signature: Data, publicKeyDER der: Data, source: String = "the public key",
        sha256: [UInt8]? = nil
    ) throws -> Bool {
        let key = try publicKey(der, source: source)
        defer { EVP_PKEY_free(key) }
        if let sha256, sha256.count == 32, let md = digest(for: key) {
            return verify(digest: sha256, md: md, signature: signature, key: key)
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest(for: key), nil, key) == 1 else {
            _ = openSSLErrors()
            return false
        }
        let result = data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Int32 in
            signature.withUnsafeBytes { (sig: UnsafeRawBufferPointer) -> Int32 in
                EVP_DigestVerify(
                    context, sig.bindMemory(to: UInt8.self).baseAddress, sig.count,
                    bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count)
            }
        }
        _ = openSSLErrors()  // a failed verification leaves errors queued; clear them for the next call
        return result == 1
    }

    /// A signature over a SHA-256 digest already computed (RSA PKCS#1 v1.5 or ECDSA).
    private static func verify(digest: [UInt8], md: OpaquePointer, signature: Data, key: OpaquePointer) -> Bool {
        guard let context = EVP_PKEY_CTX_new(key, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, md) == 1 else {
            _ = openSSLErrors()
            return false
        }
        let result = signature.withUnsafeBytes { (sig: UnsafeRawBufferPointer) -> Int32 in
            EVP_PKEY_verify(context, sig.bindMemory(to: UInt8.self).baseAddress, sig.count, digest, digest.count)
        }
        _ = openSSLErrors()
        return result == 1
    }

    /// Verifies with the DER public key in the file at `path`.
    package static func verify(_ data: Data, signature: Data, publicKeyAt path: String) throws -> Bool {
        guard let der = FileManager.default.contents(atPath: path) else { throw KeyError.unreadable(path: path) }
        return try verify(data, signature: signature, publicKeyDER: der, source: path)
    }

    // MARK: OpenSSL

    /// SHA-256 for RSA and EC; none for Ed25519/Ed448, which hash internally and take no digest.
    private static func digest(for key: OpaquePointer) -> OpaquePointer? {
        let id = EVP_PKEY_get_id(key)
        return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? nil : EVP_sha256()
    }

    private static func privateKey(_ pem: Data, source: String) throws -> OpaquePointer {
        _ = openSSLErrors()
        let key: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            // A passphrase callback that gives none: OpenSSL must not prompt on the terminal.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else {
            let errors = openSSLErrors()
            if String(decoding: pem.prefix(200), as: UTF8.self).contains("ENCRYPTED") || errors.contains("bad decrypt")
                || errors.contains("interrupted or cancelled")
            {
                throw KeyError.encryptedPrivateKey(source: source)
            }
            throw KeyError.notAPrivateKey(source: source, openssl: errors)
        }
        return key
    }

    private static func publicKey(_ der: Data, source: String) throws -> OpaquePointer {
        _ = openSSLErrors()
        let key: OpaquePointer? = der.withUnsafeBytes { bytes in
            var cursor: UnsafePointer<UInt8>? = bytes.bindMemory(to: UInt8.self).baseAddress
            return d2i_PUBKEY(nil, &cursor, bytes.count)
        }
        guard let key else { throw KeyError.notAPublicKey(source: source, openssl: der.isEmpty ? "the file is empty" : openSSLErrors()) }
        return key
    }

    /// Drains OpenSSL's error queue into one readable line ("no errors reported" when empty).
    static func openSSLErrors() -> String {
        var messages: [String] = []
        for _ in 0..<32 {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(filledBuffer: buffer))
        }
        return messages.isEmpty ? "no errors reported" : messages.joined(separator: "; ")
    }
}
