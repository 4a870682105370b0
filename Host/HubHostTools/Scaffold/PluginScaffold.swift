import Foundation
import HubHostKit

/// A new plugin's folder, as `hubhost plugins new NAME --kind KIND --lang LANG` writes it: the
/// source, plugin.yaml, a Makefile (build, `make test`, `make package`; `make wasm` for C)
/// and a README, buildable outside a hubhost checkout with what an installed hubhost
/// gives (`hubhost plugins sdk --cflags` or pkg-config for C, `--swift-flags` for Swift; Rust needs
/// no headers).
public struct PluginScaffold: Sendable {
    /// The languages `--lang` names.
    public enum Language: String, CaseIterable, Sendable {
        case c, swift, rust

        /// The name as docs/plugin-authoring.md's section titles spell it.
        var title: String {
            switch self {
            case .c: return "C"
            case .swift: return "Swift"
            case .rust: return "Rust"
            }
        }
    }

    /// A refusal, with a message for the author.
    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
    }

    /// The kinds `--lang c` writes.
    public static var cKinds: [PluginKind] { CPluginTemplate.kinds }

    /// The kinds `language` writes.
    public static func kinds(_ language: Language) -> [PluginKind] {
        switch language {
        case .c: return CPluginTemplate.kinds
        case .rust: return RustPluginTemplate.kinds
        case .swift: return SwiftPluginTemplate.kinds
        }
    }

    public var id: String
    public var kind: PluginKind
    public var language: Language

    /// Checks the name, kind and language; throws a `Refusal` saying what is wrong.
    public init(id: String, kind: String, language: String) throws {
        guard PluginManifest.isValidID(id) else {
            throw Refusal(
                description: "'\(id)' is not a valid plugin id: use lowercase letters, digits, '-', '_' and '.' (e.g. my-plugin)")
        }
        guard let kind = PluginKind(rawValue: kind) else {
            throw Refusal(description: "unknown kind '\(kind)': one of \(PluginKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let language = Language(rawValue: language.lowercased()) else {
            throw Refusal(description: "unknown language '\(language)': one of \(Language.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let written = Self.kinds(language)
        guard written.contains(kind) else {
            let start =
                language == .c
                ? "docs/plugin-authoring.md, \"Plugin kinds\", has the \(kind.rawValue) header and a bundled example to start from."
                : Self.kinds(.c).contains(kind)
                    ? "--lang c writes it; docs/plugin-authoring.md, \"Plugins in \(language.title)\", shows how to write one by hand."
                    : "docs/plugin-authoring.md, \"Plugin kinds\" and \"Plugins in \(language.title)\", show how to write one by hand."
            throw Refusal(
                description: """
                    --lang \(language.rawValue) does not write \(kind.rawValue) plugins yet; it writes \(written.map(\.rawValue).joined(separator: ", ")). \
                    \(start)
                    """)
        }
        self.id = id
        self.kind = kind
        self.language = language
    }

    var names: CPluginTemplate.Names { CPluginTemplate.Names(id: id) }

    /// The kind's behaviour (its config, README lines and C source), which every language shares.
    var template: CPluginTemplate { CPluginTemplate.template(kind, names)! }

    /// The files, each a path in the plugin's folder and its text.
    public var files: [(name: String, text: String)] {
        let sources: [(name: String, text: String)]
        let makefile: String
        switch language {
        case .c:
            (sources, makefile) = ([("\(id).c", template.source)], cMakefile)
        case .rust:
            sources = [("Cargo.toml", RustPluginTemplate.cargoToml(names)), ("src/lib.rs", RustPluginTemplate.source(kind, names)!)]
            makefile = RustPluginTemplate.makefile(names)
        case .swift:
            (sources, makefile) = ([("\(id).swift", SwiftPluginTemplate.source(kind, names)!)], SwiftPluginTemplate.makefile(names))
        }
        return sources + [("plugin.yaml", pluginYAML), ("Makefile", makefile), ("README.md", readme)]
    }

    /// Writes the files into `folder`, creating it; refuses a folder that exists and is not empty.
    /// Returns the paths written.
    public func write(into folder: String) throws -> [String] {
        let fm = FileManager.default
        var isFolder: ObjCBool = false
        if fm.fileExists(atPath: folder, isDirectory: &isFolder) {
            guard isFolder.boolValue else { throw Refusal(description: "\(folder) exists and is not a folder") }
            let children = (try? fm.contentsOfDirectory(atPath: folder)) ?? []
            guard children.isEmpty else {
                throw Refusal(description: "\(folder) is not empty (\(children.count) entries): name a new or empty folder with --dir")
            }
        }
        try fm.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try files.map { file in
            let path = (folder as NSString).appendingPathComponent(file.name)
            try fm.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try file.text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }

    var pluginYAML: String {
        let t = template
        var text = """
            # \(id): \(t.summary)
            # Made by `hubhost plugins new`; the keys are in hubhost's docs/plugin-authoring.md.
            abi: "1.0"
            id: \(id)
            name: \(id)
            version: 0.1.0
            description: \(t.summary.prefix(1).uppercased() + t.summary.dropFirst())
            library: lib\(id).so
            exports:
              - id: \(id)
                kind: \(kind.rawValue)

            """
        text += t.config.isEmpty ? "config: []\n" : "config:\n" + t.config
        if !t.testConfig.isEmpty { text += "# A valid config for `hubhost plugins test`.\ntest_config:\n" + t.testConfig }
        return text
    }

    var cMakefile: String {
        #"""
        # Builds the hubhost plugin \#(id) (made by `hubhost plugins new`).
        #   make          lib\#(id).so, beside plugin.yaml
        #   make test     the conformance suite: hubhost plugins test plugin.yaml
        #   make wasm     \#(id).wasm, a WebAssembly build of the same source
        # The ABI headers come from pkg-config (an installed hubhost) or else from `hubhost plugins sdk`.
        HUBHOST ?= hubhost
        CC ?= cc
        CFLAGS ?= -O2 -g
        ifeq ($(strip $(HUBHOST_CFLAGS)),)
        HUBHOST_CFLAGS := $(shell pkg-config --cflags hubhost-plugin 2>/dev/null || $(HUBHOST) plugins sdk --cflags)
        endif

        lib\#(id).so: \#(id).c
        \#t@test -n "$(HUBHOST_CFLAGS)" || { echo "no hubhost headers: install hubhost (scripts/install) or put hubhost on PATH, or set HUBHOST_CFLAGS=-I<dir>" >&2; exit 1; }
        \#t$(CC) -std=c11 -Wall -Wextra -pedantic $(CFLAGS) -fPIC -shared $(HUBHOST_CFLAGS) -o $@ \#(id).c

        test: lib\#(id).so
        \#t$(HUBHOST) plugins test plugin.yaml

        wasm: \#(id).wasm

        \#(id).wasm: \#(id).c
        \#t@builder="$$($(HUBHOST) plugins sdk --wasm-builder 2>/dev/null)"; \
        \#tif [ -z "$$builder" ]; then \
        \#t\#techo "no WebAssembly builder found: it is scripts/build-wasm-plugin of a hubhost checkout or install; see docs/plugin-authoring.md, WebAssembly plugins" >&2; exit 1; \
        \#tfi; \
        \#t"$$builder" $@ \#(id).c || { echo "the wasm build needs Debian's clang, lld and wasi-libc (docs/plugin-authoring.md, WebAssembly plugins)" >&2; exit 1; }
        \#t@echo "built $@: set 'library: \#(id).wasm' in plugin.yaml to load it instead of lib\#(id).so"

        package: lib\#(id).so
        \#t$(HUBHOST) plugins pack .

        clean:
        \#trm -f lib\#(id).so \#(id).wasm

        .PHONY: test wasm package clean

        """#
    }

    var readme: String {
        let t = template
        return """
            # \(id)

            A hubhost plugin of kind `\(kind.rawValue)`: \(t.summary)

            Made by `hubhost plugins new \(id) --kind \(kind.rawValue) --lang \(language.rawValue)`.
            \(readmeEditing) Declare every config key you read in `config:`.

            ## Build and test

            ```sh
            \(readmeBuild)```

            `hubhost` must be on PATH (or run `make HUBHOST=/path/to/hubhost`).

            ## Use it

            Add an instance to the `plugins:` list of your `plugins.yaml` (the path is relative to it):

            ```yaml
            plugins:
              - id: \(id)
                use: path/to/\(id)/plugin.yaml
                config:
            \(t.instanceConfig.isEmpty ? "      {}\n" : t.instanceConfig)```

            Then:

            ```sh
            hubhost manifest check && hubhost plugins list
            \(t.tryIt)
            ```

            The ABI rules (ownership, threads, failure), every kind and its header, and how to run an
            untrusted plugin in a worker process are in hubhost's `docs/plugin-authoring.md`
            (installed in `share/doc/hubhost/docs/`).

            """
    }

    /// The README's lines on what to edit, for the plugin's language.
    var readmeEditing: String {
        switch language {
        case .c:
            return """
                Edit `\(id).c`; keep `id` and `version` in `plugin.yaml` equal to the descriptor's
                (`HH_SINGLE_PLUGIN_LIBRARY` at the end of the source).
                """
        case .rust:
            return """
                Edit `src/lib.rs`: its `#[repr(C)]` types mirror the C headers field by field, and every
                callback catches a panic so that none unwinds into the host. Keep `id` and `version` in
                `plugin.yaml` equal to `DESCRIPTOR`'s.
                """
        case .swift:
            return """
                Edit `\(id).swift`: `import HubHostABI` is the C headers as a Clang module, and the
                functions the host calls are plain Swift functions passed as C function pointers. Keep
                `id` and `version` in `plugin.yaml` equal to `descriptor`'s.
                """
        }
    }

    /// The README's build commands (shell lines, each ending in a newline), for the plugin's language.
    var readmeBuild: String {
        let test = "make test     # hubhost plugins test plugin.yaml: the conformance suite, each test in its own process\n"
        let package = "make package  # \(id)-0.1.0.hhp: hubhost plugins pack ., the plugin as one file (hubhost's docs/plugin-packages.md)\n"
        switch language {
        case .c:
            return "make          # lib\(id).so, with the headers of `pkg-config --cflags hubhost-plugin` or `hubhost plugins sdk --cflags`\n"
                + test + "make wasm     # \(id).wasm, when Debian's clang, lld and wasi-libc are installed\n" + package
        case .rust:
            return """
                make          # cargo build --release --offline (no dependencies), then lib\(id).so beside plugin.yaml
                \(test)\(package)
                """
        case .swift:
            let swiftc = SwiftPluginTemplate.compileLine(
                names, swiftc: "swiftc", flags: "-O", sdk: "$(hubhost plugins sdk --swift-flags)", output: "lib\(id).so")
            return """
                make          # lib\(id).so: swiftc with the module map of `hubhost plugins sdk --swift-flags`, i.e.
                              # \(swiftc)
                \(test)\(package)
                """
        }
    }
}
