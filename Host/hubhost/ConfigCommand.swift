import ArgumentParser
import Foundation
import HubHostKit

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "config", abstract: "Show the effective configuration.",
                                                    subcommands: [Show.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every section's settings (server, events, deep_links, campaigns, hub): effective value and where it came from.",
            discussion: "The same values as `hubhost manifest check --resolved`; SOURCE is the plugins.yaml line or 'default'.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        struct Row: Encodable {
            var key: String
            var value: JSONValue
            var source: String
            var doc: String
        }

        func run() throws {
            let manifest: HostManifest
            do { manifest = try HostManifest.load(path: manifestOption.manifest) } catch let error as ManifestError {
                Output.error(error.description)
                throw ExitCode(2)
            }
            // One source of effective values for this command and `manifest check --resolved`.
            let rows = HostManifest.sectionNames.flatMap { manifest.effectiveSettings[$0] ?? [] }.map { setting in
                Row(key: setting.key, value: setting.value, source: setting.line.map { "\(manifest.file):\($0)" } ?? "default", doc: setting.doc)
            }
            if output.json { Output.json(rows) } else {
                Output.table(["KEY", "VALUE", "SOURCE"], rows.map { [$0.key, $0.value.text, $0.source] })
            }
            for diagnostic in manifest.diagnostics { Output.error("\(diagnostic)") }
        }
    }
}
