import Foundation

/// Where a plugin named by its id in plugins.yaml (`use: standard-operators`) is found, so that a
/// plugins.yaml copied anywhere still loads: the bundled plugins of the running hubhost (the
/// `Plugins/` folder of the package it was built from, or `<prefix>/share/hubhost/plugins` of an
/// installed one), then each folder of `HUBHOST_PLUGIN_PATH`. In each folder a plugin is a
/// subfolder holding its plugin.yaml: `<folder>/<id>/plugin.yaml`, or any subfolder whose
/// plugin.yaml says `id: <id>` (the bundled ones are named in CamelCase).
///
/// The folders are read once per search path, when a first id is looked up (a manifest load makes
/// one for all its instances), not once per instance.
package final class PluginSearchPath {
    /// The folders searched, in order.
    package let folders: [String]
    /// Plugin id -> its plugin.yaml, the first found in folder order; built on first use.
    private lazy var index: [String: String] = Self.index(folders)

    package init(folders: [String]) { self.folders = folders }

    /// The bundled plugins of the running hubhost, then `HUBHOST_PLUGIN_PATH`.
    package static func standard(environment: [String: String] = ProcessInfo.processInfo.environment) -> PluginSearchPath {
        let extra = (environment["HUBHOST_PLUGIN_PATH"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
        return PluginSearchPath(folders: HubHostInstallation.bundledPluginFolders() + extra)
    }

    /// Whether `use` names a plugin by id rather than by path: a plugin id, with no '/' and not a
    /// file name ending in .yaml or .yml.
    package static func isPluginID(_ use: String) -> Bool {
        !use.contains("/") && !use.hasSuffix(".yaml") && !use.hasSuffix(".yml") && PluginManifest.isValidID(use)
    }

    /// The plugin.yaml of the plugin `id`, or nil.
    package func manifest(of id: String) -> String? { index[id] }

    /// Every plugin in `folders`: in each folder, the subfolders holding a plugin.yaml, by the id
    /// it declares (a subfolder named after its id wins within its folder); an earlier folder wins.
    private static func index(_ folders: [String]) -> [String: String] {
        var found: [String: String] = [:]
        for folder in folders {
            var here: [String: String] = [:]
            let children = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
            for child in children.prefix(10_000) {  // bounded: a plugin folder holds a handful
                let manifest = ((folder as NSString).appendingPathComponent(child) as NSString).appendingPathComponent("plugin.yaml")
                guard let id = declaredID(manifest) else { continue }
                if here[id] == nil || child == id { here[id] = manifest }
            }
            found.merge(here) { earlier, _ in earlier }
        }
        return found
    }

    /// The `id:` a plugin.yaml declares on a line of its own (read without parsing the whole file:
    /// the search must not report other plugins' problems).
    static func declaredID(_ path: String) -> String? {
        guard let bytes = try? BoundedFile.read(path: path, maxBytes: YAMLLimits.maxBytes) else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n").prefix(200) where line.hasPrefix("id:") {
            let value = line.dropFirst(3).split(separator: "#").first?.trimmingCharacters(in: .whitespaces) ?? ""
            return value.trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
        }
        return nil
    }
}

/// Where the running hubhost keeps what it ships beside its executable: built from a package
/// checkout, the package's folder (its `Plugins/` and `Examples/`); installed under a prefix,
/// `<prefix>/share/hubhost`.
package enum HubHostInstallation {
    /// The folders holding the bundled plugins, first found first.
    package static func bundledPluginFolders(executableFolder: String? = LibraryLocator.runningExecutableFolder()) -> [String] {
        resourceFolders(executableFolder: executableFolder).compactMap { root in
            for name in ["Plugins", "plugins"] {
                let folder = (root as NSString).appendingPathComponent(name)
                var isFolder: ObjCBool = false
                if FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue { return folder }
            }
            return nil
        }
    }

    /// The folders a relative path of plugins.yaml falls back to when it is not found beside the
    /// file: the package checkout the executable was built in, or `<prefix>/share/hubhost`.
    package static func resourceFolders(executableFolder: String? = LibraryLocator.runningExecutableFolder()) -> [String] {
        guard let executableFolder else { return [] }
        var found: [String] = []
        let installed = (((executableFolder as NSString).deletingLastPathComponent as NSString).appendingPathComponent("share") as NSString)
            .appendingPathComponent("hubhost")
        if FileManager.default.fileExists(atPath: installed) { found.append(installed) }
        // A build folder: <package>/.build/<triple>/<configuration>/ (or .build/<configuration>).
        var folder = executableFolder as NSString
        for _ in 0..<4 {  // bounded: the package is at most a few levels up
            folder = folder.deletingLastPathComponent as NSString
            if folder.lastPathComponent.hasPrefix(".build") {
                let package = folder.deletingLastPathComponent
                if FileManager.default.fileExists(atPath: (package as NSString).appendingPathComponent("Package.swift")) { found.append(package) }
                break
            }
        }
        return found
    }
}
