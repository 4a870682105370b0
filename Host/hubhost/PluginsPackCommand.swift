import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost plugins pack DIR [-o NAME-VERSION.hhp]`: a plugin folder into one package file.
struct PluginsPackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pack",
        abstract: "Pack a plugin folder (plugin.yaml, its library, README.md) into one .hhp package file.",
        discussion: """
            The folder holds plugin.yaml and the library its `library:` names, beside it (its platform \
            read from the library) or in lib/<triple>/ (x86_64-linux-gnu, aarch64-linux-gnu); a .wasm \
            plugin's module lies beside plugin.yaml. The library for this machine is loaded and must \
            agree with plugin.yaml, and plugin.yaml's `requires:` must include this hubhost. The \
            package is a plain ustar archive ending with SHA256SUMS (see docs/plugin-packages.md). \
            Exits 1 when the folder cannot be packed, naming the file and why.
            """)

    @Argument(help: ArgumentHelp("The plugin folder, holding plugin.yaml.", valueName: "dir"))
    var folder: String

    @Option(name: .shortAndLong, help: ArgumentHelp("The package to write (default: <id>-<version>.hhp in the current folder).", valueName: "file"))
    var output: String?

    @OptionGroup var json: JSONFlag

    func run() throws {
        let target: String
        if let output {
            target = output
        } else {
            // The default name needs the manifest's id and version; pack reports its problems if any.
            let manifest = PluginManifest.load(path: (folder as NSString).appendingPathComponent("plugin.yaml")).manifest
            target = manifest.map(PluginPackage.defaultFileName(for:)) ?? "plugin.hhp"
        }
        let report: PluginPackage.PackReport
        do {
            report = try PluginPackage.pack(folder: folder, output: target)
        } catch {
            Output.error("cannot pack: \(error)")
            throw ExitCode.failed
        }
        if json.json {
            Output.json(report)
            return
        }
        print("packed \(report.id) \(report.version) into \(report.output)")
        print("platforms: \(report.platforms.isEmpty ? "any (WebAssembly)" : report.platforms.joined(separator: ", "))")
        Output.table(["  FILE", "BYTES", "SHA-256"], report.files.map { ["  " + $0.name, "\($0.bytes)", $0.sha256] })
        for note in report.notes { print("note: \(note)") }
    }
}
