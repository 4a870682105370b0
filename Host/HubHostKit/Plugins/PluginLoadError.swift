/// Why a plugin library or instance did not load. Each case names the file or instance and says
/// what to do, because this text is what an integrator sees in `hubhost plugins list`.
public enum PluginLoadError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Problems in the instance's plugins.yaml entry or in its plugin.yaml, each at its file:line:column.
    case manifestProblems([ManifestDiagnostic])
    /// The file `library:` names is in none of the folders `searched`, in search order (for an absolute path, its folder).
    case libraryNotFound(library: String, searched: [String])
    /// The library at `path` hashes to `actual` (SHA-256, hex), not the `sha256` pin `expected`: it changed since it was pinned.
    case sha256Mismatch(path: String, expected: String, actual: String)
    /// A library file that is not read at all: not a regular file, too large, or unreadable.
    case unreadableLibrary(path: String, reason: String)
    /// dlopen refused the file; `reason` is dlerror's message, without the path.
    case notASharedObject(path: String, reason: String)
    /// A `.wasm` library that is not a module, does not instantiate or lacks the guest adapter.
    case notAWasmPlugin(path: String, reason: String)
    /// The library does not export the entry symbol `hubhost_library_entry`: it is not a hubhost plugin.
    case missingEntrySymbol(path: String)
    /// The library's `hubhost_library_entry()` returned NULL.
    case nullLibrary(path: String)
    /// The library was built for ABI `plugin`, whose major version is not the `host`'s; nothing else of it was read.
    case abiMismatch(path: String, plugin: ABIVersion, host: ABIVersion)
    /// The library's optional `init` answered `status` (an hh_status_t other than HH_OK); `message` may be empty.
    case libraryInitFailed(path: String, status: Int32, message: String)
    /// The library's plugin descriptors are invalid: descriptor `index` (0 also for the table as a whole), and why.
    case invalidDescriptor(path: String, index: Int, reason: String)
    /// The library and its plugin.yaml disagree (ids, kinds, versions, ABI major), as `reason` lists; also an
    /// unexpected error while loading, with the entry's `use:` as `path`.
    case manifestMismatch(path: String, reason: String)
    /// The create of plugin `plugin` (an export id) of `instance` answered `status` (an hh_status_t) with `message`,
    /// its report_error; the instance is disabled.
    case createFailed(instance: String, plugin: String, status: Int32, message: String)
    /// The in-process create of plugin `plugin` of `instance` did not return within `seconds` (`create_timeout`);
    /// its thread is left to finish and the instance is disabled.
    case createTimedOut(instance: String, plugin: String, seconds: Double)
    /// The worker process of an isolated instance (`isolation: process`) did not start; `reason` says why.
    case workerFailed(instance: String, reason: String)
    /// A library new to a running host failed when it was tried in a worker before loading in process.
    case trialFailed(instance: String, reason: String)
    /// An isolated instance whose worker crashed too often and was given up while serving.
    case workerGivenUp(instance: String, crashes: Int, cause: String)
    /// The entry says `enabled: false`: not loaded, and no failure (the registry records it as `.disabled`).
    case disabled

    public var description: String {
        switch self {
        case .manifestProblems(let problems):
            return "manifest problem\(problems.count == 1 ? "" : "s"): " + problems.map(\.description).joined(separator: "; ")
        case .libraryNotFound(let library, let searched):
            let found = "library \(library) not found; looked in: \(searched.joined(separator: ", "))"
            if let package = searched.first.flatMap(LibraryLocator.packageBundling(manifestFolder:)) {
                return found
                    + ". It is a plugin bundled with hubhost: build it with `swift build` in \(package) (or add the folder that holds it to HUBHOST_PLUGIN_PATH)"
            }
            return found
                + ". Add the folder that holds it to HUBHOST_PLUGIN_PATH (colon-separated), or give its path as `library:` in the plugin's plugin.yaml (relative to that file, or absolute)"
        case .sha256Mismatch(let path, let expected, let actual):
            return "\(path): sha256 is \(actual) but plugins.yaml pins \(expected); the library changed since it was pinned (not loaded)"
        case .unreadableLibrary(let path, let reason):
            return "\(path) cannot be read as a plugin library: \(reason)"
        case .notASharedObject(let path, let reason):
            return "\(path) is not a loadable shared object: \(reason)"
        case .notAWasmPlugin(let path, let reason):
            return "\(path) is not a loadable WebAssembly plugin: \(reason)"
        case .missingEntrySymbol(let path):
            return "\(path) does not export the entry symbol 'hubhost_library_entry'; is it a hubhost plugin? (see README, plugin author's guide)"
        case .nullLibrary(let path):
            return "\(path): hubhost_library_entry() returned NULL"
        case .abiMismatch(let path, let plugin, let host):
            return
                "\(path) was built for plugin ABI \(plugin), but this hubhost speaks ABI \(host); rebuild the plugin against the ABI \(host.major).x headers"
        case .libraryInitFailed(let path, let status, let message):
            return "\(path): library init failed (status \(status))\(message.isEmpty ? "" : ": \(message)")"
        case .invalidDescriptor(let path, let index, let reason):
            return "\(path): plugin descriptor \(index) is invalid: \(reason)"
        case .manifestMismatch(let path, let reason):
            return "\(path) does not match its plugin.yaml: \(reason)"
        case .createFailed(let instance, let plugin, let status, let message):
            return "instance '\(instance)' disabled: \(plugin) create failed (\(StatusCode.name(status)))\(message.isEmpty ? "" : ": \(message)")"
        case .createTimedOut(let instance, let plugin, let seconds):
            return
                "instance '\(instance)' disabled: \(plugin) create did not return within \(seconds) s (create_timeout); it is left to finish on its own thread and destroyed if it does"
        case .workerFailed(let instance, let reason):
            return "instance '\(instance)' disabled: its worker process (isolation: process) did not start: \(reason)"
        case .trialFailed(let instance, let reason):
            return
                "instance '\(instance)' not loaded: its library was tried in a worker process first, as a new library in a running hubhost is, and failed there: \(reason); it was not opened in hubhost itself"
        case .workerGivenUp(let instance, let crashes, let cause):
            return
                "instance '\(instance)' failed: its worker was given up after \(crashes) crashes (last: \(cause)); its calls fail until a reload or a restart of hubhost starts it again"
        case .disabled:
            return "disabled in plugins.yaml (enabled: false)"
        }
    }
}

/// Names of hh_status_t values, for messages.
package enum StatusCode {
    package static func name(_ status: Int32) -> String {
        switch status {
        case 0: return "HH_OK"
        case 1: return "HH_ERR_INVALID_ARGUMENT"
        case 2: return "HH_ERR_CONFIG"
        case 3: return "HH_ERR_UNSUPPORTED"
        case 4: return "HH_ERR_TYPE_MISMATCH"
        case 5: return "HH_ERR_NOT_FOUND"
        case 6: return "HH_ERR_TIMEOUT"
        case 7: return "HH_ERR_IO"
        case 8: return "HH_ERR_INTERNAL"
        case 9: return "HH_ERR_UNAVAILABLE"
        default: return "unknown status \(status)"
        }
    }
}
