import ArgumentParser
import Foundation
import HubHostKit

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Show the effective configuration, or document every key.",
        subcommands: [Show.self, Reference.self])

    struct Reference: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reference",
            abstract: "Every key plugins.yaml accepts: type, default, accepted values and meaning.",
            discussion:
                "Read from the schemas the manifest parser checks. `--markdown` prints docs/configuration.md exactly; `--json` prints the sections and their keys. LIVE marks the keys a reload applies to a running serve; `--live` lists only those (with `--markdown`, the table docs/reload.md carries)."
        )

        @Flag(name: .long, help: "Print the Markdown page docs/configuration.md (with --live: docs/reload.md's table of live keys).")
        var markdown = false
        @Flag(name: .long, help: "Only the keys a reload applies to a running serve.")
        var live = false
        @OptionGroup var output: JSONFlag

        func validate() throws {
            if markdown && output.json { throw ValidationError("--markdown and --json are alternatives: choose one") }
        }

        func run() throws {
            if markdown {
                print(live ? ConfigReference.liveKeysMarkdown() : ConfigReference.markdown(), terminator: "")
            } else if output.json {
                let sections = ConfigReference.sections.map { section in
                    var section = section
                    if live { section.entries = section.entries.filter(\.live) }
                    return section
                }
                Output.json(live ? sections.filter { !$0.entries.isEmpty } : sections)
            } else {
                let entries = ConfigReference.sections.flatMap { $0.entries }.filter { !live || $0.live }
                let rows = entries.map { [$0.key, $0.type, $0.defaultValue, $0.accepted, $0.live ? "live" : ""] }
                Output.table(["KEY", "TYPE", "DEFAULT", "ACCEPTED", "LIVE"], rows)
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract:
                "Every section's settings (server, events, deep_links, campaigns, hub, identity, prefetch): effective value and where it came from.",
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
                throw ExitCode.unusableInput
            }
            // One source of effective values for this command and `manifest check --resolved`.
            let rows = HostManifest.sectionNames.flatMap { manifest.effectiveSettings[$0] ?? [] }.map { setting in
                Row(key: setting.key, value: setting.value, source: setting.line.map { "\(manifest.file):\($0)" } ?? "default", doc: setting.doc)
            }
            if output.json {
                Output.json(rows)
            } else {
                Output.table(["KEY", "VALUE", "SOURCE"], rows.map { [$0.key, $0.value.text, $0.source] })
            }
            for diagnostic in manifest.diagnostics { Output.error("\(diagnostic)") }
        }
    }
}
