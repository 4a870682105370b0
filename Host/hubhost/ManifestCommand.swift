import ArgumentParser
import Foundation
import HubHostKit

struct ManifestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Check the host manifest (plugins.yaml) and the plugin manifests it uses.",
        subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Check a host manifest; list every problem with file:line:column.",
            discussion: """
                Every enabled instance's library must be found, as the host would look it up here: next to its \
                plugin.yaml, in each folder of HUBHOST_PLUGIN_PATH, then beside the hubhost executable. \
                Exits 0 when the manifest is valid, 1 when it has problems, 2 when it cannot be read at all.
                """)

        @Argument(help: ArgumentHelp("The host manifest (or give it with --manifest, as every other command takes it).", valueName: "path"))
        var argument: String?

        @Option(name: .long, help: ArgumentHelp("The host manifest, as every other command takes it.", valueName: "path"))
        var manifest: String?

        /// The manifest to check: the argument or --manifest (not both), else ./plugins.yaml.
        var path: String { argument ?? manifest ?? "plugins.yaml" }

        func validate() throws {
            if let argument, let manifest, argument != manifest {
                throw ValidationError("name the manifest once: as the argument ('\(argument)') or with --manifest ('\(manifest)')")
            }
        }

        @Flag(name: .long, help: "Print the effective configuration: paths resolved, defaults filled in, durations in seconds.")
        var resolved = false

        @OptionGroup var output: JSONFlag

        struct Report: Encodable {
            var file: String
            var valid: Bool
            var diagnostics: [ManifestDiagnostic]
            var resolved: ResolvedManifest?
        }

        func run() throws {
            let manifest: HostManifest
            do {
                manifest = try HostManifest.load(path: path)
            } catch let error as ManifestError {
                if output.json {
                    Output.json(Report(file: path, valid: false, diagnostics: error.diagnostics, resolved: nil))
                } else {
                    Output.error(error.description)
                }
                throw ExitCode.unusableInput
            }
            let effective = resolved ? ResolvedManifest(manifest) : nil
            let diagnostics = manifest.diagnostics + Self.missingLibraries(manifest)
            if output.json {
                Output.json(Report(file: manifest.file, valid: diagnostics.isEmpty, diagnostics: diagnostics, resolved: effective))
            } else {
                if let effective { Output.json(effective) }
                for diagnostic in diagnostics { Output.error("\(diagnostic)") }
                if diagnostics.isEmpty {
                    print("\(manifest.file): valid (\(manifest.instances.count) plugin instance\(manifest.instances.count == 1 ? "" : "s"))")
                } else {
                    Output.error("\(manifest.file): \(diagnostics.count) problem\(diagnostics.count == 1 ? "" : "s")")
                }
            }
            if !diagnostics.isEmpty { throw ExitCode.failed }
        }

        /// A problem for each enabled instance (whose entry is otherwise valid) whose library cannot
        /// be found where the host would look for it: the host would run without it. Reported at
        /// the instance's entry in plugins.yaml, with the folders searched and how to point hubhost at it.
        static func missingLibraries(_ manifest: HostManifest, locator: LibraryLocator = LibraryLocator()) -> [ManifestDiagnostic] {
            let lines = (try? String(contentsOfFile: manifest.file, encoding: .utf8))?.split(separator: "\n", omittingEmptySubsequences: false) ?? []
            return manifest.instances.enumerated().compactMap { index, instance in
                guard instance.enabled, instance.problems.isEmpty, let plugin = instance.plugin,
                    case .failure(let error) = locator.locate(library: plugin.library, manifestFolder: plugin.folder)
                else { return nil }
                // The column of the entry's first key ("  - id: geo" -> 5).
                let text = lines.indices.contains(instance.line - 1) ? lines[instance.line - 1] : ""
                let column = (text.firstIndex { $0 != " " && $0 != "-" }.map { text.distance(from: text.startIndex, to: $0) } ?? 0) + 1
                return ManifestDiagnostic(
                    file: manifest.file, line: instance.line, column: column, key: "plugins[\(index)]",
                    message: "instance '\(instance.id)': \(error)")
            }
        }
    }
}
