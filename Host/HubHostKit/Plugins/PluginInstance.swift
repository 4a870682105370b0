import Foundation
import HubHostABI

/// One created plugin: a descriptor from a loaded library, its instance handle and its services table.
/// The kind adapters (LoggingPlugin, AdvertiserIDPlugin, ...) call through it.
/// Safe to share: every field but `destroyed` is a `let` set in init, and `destroyed` is read and written under
/// `destroyLock`; calls into the plugin follow each kind header's threading rules, which the kind adapters keep.
public final class PluginInstance: @unchecked Sendable {
    /// The instance id from plugins.yaml.
    public let instanceID: String
    /// The plugin's descriptor in its library (id, kind, ABI).
    public let descriptor: PluginDescriptor
    /// The loaded library; kept open while the instance lives.
    public let library: PluginLibrary
    let services: HostServices
    package let handle: UnsafeMutableRawPointer?
    private let destroyLock = NSLock()
    private var destroyed = false

    private init(
        instanceID: String, descriptor: PluginDescriptor, library: PluginLibrary, services: HostServices,
        handle: UnsafeMutableRawPointer?
    ) {
        self.instanceID = instanceID
        self.descriptor = descriptor
        self.library = library
        self.services = services
        self.handle = handle
    }

    /// Creates an instance of `descriptor` with `config` (already checked against the schema).
    /// A failing create throws `.createFailed` with the plugin's own message.
    public static func create(
        _ descriptor: PluginDescriptor, of library: PluginLibrary, instanceID: String,
        config: [String: PluginValue], dataDirectory: String, pipeline: LogPipeline,
        environment: HostEnvironment = HostEnvironment()
    ) throws -> PluginInstance {
        let services = HostServices(
            instanceID: instanceID, config: config, dataDirectory: dataDirectory, pipeline: pipeline,
            environment: environment)
        var handle: UnsafeMutableRawPointer?
        let status = descriptor.raw.pointee.create(UnsafePointer(services.table), &handle)
        guard status == HH_OK else {
            throw PluginLoadError.createFailed(instance: instanceID, plugin: descriptor.id, status: status, message: services.takeError())
        }
        return PluginInstance(instanceID: instanceID, descriptor: descriptor, library: library, services: services, handle: handle)
    }

    /// The plugin's kind, from its descriptor.
    public var kind: PluginKind { descriptor.kind }

    /// The kind's function table, typed. Callers check `kind` first.
    package func api<T>(_ type: T.Type) -> UnsafePointer<T> {
        descriptor.raw.pointee.kind_api.assumingMemoryBound(to: T.self)
    }

    /// The message the plugin reported for its last failure on this thread.
    func takeError() -> String { services.takeError() }

    /// Why this thread's last HTTP service request of this instance failed, if one did since the last read.
    func takeHTTPFailure() -> String? { services.takeHTTPFailure() }

    /// Destroys the instance once; later calls do nothing. The caller guarantees no call is running.
    public func destroy() {
        let first = destroyLock.withLock { () -> Bool in
            defer { destroyed = true }
            return !destroyed
        }
        if first { descriptor.raw.pointee.destroy(handle) }
    }

    deinit { destroy() }
}
