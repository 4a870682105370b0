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
            abstract: "Check a host manifest; list every problem with file:line:column.",
            discussion: "Exits 0 when the manifest is valid, 1 when it has problems, 2 when it cannot be read at all.")

        @Argument(help: ArgumentHelp("The host manifest.", valueName: "path"))
        var path: String = "plugins.yaml"

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
                throw ExitCode(2)
            }
            let effective = resolved ? ResolvedManifest(manifest) : nil
            if output.json {
                Output.json(Report(file: manifest.file, valid: manifest.isValid, diagnostics: manifest.diagnostics, resolved: effective))
            } else {
                if let effective { Output.json(effective) }
                for diagnostic in manifest.diagnostics { Output.error("\(diagnostic)") }
                if manifest.isValid {
                    print("\(manifest.file): valid (\(manifest.instances.count) plugin instance\(manifest.instances.count == 1 ? "" : "s"))")
                } else {
                    Output.error("\(manifest.file): \(manifest.diagnostics.count) problem\(manifest.diagnostics.count == 1 ? "" : "s")")
                }
            }
            if !manifest.isValid { throw ExitCode(1) }
        }
    }
}
