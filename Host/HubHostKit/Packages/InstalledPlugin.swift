import Foundation

/// A plugin instance's package, when its `use:` names a plugin installed by `hubhost plugins add`:
/// what plugins.lock says of it, and what the load found. Every surface that lists instances
/// shows it (version, package, signer, verification).
package struct InstalledPlugin: Equatable, Sendable {
    /// The lock's entry for the plugin.
    package var lock: PluginLock.Entry
    /// `<data_dir>/plugins/<id>/<version>`.
    package var folder: String
    /// What the manifest load found wrong with the package itself, each a sentence: its signer no
    /// longer trusted, plugin.yaml changed since it was installed, or plugin.yaml not the lock's.
    /// Empty when the package checks out (a library changed on disk is found when it loads).
    package var problems: [String] = []

    package init(lock: PluginLock.Entry, folder: String) {
        self.lock = lock
        self.folder = folder
    }

    /// "<signer> (key <id>)", or "unsigned".
    package var signerText: String {
        guard let signer = lock.signer else { return "unsigned" }
        return "\(signer) (key \(lock.keyID ?? "?"))"
    }

    /// What the installed plugin's load depends on, checked against the lock and plugins.yaml's
    /// `trust:` at every manifest load: the package's signer is still trusted for the plugin's id
    /// (or the package was unsigned and the instance says `allow_unsigned: true`). plugin.yaml's
    /// hash is checked as it is read (PluginManifest.load), and the library's as it is loaded (the
    /// lock's hash is the instance's pin). Returns the problems, each a sentence.
    package func trustProblems(trust: TrustSettings, allowUnsigned: Bool) -> [String] {
        guard let signer = lock.signer else {
            return allowUnsigned
                ? []
                : [
                    "plugin '\(lock.id)' \(lock.version) was installed from an unsigned package; give the instance allow_unsigned: true to run it anyway, or add a signed package"
                ]
        }
        let trusted = trust.keys(for: lock.id).contains { $0.key.hasKeyID(lock.keyID) }
        guard trusted else {
            return [
                "plugin '\(lock.id)' \(lock.version) was installed signed by '\(signer)' (key \(lock.keyID ?? "?")), which trust: no longer trusts for '\(lock.id)'; trust the key again (hubhost plugins trust) or remove the plugin"
            ]
        }
        return []
    }
}
