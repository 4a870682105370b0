import COpenSSL
import Foundation

/// The primitives minisign uses, all from OpenSSL's libcrypto: Ed25519 (raw 32-byte keys) and
/// BLAKE2b. Nothing here is hand-written cryptography; it only moves bytes in and out of OpenSSL.
enum MinisignCrypto {
    /// Ed25519 signature of `message` with the 32-byte `seed` (the private half of the key).
    static func sign(_ message: [UInt8], seed: [UInt8]) throws -> [UInt8] {
        precondition(seed.count == 32)
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seed.count) else {
            throw MinisignError.openSSL(BundleSignature.openSSLErrors())
        }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw MinisignError.openSSL(BundleSignature.openSSLErrors()) }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else { throw MinisignError.openSSL(BundleSignature.openSSLErrors()) }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = signature.count
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == 64 else {
            throw MinisignError.openSSL(BundleSignature.openSSLErrors())
        }
        return signature
    }

    /// True when `signature` is `publicKey`'s Ed25519 signature of `message`.
    static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32,
            let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, publicKey, publicKey.count)
        else {
            _ = BundleSignature.openSSLErrors()
            return false
        }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else {
            _ = BundleSignature.openSSLErrors()
            return false
        }
        let result = EVP_DigestVerify(context, signature, signature.count, message, message.count)
        _ = BundleSignature.openSSLErrors()  // a failed verification leaves errors queued
        return result == 1
    }

    /// The 32-byte Ed25519 public key of `seed`.
    static func publicKey(seed: [UInt8]) throws -> [UInt8] {
        guard seed.count == 32, let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seed.count) else {
            throw MinisignError.openSSL(BundleSignature.openSSLErrors())
        }
        defer { EVP_PKEY_free(key) }
        var publicKey = [UInt8](repeating: 0, count: 32)
        var length = publicKey.count
        guard EVP_PKEY_get_raw_public_key(key, &publicKey, &length) == 1, length == 32 else {
            throw MinisignError.openSSL(BundleSignature.openSSLErrors())
        }
        return publicKey
    }

    /// `count` random bytes from OpenSSL's generator.
    static func randomBytes(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw MinisignError.openSSL(BundleSignature.openSSLErrors()) }
        return bytes
    }

    /// BLAKE2b-512 of `bytes`.
    static func blake2b512(_ bytes: [UInt8]) throws -> [UInt8] {
        let hasher = try Blake2b512()
        hasher.update(bytes)
        return try hasher.finish()
    }

    /// BLAKE2b-512 of the file at `path`, read in 1 MiB chunks (a plugin may be large).
    static func blake2b512(fileAt path: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw MinisignError.unreadable(path: path) }
        defer { try? handle.close() }
        let hasher = try Blake2b512()
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch { throw MinisignError.unreadable(path: path) }
            guard let chunk, !chunk.isEmpty else { break }
            hasher.update([UInt8](chunk))
        }
        return try hasher.finish()
    }

    /// BLAKE2b with a 32-byte output (minisign's secret key checksum), when this OpenSSL can set
    /// BLAKE2b's output size (3.2 and later); nil on older ones (Debian 12 has 3.0). BLAKE2b-256 is
    /// not BLAKE2b-512 cut short, so it is not computed any other way.
    static func blake2b256(_ bytes: [UInt8]) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        var size = 32
        let digest: [UInt8]? = "size".withCString { name in
            withUnsafeMutableBytes(of: &size) { sizeBytes in
                var params = [
                    OSSL_PARAM(
                        key: name, data_type: UInt32(OSSL_PARAM_UNSIGNED_INTEGER), data: sizeBytes.baseAddress,
                        data_size: sizeBytes.count, return_size: Int.max),
                    OSSL_PARAM(key: nil, data_type: 0, data: nil, data_size: 0, return_size: 0)
                ]
                guard EVP_DigestInit_ex2(context, EVP_blake2b512(), &params) == 1,
                    EVP_DigestUpdate(context, bytes, bytes.count) == 1
                else { return nil }
                var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
                var length: UInt32 = 0
                guard EVP_DigestFinal_ex(context, &output, &length) == 1, length == 32 else { return nil }
                return Array(output.prefix(32))
            }
        }
        _ = BundleSignature.openSSLErrors()
        return digest
    }

    /// An incremental BLAKE2b-512.
    final class Blake2b512 {
        private let context: OpaquePointer

        init() throws {
            guard let context = EVP_MD_CTX_new() else { throw MinisignError.openSSL(BundleSignature.openSSLErrors()) }
            guard EVP_DigestInit_ex(context, EVP_blake2b512(), nil) == 1 else {
                EVP_MD_CTX_free(context)
                throw MinisignError.openSSL(BundleSignature.openSSLErrors())
            }
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        func update(_ bytes: [UInt8]) {
            _ = EVP_DigestUpdate(context, bytes, bytes.count)
        }

        func finish() throws -> [UInt8] {
            var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            guard EVP_DigestFinal_ex(context, &output, &length) == 1, length == 64 else {
                throw MinisignError.openSSL(BundleSignature.openSSLErrors())
            }
            return Array(output.prefix(64))
        }
    }
}
