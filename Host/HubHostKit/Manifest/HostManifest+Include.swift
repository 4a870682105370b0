import Foundation
import Yams

#if canImport(Glibc)
    import Glibc
#endif

/// `include:` in plugins.yaml: more instance files, conf.d style, so that tools (`hubhost plugins
/// add`) add and remove instances by writing and deleting whole files, never rewriting the YAML a
/// person wrote.
///
///     include: plugins.d/*.yaml          # or a list of patterns
///
/// Each pattern is a glob, relative to plugins.yaml's folder; its files are read in name order,
/// after plugins.yaml's own `plugins:`. An included file holds only a `plugins:` list, with the
/// same keys; its `use:` paths are relative to plugins.yaml's folder, as if written there. A
/// pattern that matches nothing is no problem (an empty plugins.d/).
extension HostManifest {
    /// At most this many files are included, over all patterns.
    public static let maxIncludedFiles = 1_000

    /// The files `include:`'s patterns match, in order, each once (plugins.yaml itself never).
    static func includedFiles(patterns: [String], folder: String, manifestFile: String) -> [String] {
        var files: [String] = []
        var seen = Set([manifestFile])
        for pattern in patterns {
            var matches = glob_t()
            defer { globfree(&matches) }
            guard glob(absolute(pattern, from: folder), 0, nil, &matches) == 0 else { continue }
            for index in 0..<Int(matches.gl_pathc) {
                guard let pointer = matches.gl_pathv[index], files.count < maxIncludedFiles else { break }
                let path = (String(cString: pointer) as NSString).standardizingPath
                if seen.insert(path).inserted { files.append(path) }
            }
        }
        return files
    }

    /// The instances of the files `node` (a pattern or a list of patterns) includes. Problems with
    /// the patterns are reported through `reader`; an included file's own (not YAML, a key other
    /// than `plugins:`) are added to `fileProblems`.
    static func includedInstances(
        _ node: Node, reader: YAMLReader, context: inout InstanceContext, fileProblems: inout [ManifestDiagnostic]
    ) -> [Instance] {
        var patterns: [String] = []
        if case .scalar = node, let pattern = reader.string(node, key: "include") {
            patterns = [pattern]
        } else if let items = reader.sequence(node, key: "include") {
            patterns = items.compactMap { reader.string($0, key: "include") }
        }
        for pattern in patterns where pattern.isEmpty {
            reader.report(node, key: "include", "an empty pattern includes nothing; name files, e.g. plugins.d/*.yaml")
        }
        let files = includedFiles(patterns: patterns.filter { !$0.isEmpty }, folder: context.folder, manifestFile: context.manifestFile)
        if files.count >= maxIncludedFiles {
            reader.report(node, key: "include", "the patterns match \(maxIncludedFiles) files or more; only the first \(maxIncludedFiles) are read")
        }
        var instances: [Instance] = []
        let manifestFile = context.file
        defer { context.file = manifestFile }
        for file in files {
            context.file = file
            let fileReader = YAMLReader(file: file)
            guard let root = fileReader.load(), let entries = fileReader.mapping(root, key: "") else {
                fileProblems += fileReader.diagnostics
                continue
            }
            let top = fileReader.known(entries, allowed: ["plugins"], in: "", what: "section")
            if let listNode = top["plugins"]?.value, let items = fileReader.sequence(listNode, key: "plugins") {
                for (index, item) in items.enumerated() {
                    instances.append(parseInstance(item, index: index, context: &context))
                }
            }
            fileProblems += fileReader.diagnostics
        }
        return instances
    }
}
