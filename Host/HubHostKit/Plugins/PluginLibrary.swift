import Foundation
import HubHostABI
import Synchronization

/// What a plugin descriptor in a library says about one plugin.
/// Unchecked Sendable: `raw` is a C pointer, to the library's static, read-only descriptor, valid for the process's
/// life (libraries are never unloaded); every field is a `let`.
package struct PluginDescriptor: @unchecked Sendable {
    package let id: String
    package let name: String
    package let description: String
    package let version: String
    package let kind: PluginKind
    /// The descriptor itself: static memory inside the library, valid for the process's life.
    let raw: UnsafePointer<hh_plugin_descriptor_t>
}

/// One dlopen'ed plugin library with its ABI version checked and its descriptors read.
///
/// A library is opened from its `LibraryImage`: its content read once, checked as an ELF shared
/// object and sealed in memory, so that a file cut short or replaced after the check is never what
/// is mapped. Libraries are never unloaded: a Swift plugin registers runtime metadata that cannot
/// be removed safely, and a plugin may have started threads. Opening the same content twice (at
/// any path) returns the same object, so a library's `init` runs once per process for each content.
/// Unchecked Sendable: `library` is a C pointer, to the library's static table, never unloaded; every field is a `let`,
/// and the static cache of opened libraries is a Mutex.
package final class PluginLibrary: @unchecked Sendable {
    /// The file it was read from.
    package let path: String
    package let abiVersion: ABIVersion
    package let descriptors: [PluginDescriptor]
    /// The checked content it was loaded from (kept: the mapping outlives it anyway).
    package let image: LibraryImage
    let library: UnsafePointer<hh_library_t>

    private struct Cache {
        var libraries: [String: PluginLibrary] = [:]
        /// Every image handed to dlopen, kept open for the process's life: the dynamic linker knows a
        /// loaded library by its name, `/proc/self/fd/N`, so a descriptor number must never be reused
        /// for other content (a library that failed after dlopen stays mapped all the same).
        var dlopened: [LibraryImage] = []
    }
    /// Held over a whole open (dlopen, the library's init, its descriptors): one library opens at a time.
    private static let cache = Mutex(Cache())

    /// How many distinct library contents this process has dlopened (each stays mapped for the process's life).
    package static var openedCount: Int { cache.withLock { $0.libraries.count } }

    private init(
        path: String, abiVersion: ABIVersion, descriptors: [PluginDescriptor], image: LibraryImage, library: UnsafePointer<hh_library_t>
    ) {
        self.path = path
        self.abiVersion = abiVersion
        self.descriptors = descriptors
        self.image = image
        self.library = library
    }

    /// Whether this process already loaded `image`'s content (its init ran here).
    package static func isOpen(_ image: LibraryImage) -> Bool { cache.withLock { $0.libraries[image.sha256] != nil } }

    /// Reads the library at `path` (absolute) into a checked image and opens it (`open(_:)`).
    /// Throws PluginLoadError, never crashes on a file that is not a whole shared object.
    package static func open(path: String) throws -> PluginLibrary {
        try open(try LibraryImage.read(path: (path as NSString).resolvingSymlinksInPath))
    }

    /// Opens the checked `image`: checks its ABI version before anything else, runs its optional
    /// init once, and reads its descriptors. Throws PluginLoadError.
    package static func open(_ image: LibraryImage) throws -> PluginLibrary {
        // A content loaded from its file (LibraryImage.inPlace) is a mapping of its own.
        let key = image.mapsFile ? image.sha256 + " " + image.path : image.sha256
        return try cache.withLock { cache in
            if let cached = cache.libraries[key] { return cached }
            cache.dlopened.append(image)
            let opened = try load(image)
            cache.libraries[key] = opened
            return opened
        }
    }

    /// Opens `image`, which the caller has kept in `Cache.dlopened` (under the cache's lock).
    private static func load(_ image: LibraryImage) throws -> PluginLibrary {
        let path = image.path
        _ = dlerror()
        guard let handle = dlopen(image.loadPath, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            // dlerror repeats the name it was given first; keep only what follows it.
            let trimmed = reason.hasPrefix(image.loadPath + ": ") ? String(reason.dropFirst(image.loadPath.count + 2)) : reason
            throw PluginLoadError.notASharedObject(path: path, reason: trimmed)
        }
        guard let symbol = dlsym(handle, HH_ENTRY_SYMBOL) else {
            throw PluginLoadError.missingEntrySymbol(path: path)
        }
        let entry = unsafeBitCast(symbol, to: hh_library_entry_fn.self)
        guard let library = entry() else { throw PluginLoadError.nullLibrary(path: path) }

        // The version is the first member; nothing else is read until it matches.
        let version = ABIVersion(library.pointee.abi_version)
        guard version.major == ABIVersion.host.major else {
            throw PluginLoadError.abiMismatch(path: path, plugin: version, host: .host)
        }

        if let initialize = library.pointee.`init` {
            // Library init has no host table to report a message through: the status says it all.
            let status = initialize(path)
            if status != HH_OK {
                throw PluginLoadError.libraryInitFailed(path: path, status: status, message: "")
            }
        }

        let count = Int(library.pointee.plugin_count)
        guard count >= 1, count <= 4096 else {
            throw PluginLoadError.invalidDescriptor(path: path, index: 0, reason: "plugin_count is \(count); expected 1 to 4096")
        }
        guard let getPlugin = library.pointee.get_plugin else {
            throw PluginLoadError.invalidDescriptor(path: path, index: 0, reason: "get_plugin is NULL")
        }
        var descriptors: [PluginDescriptor] = []
        for index in 0..<count {
            descriptors.append(try readDescriptor(getPlugin(UInt32(index)), index: index, path: path, abi: version))
        }
        var seen = Set<String>()
        for descriptor in descriptors where !seen.insert(descriptor.id).inserted {
            throw PluginLoadError.invalidDescriptor(path: path, index: 0, reason: "plugin id '\(descriptor.id)' is exported twice")
        }
        return PluginLibrary(path: path, abiVersion: version, descriptors: descriptors, image: image, library: library)
    }

    private static func readDescriptor(
        _ pointer: UnsafePointer<hh_plugin_descriptor_t>?, index: Int, path: String,
        abi: ABIVersion
    ) throws -> PluginDescriptor {
        func fail(_ reason: String) -> PluginLoadError { .invalidDescriptor(path: path, index: index, reason: reason) }
        guard let pointer else { throw fail("get_plugin(\(index)) returned NULL") }
        let d = pointer.pointee
        guard let id = d.id.map({ String(cString: $0) }), PluginManifest.isValidID(id) else {
            throw fail("id is missing or not made of lowercase letters, digits, '-', '_' and '.'")
        }
        guard let kind = PluginKind(code: d.kind) else { throw fail("'\(id)' has unknown kind code \(d.kind)") }
        guard abi.minor >= kind.introducedInMinor else {
            throw fail("'\(id)' is a \(kind.rawValue) plugin, a kind added in ABI 1.\(kind.introducedInMinor), but the library says ABI \(abi)")
        }
        guard let kindAPI = d.kind_api else { throw fail("'\(id)' has no kind_api table") }
        if kind == .userIDGenerator, kindAPI.assumingMemoryBound(to: hh_user_id_generator_v1_t.self).pointee.generate == nil {
            throw fail("'\(id)' is a user_id_generator whose generate function is NULL")
        }
        guard d.create != nil, d.destroy != nil else { throw fail("'\(id)' lacks create or destroy") }
        guard let version = d.version.map({ String(cString: $0) }) else { throw fail("'\(id)' has no version") }
        return PluginDescriptor(
            id: id, name: d.name.map { String(cString: $0) } ?? id,
            description: d.description.map { String(cString: $0) } ?? "",
            version: version, kind: kind, raw: pointer)
    }

    /// Differences between this binary and its plugin.yaml (empty when they agree).
    package func disagreements(with manifest: PluginManifest) -> [String] {
        Self.disagreements(abiVersion: abiVersion, exported: descriptors.map { ($0.id, $0.kind, $0.version) }, with: manifest)
    }

    /// Differences between what a binary (a `.so` or a `.wasm`) exports and its plugin.yaml.
    package static func disagreements(
        abiVersion: ABIVersion, exported descriptors: [(id: String, kind: PluginKind, version: String)], with manifest: PluginManifest
    ) -> [String] {
        var problems: [String] = []
        let manifestMajor = manifest.abi.split(separator: ".").first.flatMap { UInt32($0) }
        if let manifestMajor, manifestMajor != abiVersion.major {
            problems.append("plugin.yaml says ABI \(manifest.abi), the binary was built for \(abiVersion)")
        }
        for export in manifest.exports {
            guard let descriptor = descriptors.first(where: { $0.id == export.id }) else {
                problems.append(
                    "plugin.yaml exports '\(export.id)', the binary does not (it exports \(descriptors.map { "'\($0.id)'" }.joined(separator: ", ")))"
                )
                continue
            }
            if descriptor.kind != export.kind {
                problems.append("'\(export.id)' is \(export.kind.rawValue) in plugin.yaml but \(descriptor.kind.rawValue) in the binary")
            }
            if descriptor.version != manifest.version {
                problems.append("'\(export.id)' is version \(descriptor.version) in the binary but \(manifest.version) in plugin.yaml")
            }
        }
        for descriptor in descriptors where !manifest.exports.contains(where: { $0.id == descriptor.id }) {
            problems.append("the binary exports '\(descriptor.id)' (\(descriptor.kind.rawValue)), which plugin.yaml does not list")
        }
        return problems
    }
}
