// HubHostPluginSupport: small helpers for plugins written in Swift. It links into the plugin's own
// library and depends only on the C protocol module, never on HubHostKit.
import HubHostABI

#if canImport(Glibc)
import Glibc
#endif

/// One plugin a Swift library exports: its descriptor fields and its kind's function table.
public struct SwiftPluginSpec {
    public var id: String
    public var name: String
    public var description: String
    public var version: String
    public var kind: hh_plugin_kind_t
    /// A pointer to the kind's table (e.g. `hh_logging_v1_t`); see `SwiftPluginLibrary.table(_:)`.
    public var kindAPI: UnsafeRawPointer
    public var create: @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t
    public var destroy: @convention(c) (UnsafeMutableRawPointer?) -> Void

    public init(id: String, name: String, description: String, version: String, kind: Int32, kindAPI: UnsafeRawPointer,
                create: @escaping @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t,
                destroy: @escaping @convention(c) (UnsafeMutableRawPointer?) -> Void) {
        self.id = id
        self.name = name
        self.description = description
        self.version = version
        self.kind = kind
        self.kindAPI = kindAPI
        self.create = create
        self.destroy = destroy
    }
}

/// Builds the static `hh_library_t` a Swift plugin returns from `hubhost_library_entry`:
///
///     private let library = SwiftPluginLibrary.make([SwiftPluginSpec(...)])
///     @_cdecl("hubhost_library_entry")
///     public func hubhostLibraryEntry() -> UnsafePointer<hh_library_t> { library }
///
/// Everything is allocated once and never freed: the ABI requires these tables to outlive every call.
/// The support module is linked into each plugin library, so each library has its own descriptors.
public enum SwiftPluginLibrary {
    nonisolated(unsafe) private static var descriptors: [UnsafePointer<hh_plugin_descriptor_t>] = []

    /// Copies a kind's function table to static memory and returns it for `SwiftPluginSpec.kindAPI`.
    public static func table<API>(_ api: API) -> UnsafeRawPointer {
        let pointer = UnsafeMutablePointer<API>.allocate(capacity: 1)
        pointer.initialize(to: api)
        return UnsafeRawPointer(pointer)
    }

    /// Call once, from a global initializer (Swift runs those exactly once, thread-safely).
    public static func make(_ specs: [SwiftPluginSpec]) -> UnsafePointer<hh_library_t> {
        descriptors = specs.map { spec in
            let descriptor = UnsafeMutablePointer<hh_plugin_descriptor_t>.allocate(capacity: 1)
            descriptor.initialize(to: hh_plugin_descriptor_t(
                id: UnsafePointer(strdup(spec.id)), name: UnsafePointer(strdup(spec.name)),
                description: UnsafePointer(strdup(spec.description)), version: UnsafePointer(strdup(spec.version)),
                kind: spec.kind, kind_api: spec.kindAPI, create: spec.create, destroy: spec.destroy, get_extension: nil))
            return UnsafePointer(descriptor)
        }
        let library = UnsafeMutablePointer<hh_library_t>.allocate(capacity: 1)
        library.initialize(to: hh_library_t(
            abi_version: hh_version_t(major: UInt32(HH_ABI_VERSION_MAJOR), minor: UInt32(HH_ABI_VERSION_MINOR),
                                      patch: UInt32(HH_ABI_VERSION_PATCH)),
            init: nil, deinit: nil, plugin_count: UInt32(specs.count),
            get_plugin: { index in Int(index) < SwiftPluginLibrary.descriptors.count ? SwiftPluginLibrary.descriptors[Int(index)] : nil }))
        return UnsafePointer(library)
    }
}
