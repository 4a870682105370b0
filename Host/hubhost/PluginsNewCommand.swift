import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

/// `hubhost plugins new`: a new plugin's folder (source, plugin.yaml, Makefile, README) that builds
/// outside a hubhost checkout.
struct PluginsNewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Start a plugin: write its source, plugin.yaml, a Makefile and a README into a new folder.",
        discussion: """
            --lang c writes the kinds \(PluginScaffold.kinds(.c).map(\.rawValue).joined(separator: ", ")); \
            --lang rust writes \(PluginScaffold.kinds(.rust).map(\.rawValue).joined(separator: ", ")); \
            --lang swift writes \(PluginScaffold.kinds(.swift).map(\.rawValue).joined(separator: ", ")).
            In the folder, `make` builds libNAME.so beside plugin.yaml: C with the headers of \
            `pkg-config --cflags hubhost-plugin` or `hubhost plugins sdk --cflags`; Rust with \
            `cargo build --release --offline` (no dependencies); Swift with swiftc and \
            `hubhost plugins sdk --swift-flags`. `make test` runs `hubhost plugins test plugin.yaml`.
            Exits 1 when the folder exists and is not empty.
            """)

    @Argument(help: ArgumentHelp("The plugin id: lowercase letters, digits, '-', '_' and '.'.", valueName: "name"))
    var name: String

    @Option(help: ArgumentHelp("The plugin kind, e.g. augmentation or trigger_operator.", valueName: "kind"))
    var kind: String

    @Option(help: ArgumentHelp("The language of the source: c, rust or swift.", valueName: "lang"))
    var lang: String = "c"

    @Option(help: ArgumentHelp("The folder to write into (default ./NAME); must be new or empty.", valueName: "dir"))
    var dir: String?

    func validate() throws {
        do {
            _ = try PluginScaffold(id: name, kind: kind, language: lang)
        } catch let refusal as PluginScaffold.Refusal {
            throw ValidationError(refusal.description)
        }
    }

    func run() throws {
        let scaffold = try PluginScaffold(id: name, kind: kind, language: lang)
        let folder = dir ?? name
        do {
            let written = try scaffold.write(into: folder)
            for path in written { print(path) }
            Output.error("next: cd \(folder) && make && make test   (README.md says how to load it)")
        } catch let refusal as PluginScaffold.Refusal {
            Output.error(refusal.description)
            throw ExitCode.failed
        }
    }
}

/// `hubhost plugins sdk`: the compiler flags for the ABI headers of this hubhost.
struct PluginsSDKCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdk",
        abstract: "Print the compiler flags for the plugin ABI headers of this hubhost.",
        discussion: """
            The headers are <prefix>/include of an installed hubhost, else Protocols/include of the \
            package checkout the executable was built from. Exits 1 when neither is found.
            """)

    @Flag(help: "Print the compiler flags: -I<folder>.")
    var cflags = false

    @Flag(help: "Print the swiftc flags that make `import HubHostABI` work (the headers' module map); exit 1 when there is none.")
    var swiftFlags = false

    @Flag(help: "Print the WebAssembly build script (scripts/build-wasm-plugin); exit 1 when there is none.")
    var wasmBuilder = false

    @OptionGroup var output: JSONFlag

    func run() throws {
        guard let sdk = PluginSDK.locate() else {
            Output.error("the plugin ABI headers were not found beside this hubhost (no <prefix>/include/hubhost, no checkout)")
            throw ExitCode.failed
        }
        if output.json {
            Output.json(sdk)
        } else if wasmBuilder {
            guard let builder = sdk.wasmBuilder else {
                Output.error("no scripts/build-wasm-plugin beside this hubhost")
                throw ExitCode.failed
            }
            print(builder)
        } else if swiftFlags {
            guard let flags = sdk.swiftFlags else {
                Output.error("no hubhost/hubhost.modulemap in \(sdk.include): this hubhost's headers cannot be imported by swiftc")
                throw ExitCode.failed
            }
            print(flags)
        } else if cflags {
            print(sdk.cflags)
        } else {
            print("cflags:  \(sdk.cflags)")
            print("swift:   \(sdk.swiftFlags ?? "-")")
            print("include: \(sdk.include)")
            print("wasm:    \(sdk.wasmBuilder ?? "-")")
        }
    }
}
