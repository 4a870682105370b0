import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost bundle build|verify|inspect`: content bundles for the Content Hub, made by authors from
/// a folder, signed with their private key and checked the way the host checks a download.
struct BundleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Build, sign, verify and inspect Content Hub bundles (one SQLite file each).",
        discussion: """
            A bundle is built from a folder with one level per hierarchy level:
              DIR/<hub>/<channel>/<article>.md|.html, with YAML front matter (title, tags, order, source_url),
              DIR/resources/** (CSS, images), DIR/notifications.yaml, DIR/bundle.yaml (version, content_source).
            Make a key pair with:
              openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem
              openssl pkey -in key.pem -pubout -outform DER -out pubkey.der
            See README.md, "Content bundles".
            """,
        subcommands: [Build.self, Verify.self, Inspect.self])

    struct Build: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "build",
            abstract: "Build a bundle from a content folder, sign it, and write FILE and its metadata document FILE.json.",
            discussion: """
                Every problem in the folder is listed with its file (and line for front matter) and nothing is \
                written (with --json: {"problems": [{"path", "line", "message"}]} on stdout). FILE.json is the metadata document the host checks the bundle against:
                  {"version", "size", "sha256", "signature" (base64), "created", "format": 1}
                Example: hubhost bundle build Examples/content -o content.sqlite3 --key key.pem
                """)

        @Argument(help: ArgumentHelp("The content folder.", valueName: "dir"))
        var directory: String

        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("The bundle file to write (replaced).", valueName: "file"))
        var output: String

        @Option(help: ArgumentHelp("The PEM private key (RSA, EC or Ed25519) to sign with.", valueName: "private-key.pem"))
        var key: String

        @Option(help: ArgumentHelp("The bundle's version (default: bundle.yaml's version, else the build time).", valueName: "version"))
        var version: String?

        @OptionGroup var outputFormat: JSONFlag

        struct Report: Encodable {
            var file: String
            var metadataFile: String
            var summary: BundleBuilder.Summary
            var size: Int64
            var sha256: String
        }

        func run() throws {
            let result: (summary: BundleBuilder.Summary, metadata: BundleMetadata)
            do {
                result = try BundleBuilder.buildSigned(from: directory, to: output, privateKeyPath: key, version: version)
            } catch let error as BundleBuilder.BuildError where outputFormat.json {
                Output.json(["problems": error.problems])
                throw ExitCode.failed
            } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
            let report = Report(
                file: output, metadataFile: BundleMetadata.path(besideBundle: output), summary: result.summary,
                size: result.metadata.size, sha256: result.metadata.sha256)
            if outputFormat.json {
                Output.json(report)
                return
            }
            let s = result.summary
            print("built \(output) (version \(s.version), content source \(s.contentSource))")
            print("  \(s.hubs) hubs, \(s.channels) channels, \(s.articles) articles, \(s.resources) resources, \(s.notifications) notifications")
            print("  size    \(report.size) bytes")
            print("  sha256  \(report.sha256)")
            print("  signed; metadata in \(report.metadataFile)")
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check a bundle as the host does before activating it; print \"valid\" (exit 0) or the reason (exit 1).",
            discussion: """
                Checks, in order: the size (truncated), the SHA-256 (tampered), a signature (unsigned), the \
                signature with the public key (wrong key or changed after signing), and that the file is a \
                content bundle.
                Example: hubhost bundle verify content.sqlite3 --pubkey pubkey.der
                """)

        @Argument(help: ArgumentHelp("The bundle file.", valueName: "file"))
        var file: String

        @Option(help: ArgumentHelp("The DER SubjectPublicKeyInfo public key (pubkey.der).", valueName: "pubkey.der"))
        var pubkey: String

        @Option(help: ArgumentHelp("The metadata document (default: FILE.json).", valueName: "file.json"))
        var metadata: String?

        @OptionGroup var output: JSONFlag

        struct Report: Encodable {
            var valid: Bool
            var file: String
            var version: String?
            var size: Int64?
            var sha256: String?
            var rejection: String?
            var reason: String?
        }

        func run() throws {
            let metadataPath = metadata ?? BundleMetadata.path(besideBundle: file)
            do {
                guard FileManager.default.fileExists(atPath: metadataPath) else {
                    throw BundleRejection(
                        .unsigned,
                        "there is no metadata document \(metadataPath) with the bundle's size, digest and signature; build with `hubhost bundle build --key` or pass --metadata"
                    )
                }
                let document: BundleMetadata
                do { document = try BundleMetadata.read(path: metadataPath) } catch { throw BundleRejection(.unreadable, "\(error)") }
                let bundle = try BundleVerifier.verifyFile(file, metadata: document, publicKeyPath: pubkey)
                if output.json {
                    Output.json(Report(valid: true, file: file, version: bundle.metadata.version, size: document.size, sha256: document.sha256))
                } else {
                    print("valid: \(file) (version \(bundle.metadata.version), \(document.size) bytes, sha256 \(document.sha256))")
                }
            } catch let rejection as BundleRejection {
                if output.json {
                    Output.json(Report(valid: false, file: file, rejection: rejection.kind.rawValue, reason: rejection.reason))
                } else {
                    Output.error("invalid (\(rejection.kind.rawValue)): \(rejection.reason)")
                }
                throw ExitCode.failed
            }
        }
    }

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect",
            abstract: "Print a bundle's metadata, hubs, channels and articles (in bundle order), resources and notifications, without verifying it.")

        @Argument(help: ArgumentHelp("The bundle file.", valueName: "file"))
        var file: String

        @OptionGroup var output: JSONFlag

        struct ResourceRow: Encodable {
            var path: String
            var mimeType: String
            var size: Int
        }
        struct Report: Encodable {
            var file: String
            var metadata: ContentBundle.Metadata
            var hubs: [ContentBundle.Hub]
            var resources: [ResourceRow]
            var notifications: [ContentBundle.ScheduledNotification]
        }

        func run() throws {
            let bundle: ContentBundle
            do { bundle = try ContentBundle(path: file) } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
            let resources = bundle.resourcePaths().compactMap { bundle.resource($0) }.map {
                ResourceRow(path: $0.path, mimeType: $0.mimeType, size: $0.data.count)
            }
            if output.json {
                Output.json(
                    Report(file: file, metadata: bundle.metadata, hubs: bundle.hubs, resources: resources, notifications: bundle.notifications))
                return
            }
            print("\(file): version \(bundle.metadata.version), created \(bundle.metadata.created), content source \(bundle.metadata.contentSource)")
            func tags(_ list: [String]) -> String { list.isEmpty ? "" : "  [\(list.joined(separator: ", "))]" }
            for hub in bundle.hubs {
                print("hub \(hub.id): \(hub.title)\(tags(hub.tags))")
                for channel in hub.channels {
                    print("  channel \(channel.id): \(channel.title)\(tags(channel.tags))")
                    for article in channel.articles {
                        print("    article \(article.id): \(article.title)\(tags(article.tags))\(article.sourceURL.map { "  <\($0)>" } ?? "")")
                    }
                }
            }
            if !resources.isEmpty {
                print("resources:")
                for r in resources { print("  \(r.path)  \(r.mimeType)  \(r.size) bytes") }
            }
            if !bundle.notifications.isEmpty {
                print("notifications:")
                let formatter = ISO8601DateFormatter()
                for n in bundle.notifications {
                    print(
                        "  \(n.id)  \(formatter.string(from: Date(timeIntervalSince1970: Double(n.fireAtMs) / 1000)))  \(n.message)  -> \(n.actionURI)"
                    )
                }
            }
        }
    }
}
