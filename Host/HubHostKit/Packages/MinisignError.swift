import Foundation

/// Why a minisign key or signature was refused, or a verification failed: each case says what was
/// wrong in words a plugin publisher or operator can act on.
package enum MinisignError: Error, CustomStringConvertible, Equatable, Sendable {
    case unreadable(path: String)
    /// A key or signature file larger than any real one (`limit` bytes).
    case tooLarge(what: String, limit: Int)
    /// Not the expected number of lines (`expected` is a phrase: "2 lines").
    case lineCount(what: String, expected: String, found: Int)
    /// A line that must start with a fixed prefix does not.
    case missingPrefix(what: String, line: Int, prefix: String)
    case notBase64(what: String, line: Int)
    case wrongLength(what: String, expected: Int, found: Int)
    case unknownAlgorithm(what: String, found: String)
    /// A secret key protected with a password, which hubhost does not decrypt.
    case encryptedSecretKey(path: String)
    /// The secret key's checksum or its public half does not match its secret half.
    case corruptSecretKey(String)
    case keyIDMismatch(signature: String, key: String)
    case signatureMismatch
    case trustedCommentMismatch
    case invalidComment(String)
    case openSSL(String)

    package var description: String {
        switch self {
        case .unreadable(let path): return "\(path) cannot be read"
        case .tooLarge(let what, let limit): return "the \(what) is larger than \(limit) bytes; no real one is"
        case .lineCount(let what, let expected, let found):
            return "the \(what) must have \(expected), not \(found)"
        case .missingPrefix(let what, let line, let prefix):
            return "line \(line) of the \(what) must start with '\(prefix)'"
        case .notBase64(let what, let line): return "line \(line) of the \(what) is not valid base64"
        case .wrongLength(let what, let expected, let found):
            return "the \(what) decodes to \(found) bytes, not the \(expected) of a minisign \(what)"
        case .unknownAlgorithm(let what, let found):
            return
                "the \(what) uses algorithm '\(found)'; minisign's are 'Ed' (public keys, legacy signatures) and 'ED' (signatures of a BLAKE2b-512 hash)"
        case .encryptedSecretKey(let path):
            return
                "\(path) is a password-protected minisign secret key, which hubhost does not decrypt: make an unencrypted one with `minisign -G -W` or `hubhost plugins keygen`"
        case .corruptSecretKey(let detail): return "the secret key is damaged: \(detail)"
        case .keyIDMismatch(let signature, let key):
            return "the signature was made by key \(signature), not by key \(key): it is signed by another key"
        case .signatureMismatch:
            return "the signature does not match the file: the file was changed after signing, or the signature is for another file"
        case .trustedCommentMismatch:
            return "the trusted comment's signature does not match: the trusted comment was changed after signing"
        case .invalidComment(let detail): return detail
        case .openSSL(let detail): return "OpenSSL failed: \(detail)"
        }
    }
}
