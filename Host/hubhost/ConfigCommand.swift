import ArgumentParser
import Foundation
import HubHostKit

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "config", abstract: "Show the effective configuration.",
                                                    subcommands: [Show.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Each event setting's effective value and where it came from (default or manifest line).")

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
            let settings = manifest.events
            let rows = EventSettings.schema.keys.map { key in
                Row(key: "events.\(key.key)", value: settings.values[key.key]?.json ?? .null,
                    source: settings.lines[key.key].map { "\(manifest.file):\($0)" } ?? "default", doc: key.doc)
            } + [Row(key: "server.host", value: .string(manifest.server.host), source: "manifest or default", doc: "Where hubhost serve listens."),
                 Row(key: "server.port", value: .number(Double(manifest.server.port)), source: "manifest or default", doc: "0 picks a free port.")]
            if output.json { Output.json(rows) } else {
                Output.table(["KEY", "VALUE", "SOURCE"], rows.map { [$0.key, $0.value.text, $0.source] })
            }
            for diagnostic in manifest.diagnostics { Output.error("\(diagnostic)") }
        }
    }
}
