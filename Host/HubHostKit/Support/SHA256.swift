import COpenSSL
import Foundation

/// SHA-256 of files (library pins) and bytes (bundle digests), computed with OpenSSL's libcrypto.
package enum SHA256 {
    /// Lowercase hex digest of the file's bytes, or nil when it cannot be read.
    package static func hex(ofFile path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else { return nil }
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch { return nil }
            guard let chunk, !chunk.isEmpty else { break }  // nil or empty: end of file
            let ok = chunk.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
            guard ok == 1 else { return nil }
        }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1 else { return nil }
        return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }

    /// Lowercase hex digest of `data`.
    package static func hex(of data: Data) -> String {
        hex(digest(of: data))
    }

    /// The 32 bytes of `data`'s digest.
    package static func digest(of data: Data) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { bytes in
            EVP_Digest(bytes.baseAddress, bytes.count, &digest, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1, "OpenSSL's SHA-256 failed")
        return Array(digest.prefix(Int(length)))
    }

    /// Lowercase hex of digest bytes.
    package static func hex(_ digest: [UInt8]) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
