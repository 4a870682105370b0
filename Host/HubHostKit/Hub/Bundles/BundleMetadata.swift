import Foundation

/// The small document that travels beside a bundle (`FILE.json` next to `FILE` from
/// `hubhost bundle build`, or the content service's metadata endpoint): what the host checks the
/// bundle's bytes against before it trusts them.
///
///     {"version": "2026.11.22-1", "size": 40960, "sha256": "<64 hex>", "signature": "<base64>",
///      "created": "2026-11-22T20:00:00Z", "format": 1}
///
/// `signature` is the signer's signature over the bundle file's bytes (SHA-256 digest; RSA PKCS#1
/// v1.5, ECDSA or Ed25519), base64. A document without one (or with an empty one) describes an
/// unsigned bundle, which the host rejects.
package struct BundleMetadata: Codable, Equatable, Sendable {
    package var version: String
    /// The bundle file's size in bytes.
    package var size: Int64
    /// Lowercase hex SHA-256 of the bundle file's bytes.
    package var sha256: String
    /// Base64 signature over the bundle file's bytes; empty when unsigned.
    package var signature: String
    /// When the bundle was built (ISO 8601, UTC).
    package var created: String
    /// The bundle schema's format (ContentBundle.schema is format 1).
    package var format: Int

    package init(version: String, size: Int64, sha256: String, signature: String, created: String, format: Int = 1) {
        self.version = version
        self.size = size
        self.sha256 = sha256
        self.signature = signature
        self.created = created
        self.format = format
    }

    enum CodingKeys: String, CodingKey { case version, size, sha256, signature, created, format }

    /// version, size and sha256 are required; a missing signature reads as unsigned (rejected later
    /// with that reason rather than as a malformed document).
    package init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try? c.decode(String.self, forKey: .version) {
            version = text
        } else {
            version = String(try c.decode(Int.self, forKey: .version))
        }
        size = try c.decode(Int64.self, forKey: .size)
        sha256 = try c.decode(String.self, forKey: .sha256).lowercased()
        signature = try c.decodeIfPresent(String.self, forKey: .signature) ?? ""
        created = try c.decodeIfPresent(String.self, forKey: .created) ?? ""
        format = try c.decodeIfPresent(Int.self, forKey: .format) ?? 1
    }

    package enum DecodeError: Error, CustomStringConvertible {
        case invalid(source: String, reason: String)
        package var description: String {
            switch self {
            case .invalid(let source, let reason):
                return
                    "\(source) is not a bundle metadata document (expected {\"version\", \"size\", \"sha256\", \"signature\", \"created\", \"format\"}): \(reason)"
            }
        }
    }

    /// Decodes the JSON document; `source` names it in errors (a path or URL).
    package static func decode(_ data: Data, source: String = "the metadata") throws -> BundleMetadata {
        do {
            return try JSONDecoder().decode(BundleMetadata.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw DecodeError.invalid(source: source, reason: "'\(key.stringValue)' is missing")
        } catch let DecodingError.typeMismatch(_, context) {
            throw DecodeError.invalid(source: source, reason: "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type")
        } catch {
            throw DecodeError.invalid(source: source, reason: "not valid JSON")
        }
    }

    /// Reads and decodes the document at `path`.
    package static func read(path: String) throws -> BundleMetadata {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DecodeError.invalid(source: path, reason: "the file cannot be read")
        }
        return try decode(data, source: path)
    }

    /// The document as pretty JSON with sorted keys (what `bundle build` writes).
    package func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data()
    }

    /// The metadata document for `bundle` (the file's bytes), signed with `signature` (empty: unsigned).
    package static func describing(_ bundle: Data, version: String, created: String, signature: Data) -> BundleMetadata {
        BundleMetadata(
            version: version, size: Int64(bundle.count), sha256: SHA256.hex(of: bundle),
            signature: signature.base64EncodedString(), created: created)
    }

    /// `FILE.json`: where `bundle build` writes the document for `FILE`, and where the host looks for
    /// a preloaded bundle's document.
    package static func path(besideBundle bundlePath: String) -> String { bundlePath + ".json" }
}
