import ArgumentParser
import Foundation
import HubHostKit

/// `plugins keygen`, `plugins sign` and `plugins trust`: minisign-compatible keys and signatures
/// for plugin packages, and the `trust:` list of plugins.yaml.
extension PluginsCommand {
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Make a minisign key pair for signing plugin packages.",
            discussion: """
                Writes a public key (share it; `plugins trust` adds it to a plugins.yaml) and an unencrypted secret key \
                (mode 0600; keep it secret) in minisign's own formats: `minisign -V -p PUB` verifies what \
                `plugins sign` signs, and `minisign -S -s KEY` signs with the secret key. Refuses to overwrite either file.
                """)

        @Option(name: .customShort("p"), help: ArgumentHelp("Where to write the public key.", valueName: "pub"))
        var publicKeyPath = "hubhost.pub"

        @Option(name: .customShort("s"), help: ArgumentHelp("Where to write the secret key.", valueName: "key"))
        var secretKeyPath = "hubhost.key"

        @OptionGroup var output: JSONFlag

        struct Report: Encodable {
            var publicKeyFile: String
            var secretKeyFile: String
            var keyID: String
            var publicKey: String
        }

        func run() throws {
            for path in [publicKeyPath, secretKeyPath] where FileManager.default.fileExists(atPath: path) {
                Output.error("\(path) already exists; hubhost does not overwrite a key: remove it or choose another path")
                throw ExitCode.failed
            }
            do {
                let key = try MinisignSecretKey.generate()
                try writeNew(key.fileContents, to: secretKeyPath, mode: 0o600)
                try writeNew(key.publicKey.fileContents, to: publicKeyPath, mode: 0o644)
                let report = Report(
                    publicKeyFile: publicKeyPath, secretKeyFile: secretKeyPath, keyID: key.publicKey.keyIDText, publicKey: key.publicKey.base64)
                if output.json {
                    Output.json(report)
                } else {
                    print("The secret key was saved as \(secretKeyPath): keep it secret.")
                    print("The public key was saved as \(publicKeyPath) (key id \(report.keyID)).")
                    print("Trust it with: hubhost plugins trust \(publicKeyPath) --name NAME")
                    print("Verify with minisign: minisign -Vm FILE -P \(report.publicKey)")
                }
            } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
        }

        /// Creates `path` with `mode`, failing when it exists (O_EXCL: no race with another writer).
        private func writeNew(_ text: String, to path: String, mode: mode_t) throws {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, mode)
            guard descriptor >= 0 else {
                throw ValidationError("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            try handle.write(contentsOf: Data(text.utf8))
            _ = fchmod(descriptor, mode)  // the umask may have narrowed it; never widened beyond `mode`
        }
    }

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Sign a file (a plugin package) with a minisign secret key; writes FILE.minisig.",
            discussion: """
                The signature is minisign's: Ed25519 over the file's BLAKE2b-512 hash, and a global signature over the \
                trusted comment, so `minisign -Vm FILE -p PUB` verifies it. The secret key is hubhost's own \
                (`plugins keygen`) or minisign's unencrypted one (`minisign -G -W`); password-protected keys are refused.
                """)

        @Argument(help: ArgumentHelp("The file to sign.", valueName: "file"))
        var file: String

        @Option(name: .customShort("s"), help: ArgumentHelp("The secret key.", valueName: "key"))
        var secretKeyPath = "hubhost.key"

        @Option(
            name: .customShort("t"),
            help: ArgumentHelp("The trusted comment, signed with the file (default: the time and the file's name).", valueName: "comment"))
        var trustedComment: String?

        @OptionGroup var output: JSONFlag

        struct Report: Encodable {
            var file: String
            var signatureFile: String
            var keyID: String
            var trustedComment: String
        }

        func run() throws {
            let signaturePath = file + ".minisig"
            do {
                let key = try MinisignSecretKey(contentsOf: secretKeyPath)
                guard let data = FileManager.default.contents(atPath: file) else { throw MinisignError.unreadable(path: file) }
                let comment = trustedComment ?? Minisign.defaultTrustedComment(file: file)
                let signature = try key.sign([UInt8](data), trustedComment: comment)
                try Data(signature.fileContents).write(to: URL(fileURLWithPath: signaturePath))
                let report = Report(file: file, signatureFile: signaturePath, keyID: signature.keyIDText, trustedComment: comment)
                if output.json {
                    Output.json(report)
                } else {
                    print("Signed \(file) with key \(report.keyID): \(signaturePath)")
                }
            } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
        }
    }

    struct Trust: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trust",
            abstract: "Trust a minisign public key to sign plugin packages: add it to the trust: list of plugins.yaml.",
            discussion: """
                The rest of the file is left as written (comments included): the entry is added after the trust: list's \
                last item, or a trust: section is appended at the end. The file is checked again afterwards and left \
                unchanged when it would not load. Refused when the key does not parse or the name is taken.
                """)

        @Argument(help: ArgumentHelp("The public key file (minisign's or `plugins keygen`'s .pub).", valueName: "key.pub"))
        var publicKeyPath: String

        @Option(help: ArgumentHelp("A unique name for the key, such as its publisher's.", valueName: "name"))
        var name: String

        @Option(help: ArgumentHelp("The plugin ids the key may sign, as a glob pattern.", valueName: "pattern"))
        var ids = "*"

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        struct Report: Encodable {
            var manifest: String
            var name: String
            var keyID: String
            var key: String
            var ids: String
        }

        func run() throws {
            let path = manifestOption.manifest
            do {
                let key = try MinisignPublicKey(contentsOf: publicKeyPath)
                guard !name.isEmpty, !name.contains(where: \.isNewline) else { throw ValidationError("--name must be one non-empty line") }
                guard TrustSettings.isValidPattern(ids) else {
                    throw ValidationError("--ids '\(ids)' is not a plugin id pattern: use letters, digits, '-', '_', '.' and * ? [ ]")
                }
                guard let original = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("\(path) cannot be read")
                }
                let before = try HostManifest.load(path: path)
                if let existing = before.trust.entries.first(where: { $0.name == name }) {
                    throw ValidationError("\(path) already trusts a key named '\(name)' (key id \(existing.key.keyIDText)); choose another --name")
                }
                let trustProblems = Set(before.problems(inSections: ["trust"]).map(\.description))
                let entry = TrustSettings.Entry(name: name, key: key, ids: ids)
                let edited = try TrustListEditor.adding(entry, to: String(decoding: original, as: UTF8.self))
                try Data(edited.utf8).write(to: URL(fileURLWithPath: path))
                // The file as written must still load, with the entry and no new problem in trust:.
                let reason: String?
                do {
                    let after = try HostManifest.load(path: path)
                    let newProblems = after.problems(inSections: ["trust"]).filter { !trustProblems.contains($0.description) }
                    if !newProblems.isEmpty {
                        reason = newProblems.map(\.description).joined(separator: "\n")
                    } else if !after.trust.entries.contains(where: { $0.name == name && $0.key == key && $0.ids == ids }) {
                        reason = "the new entry is not in the trust: list it was added to"
                    } else {
                        reason = nil
                    }
                } catch {
                    reason = "\(error)"
                }
                if let reason {
                    try original.write(to: URL(fileURLWithPath: path))
                    Output.error("\(path) was left unchanged: with the entry added it would not load:\n\(reason)")
                    throw ExitCode.failed
                }
                let report = Report(manifest: path, name: name, keyID: key.keyIDText, key: key.base64, ids: ids)
                if output.json {
                    Output.json(report)
                } else {
                    print("\(path) now trusts key \(report.keyID) as '\(name)' for plugin ids \(ids)")
                }
            } catch let error as ExitCode {
                throw error
            } catch let error as ValidationError {
                Output.error(error.message)
                throw ExitCode.failed
            } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
        }
    }
}
