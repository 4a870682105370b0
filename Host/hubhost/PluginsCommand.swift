import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

struct PluginsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins",
        abstract: "List the plugin instances; start, inspect, test, pack and sign a plugin; trust a publisher's key.",
        subcommands: [
            List.self, Inspect.self, PluginCommand.Test.self, PluginsNewCommand.self, PluginsSDKCommand.self, PluginsPackCommand.self,
            Keygen.self, Sign.self, Trust.self, PluginsAddCommand.self, PluginsUpgradeCommand.self, PluginsRemoveCommand.self,
            PluginsVerifyCommand.self
        ])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "Show every plugin instance and its state, as the running serve has it.",
            discussion: """
                Asks the hubhost serve of the manifest (its server: address) for its instances, so \
                what is shown is what serve runs: its workers, its reloads. When no serve answers \
                there (or with --local), loads the manifest in this command instead and says so; \
                workers shown then are this command's own. Exits 1 when an enabled instance failed.
                """)

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        @Option(help: "The server, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).")
        var url: String?

        @Flag(help: "Load the manifest in this command instead of asking the running serve.")
        var local = false

        func run() throws {
            let rows: [PluginRow]
            if !local, let serve = manifestOption.runningServe(url) {
                if !output.json { print("instances of \(ServeLookup.servedBy(serve.url)):") }
                rows = serve.plugins.instances.map(PluginRow.init)
            } else {
                if !output.json { print(ServeLookup.loadedLocally(asked: local)) }
                let host = try manifestOption.startHost()
                defer { host.shutdown() }
                rows = PluginRow.rows(host.registry)
            }
            if output.json { Output.json(rows) } else { PluginRow.printTable(rows) }
            if rows.contains(where: { $0.state == "failed" }) { throw ExitCode.failed }
        }
    }

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect",
            abstract: "Describe a plugin from its plugin.yaml or .so, and check that binary and manifest agree.",
            discussion: """
                The plugin.yaml is read without loading the binary, so this works on a broken binary too.
                Then, if the library loads, its exported plugins are compared with the manifest.
                Exits 1 when the manifest has problems, the binary does not load, or the two disagree.
                """)

        @Argument(help: ArgumentHelp("A plugin.yaml or a plugin library (.so).", valueName: "path"))
        var path: String

        @OptionGroup var output: JSONFlag

        func run() throws {
            let report = PluginInspection.inspect(path: path)
            if output.json {
                Output.json(report)
            } else {
                printText(report)
            }
            if !report.isConsistent { throw ExitCode.failed }
        }

        func printText(_ report: PluginInspection) {
            if let m = report.manifest {
                print("plugin.yaml:  \(m.file)")
                print("id:           \(m.id)")
                print("name:         \(m.name)")
                print("version:      \(m.version)")
                print("abi:          \(m.abi)")
                print("library:      \(m.library)")
                if !m.description.isEmpty { print("description:  \(m.description)") }
                if !m.capabilities.isEmpty { print("capabilities: \(m.capabilities.joined(separator: ", "))") }
                print("exports:      \(m.exports.map { "\($0.id) (\($0.kind.rawValue))" }.joined(separator: ", "))")
                if !m.config.isEmpty {
                    print("config:")
                    Output.table(
                        ["  key", "type", "default", "required", "doc"],
                        m.config.map { key in
                            ["  " + key.key, key.type.rawValue, key.defaultValue.map { "\($0)" } ?? "-", key.required ? "yes" : "no", key.doc]
                        })
                }
            }
            for problem in report.manifestProblems { Output.error("\(problem)") }
            if let b = report.binary {
                print("")
                print("binary:       \(b.path)")
                print("binary abi:   \(b.abi)")
                if let sha = b.sha256 { print("sha256:       \(sha)") }
                if let imports = b.wasmImports { print("wasm imports: \(imports.isEmpty ? "none" : imports.joined(separator: ", "))") }
                if let exports = b.wasmExports { print("wasm exports: \(exports.joined(separator: ", "))") }
                Output.table(
                    ["  plugin", "kind", "version", "description"],
                    b.plugins.map {
                        ["  " + $0.id, $0.kind.rawValue, $0.version, $0.description]
                    })
            }
            if let problem = report.binaryProblem { Output.error("binary not loaded: \(problem)") }
            for disagreement in report.disagreements { Output.error("mismatch: \(disagreement)") }
            if report.isConsistent { print("\nmanifest and binary agree") }
        }
    }
}

