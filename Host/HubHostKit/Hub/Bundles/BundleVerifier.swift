import Foundation

/// Why the host refused a bundle. `reason` is written for people (CLI, logs, the hub's error view);
/// `kind` is for code and tests.
package struct BundleRejection: Error, CustomStringConvertible, Equatable, Sendable {
    package enum Kind: String, Sendable, Codable {
        /// The bytes are fewer (or more) than the metadata's size: an interrupted download.
        case truncated
        /// The size matches but the SHA-256 does not: the bytes were changed.
        case tampered
        /// The metadata carries no signature.
        case unsigned
        /// No `hub.public_key` is configured, so no signature can be checked.
        case noPublicKey
        /// The public key file is missing or not a DER SubjectPublicKeyInfo key.
        case badPublicKey
        /// The signature does not verify with the public key: signed with another key, or the
        /// metadata's digest and signature were both replaced.
        case badSignature
        /// Integrity and signature are fine but the file is not a content bundle.
        case notABundle
        /// The bundle or its metadata could not be read or stored.
        case unreadable
        /// Validly signed, but created before the active bundle: an old bundle replayed (or served
        /// by a stale mirror) never replaces newer content. To go back, publish the old content again.
        case older
    }

    package let kind: Kind
    package let reason: String

    package init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    package var description: String { "bundle rejected (\(kind.rawValue)): \(reason)" }
}

/// The host's checks on a bundle's bytes before it trusts them, in this order (the first failure is
/// the reason): size (truncated), SHA-256 (tampered), a signature present (unsigned), a public key
/// configured and readable, the signature verifies with it, the format is 1. Whether the bytes are a bundle is
/// checked afterwards on the stored file (BundleStore), since SQLite needs a file.
package enum BundleVerifier {
    /// Throws BundleRejection when `data` does not match `metadata` or its signature does not verify
    /// with the DER public key at `publicKeyPath` (nil: none configured).
    package static func verify(_ data: Data, metadata: BundleMetadata, publicKeyPath: String?) throws {
        if Int64(data.count) != metadata.size {
            throw BundleRejection(
                .truncated,
                "the bundle has \(data.count) bytes but its metadata says \(metadata.size): the download was cut short or the file is incomplete")
        }
        let sha256 = SHA256.digest(of: data)  // also what an RSA or EC signature is checked against
        let digest = SHA256.hex(sha256)
        if digest != metadata.sha256.lowercased() {
            throw BundleRejection(.tampered, "the bundle's SHA-256 is \(digest) but its metadata says \(metadata.sha256): the bytes were changed")
        }
        let trimmed = metadata.signature.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            throw BundleRejection(.unsigned, "the bundle is unsigned (its metadata has no signature); sign it with `hubhost bundle build --key`")
        }
        guard let publicKeyPath, !publicKeyPath.isEmpty else {
            throw BundleRejection(.noPublicKey, "no public key is configured (hub.public_key in plugins.yaml), so the signature cannot be checked")
        }
        guard let der = FileManager.default.contents(atPath: publicKeyPath) else {
            throw BundleRejection(.badPublicKey, "the public key \(publicKeyPath) cannot be read")
        }
        guard let signature = Data(base64Encoded: trimmed, options: .ignoreUnknownCharacters), !signature.isEmpty else {
            throw BundleRejection(.badSignature, "the metadata's signature is not base64")
        }
        let valid: Bool
        do {
            valid = try BundleSignature.verify(data, signature: signature, publicKeyDER: der, source: publicKeyPath, sha256: sha256)
        } catch {
            throw BundleRejection(.badPublicKey, "\(error)")
        }
        if !valid {
            throw BundleRejection(
                .badSignature,
                "the signature does not verify with the public key \(publicKeyPath): the bundle was signed with another key or was changed after signing"
            )
        }
        if metadata.format != 1 {
            throw BundleRejection(.notABundle, "the bundle's format is \(metadata.format); this host reads format 1")
        }
    }
}

extension BundleVerifier {
    /// Verifies the bundle file at `path` with `metadata` (size, SHA-256, signature) and opens it:
    /// the same checks as an install, without storing anything (`hubhost bundle verify`).
    package static func verifyFile(_ path: String, metadata: BundleMetadata, publicKeyPath: String?) throws -> ContentBundle {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe) } catch {
            throw BundleRejection(.unreadable, "the bundle \(path) cannot be read: \(error.localizedDescription)")
        }
        try verify(data, metadata: metadata, publicKeyPath: publicKeyPath)
        do { return try ContentBundle(path: path) } catch ContentBundle.OpenError.notABundle(_, let reason) {
            throw BundleRejection(.notABundle, "the signed file is not a content bundle: \(reason)")
        } catch {
            throw BundleRejection(.notABundle, "the signed file is not a content bundle: \(error)")
        }
    }
}
