import Foundation
import Yams

/// Which licence key registration uses, and where it came from (the PCD SDK: the options dictionary,
/// then Info.plist, then a config file). hubhost's order: the Swift API option or `--license`,
/// then `prefetch.license` in plugins.yaml, then the `license` key of the YAML or JSON file the
/// environment variable HUBHOST_PREFETCH_CONFIG names. `prefetch status` prints `source`.
package struct PrefetchLicense: Sendable, Equatable, Codable {
    package enum Source: String, Sendable, Codable {
        /// The Swift API option (`HubHost.prefetch(license:)`) or the CLI's `--license`.
        case option
        /// `prefetch.license` in plugins.yaml.
        case manifest
        /// The file HUBHOST_PREFETCH_CONFIG names.
        case configFile = "config_file"
        /// None of them: registration cannot be attempted.
        case none
    }

    package var key: String?
    package var source: Source
    /// Why a source that was tried could not be used (an unreadable config file), for status.
    package var problem: String?

    /// The environment variable naming the licence file.
    package static let environmentVariable = "HUBHOST_PREFETCH_CONFIG"
    /// The largest licence file read: it holds one key.
    static let maxFileBytes = 64 * 1024

    /// Resolves the licence in precedence order. Blank values count as absent.
    package static func resolve(
        option: String?, manifest: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> PrefetchLicense {
        func given(_ value: String?) -> String? {
            guard let value = value?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
            return value
        }
        if let key = given(option) { return PrefetchLicense(key: key, source: .option) }
        if let key = given(manifest) { return PrefetchLicense(key: key, source: .manifest) }
        guard let path = given(environment[environmentVariable]) else { return PrefetchLicense(key: nil, source: .none) }
        switch readFile(path) {
        case .success(let key): return PrefetchLicense(key: key, source: .configFile)
        case .failure(let problem): return PrefetchLicense(key: nil, source: .none, problem: problem.message)
        }
    }

    struct FileProblem: Error { var message: String }

    /// The `license` key of a YAML or JSON file (JSON is read as YAML, of which it is a subset).
    static func readFile(_ path: String) -> Result<String, FileProblem> {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = (attributes[.size] as? NSNumber)?.intValue
        else {
            return .failure(FileProblem(message: "\(environmentVariable)=\(path): no such file"))
        }
        guard size <= maxFileBytes else {
            return .failure(FileProblem(message: "\(environmentVariable)=\(path): \(size) bytes, more than a licence file holds (\(maxFileBytes))"))
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return .failure(FileProblem(message: "\(environmentVariable)=\(path): not readable UTF-8 text"))
        }
        if let problem = YAMLLimits.problem(text) {
            return .failure(FileProblem(message: "\(environmentVariable)=\(path): \(problem)"))
        }
        let parsed: Any?
        do { parsed = try Yams.load(yaml: text) } catch {
            return .failure(FileProblem(message: "\(environmentVariable)=\(path): neither YAML nor JSON (\(error))"))
        }
        guard let object = parsed as? [String: Any] else {
            return .failure(FileProblem(message: "\(environmentVariable)=\(path): expected a mapping with a 'license' key"))
        }
        guard let key = (object["license"] as? String)?.trimmingCharacters(in: .whitespacesAndNewlines), !key.isEmpty else {
            return .failure(FileProblem(message: "\(environmentVariable)=\(path): no 'license' string in it"))
        }
        return .success(key)
    }
}
