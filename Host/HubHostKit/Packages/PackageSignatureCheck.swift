import Foundation

/// Who signed a plugin package, checked against plugins.yaml's `trust:`: the signature is
/// `<package>.minisig` beside the package (minisign's own convention), verified over the exact
/// bytes of the archive that are then opened, with the trusted key of its key id; that key must
/// also be trusted for the plugin's id. A package without a signature is unsigned, which the
/// caller refuses unless unsigned packages are allowed.
package enum PackageSignatureCheck {
    /// What the signature check came to.
    package enum Outcome: Equatable, Sendable {
        /// Signed by the trusted key of `signer`, whose signature checked out.
        case signed(signer: TrustSettings.Entry, verified: Minisign.Verified)
        /// No `.minisig` beside the package.
        case unsigned
    }

    /// `<package>.minisig`.
    package static func signaturePath(ofPackage package: String) -> String { package + ".minisig" }

    /// Checks the signature of `archive`, the bytes of the package at `package`. Throws
    /// PluginPackageError when a signature is there but does not parse, is by a key `trust:` does
    /// not hold, or does not verify.
    package static func check(archive: [UInt8], package: String, trust: TrustSettings) throws(PluginPackageError) -> Outcome {
        let signatureFile = signaturePath(ofPackage: package)
        func refuse(_ reason: String) -> PluginPackageError { PluginPackageError(path: signatureFile, reason: reason) }
        guard FileManager.default.fileExists(atPath: signatureFile) else { return .unsigned }
        let signature: MinisignSignature
        do {
            signature = try MinisignSignature(contentsOf: signatureFile)
        } catch {
            throw refuse("is not a minisign signature: \(error)")
        }
        guard let signer = trust.entries.first(where: { $0.key.keyID == signature.keyID }) else {
            let names = trust.entries.map { "\($0.name) (\($0.key.keyIDText))" }
            throw refuse(
                "signed by key \(signature.keyIDText), which trust: does not hold (trusted: \(names.isEmpty ? "none" : names.joined(separator: ", "))); if you trust its publisher, add their public key with hubhost plugins trust KEY.pub --name NAME"
            )
        }
        do {
            let verified = try Minisign.verify(archive, signature: signature, publicKey: signer.key)
            return .signed(signer: signer, verified: verified)
        } catch {
            throw refuse(
                "does not verify with the key of '\(signer.name)' (\(signer.key.keyIDText)): \(error); the package or its signature was changed")
        }
    }

    /// Throws unless the signer of `outcome` is trusted for `pluginID` (its `ids:` pattern), or,
    /// for an unsigned package, unless `allowUnsigned`.
    package static func requireTrusted(_ outcome: Outcome, pluginID: String, package: String, allowUnsigned: Bool) throws(PluginPackageError) {
        switch outcome {
        case .unsigned:
            guard allowUnsigned else {
                throw PluginPackageError(
                    path: package,
                    reason:
                        "is not signed (no \((signaturePath(ofPackage: package) as NSString).lastPathComponent) beside it); sign it (hubhost plugins sign, or minisign -S) and trust the key, or add it with --allow-unsigned"
                )
            }
        case .signed(let signer, _):
            guard signer.covers(pluginID: pluginID) else {
                throw PluginPackageError(
                    path: package,
                    reason: "is signed by '\(signer.name)', whose key is trusted only for plugin ids matching '\(signer.ids)', not '\(pluginID)'")
            }
        }
    }
}