/// One row of `plugins list` and `status`.
struct PluginRow: Encodable {
    var id: String
    var plugin: String?
    var kinds: [String]
    var version: String?
    var abi: String?
    var library: String?
    var enabled: Bool
    var state: String
    var loaded: Bool
    var reason: String?
    var exports: [String]
    /// in_process, process, or wasm (a .wasm library, run in WasmKit whatever `isolation:` says).
    var isolation: String
    /// For isolation: process: running (pid), restarting, or given up after N crashes in a window.
    var worker: String?
    var workerCrashes: Int?
    /// The reload that loaded it (0: at start) and the SHA-256 of its library's content.
    var generation: Int
    var libraryHash: String?
    /// Exports stuck in a call past its deadline.
    var stuck: [String]
    /// Its package (version, file, signer, verification), when installed from one.
    var package: PluginInstanceList.Package?

    /// A row from the running serve's answer.
    init(_ served: PluginInstanceList.Instance) {
        self.init(
            id: served.id, plugin: served.plugin, kinds: served.kinds ?? [], version: served.version, abi: served.abi,
            library: served.library, enabled: served.enabled ?? true, state: served.state,
            loaded: served.state == "loaded" || served.state == "ejected",
            reason: served.reason, exports: served.plugins.map(\.id), isolation: served.isolation, worker: served.worker,
            workerCrashes: served.workerCrashes, generation: served.generation, libraryHash: served.libraryHash,
            stuck: served.plugins.filter { $0.stuck == true }.map(\.id))
        package = served.package
    }

    init(
        id: String, plugin: String?, kinds: [String], version: String?, abi: String?, library: String?, enabled: Bool, state: String,
        loaded: Bool, reason: String?, exports: [String], isolation: String, worker: String?, workerCrashes: Int?, generation: Int,
        libraryHash: String?, stuck: [String]
    ) {
        self.id = id
        self.plugin = plugin
        self.kinds = kinds
        self.version = version
        self.abi = abi
        self.library = library
        self.enabled = enabled
        self.state = state
        self.loaded = loaded
        self.reason = reason
        self.exports = exports
        self.isolation = isolation
        self.worker = worker
        self.workerCrashes = workerCrashes
        self.generation = generation
        self.libraryHash = libraryHash
        self.stuck = stuck
    }

    static func rows(_ registry: PluginRegistry) -> [PluginRow] {
        registry.entries.map { entry in
            let plugin = entry.configuration.plugin
            let shown = entry.shown
            var row = PluginRow(
                id: entry.id, plugin: plugin?.id, kinds: plugin?.kinds.map(\.rawValue) ?? [],
                version: plugin?.version, abi: entry.binaryABI?.description ?? plugin?.abi,
                library: entry.libraryPath ?? plugin?.library, enabled: entry.configuration.enabled,
                state: shown.state, loaded: entry.state == .loaded, reason: shown.reason,
                exports: entry.plugins.map(\.pluginID),
                isolation: entry.runsIn,
                worker: entry.worker?.stateDescription, workerCrashes: entry.worker?.totalCrashes,
                generation: entry.generation, libraryHash: entry.libraryHash, stuck: entry.plugins.filter(\.calls.isStuck).map(\.pluginID))
            row.package = PluginInstanceList.Package(entry)
            return row
        }
    }

    static func printTable(_ rows: [PluginRow]) {
        if rows.isEmpty {
            print("no plugin instances configured")
            return
        }
        Output.table(
            ["ID", "KIND", "VERSION", "ABI", "ISOLATION", "LIBRARY", "PACKAGE", "STATE", "GEN", "SHA-256"],
            rows.map { row in
                [
                    row.id, row.kinds.joined(separator: ","), row.version ?? "-", row.abi ?? "-",
                    row.worker.map { "process: \($0)" } ?? row.isolation, row.library ?? "-",
                    row.package.map { "\($0.file), \($0.signer)\($0.allowUnsigned ? " (allow_unsigned)" : ""), \($0.verification)" } ?? "-",
                    row.reason.map { "\(row.state): \($0)" }
                        ?? (row.stuck.isEmpty ? row.state : "\(row.state), stuck: \(row.stuck.joined(separator: ", "))"),
                    "\(row.generation)", row.libraryHash.map { String($0.prefix(12)) } ?? "-"
                ]
            })
    }
}
