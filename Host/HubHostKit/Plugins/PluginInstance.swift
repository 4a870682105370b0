import Foundation
import HubHostABI
import Synchronization

/// One created plugin: a descriptor from a loaded library, its instance handle and its services table.
/// The kind adapters (LoggingPlugin, AdvertiserIDPlugin, ...) call through it.
/// Unchecked Sendable: it holds the plugin's C instance pointer (`handle`); every field is a `let`, `destroyed` is a
/// Mutex, and calls into the plugin follow each kind header's threading rules, which the kind adapters keep.
public final class PluginInstance: @unchecked Sendable {
    /// The instance id from plugins.yaml.
    public let instanceID: String
    /// The plugin's descriptor in its library (id, kind, ABI).
    package let descriptor: PluginDescriptor
    /// The loaded library; kept open while the instance lives.
    package let library: PluginLibrary
    let services: HostServices
    package let handle: UnsafeMutableRawPointer?
    private let destroyed = Mutex(false)

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
    /// A failing create throws `.createFailed` with the plugin's own message. The create runs on a
    /// plugin-call thread and is waited for at most `deadlineSeconds`: one that has not returned by
    /// then throws `.createTimedOut` (the load or reload goes on without the instance), and if it
    /// returns later its instance is destroyed at once, since no one holds it.
    package static func create(
        _ descriptor: PluginDescriptor, of library: PluginLibrary, instanceID: String,
        config: [String: PluginValue], dataDirectory: String, pipeline: LogPipeline,
        environment: HostEnvironment = HostEnvironment(), deadlineSeconds: Double = HostManifest.Instance.defaultCreateTimeoutSeconds
    ) throws -> PluginInstance {
        let services = HostServices(
            instanceID: instanceID, config: config, dataDirectory: dataDirectory, pipeline: pipeline,
            environment: environment)
        let outcome = CreateOutcome()
        PluginCallThreads.run {
            var handle: UnsafeMutableRawPointer?
            let status = descriptor.raw.pointee.create(UnsafePointer(services.table), &handle)
            // The plugin's report is kept per thread: read it on the thread that created.
            let message = status == HH_OK ? "" : services.takeError()
            let created = status == HH_OK ? UncheckedHandle(handle) : nil
            if !outcome.finish(status: status, message: message, handle: created), status == HH_OK {
                descriptor.raw.pointee.destroy(handle)  // the caller gave up on it
            }
        }
        guard let (status, message, handle) = outcome.wait(seconds: deadlineSeconds) else {
            throw PluginLoadError.createTimedOut(instance: instanceID, plugin: descriptor.id, seconds: deadlineSeconds)
        }
        guard status == HH_OK else {
            throw PluginLoadError.createFailed(instance: instanceID, plugin: descriptor.id, status: status, message: message)
        }
        return PluginInstance(
            instanceID: instanceID, descriptor: descriptor, library: library, services: services, handle: handle?.pointer)
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
        let first = destroyed.withLock { destroyed -> Bool in
            defer { destroyed = true }
            return !destroyed
        }
        if first { descriptor.raw.pointee.destroy(handle) }
    }

    deinit { destroy() }
}

/// A plugin's instance handle on its way from the creating thread to the waiting one.
/// Unchecked Sendable: a C pointer, the plugin's, handed over once and only used by its receiver.
private struct UncheckedHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
    init(_ pointer: UnsafeMutableRawPointer?) { self.pointer = pointer }
}

/// The answer of a create, handed from the plugin-call thread to the loader; whoever comes second
/// learns it: a create that finishes after the loader gave up is told so and destroyed.
/// Sendable: the answer and whether the loader gave up live in a Mutex.
private final class CreateOutcome: Sendable {
    private struct State {
        var answer: (status: Int32, message: String, handle: UncheckedHandle?)?
        var abandoned = false
    }
    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    /// Records the create's answer; false when the loader already gave up.
    func finish(status: Int32, message: String, handle: UncheckedHandle?) -> Bool {
        let taken = state.withLock { state -> Bool in
            guard !state.abandoned else { return false }
            state.answer = (status, message, handle)
            return true
        }
        done.signal()
        return taken
    }

    /// The answer, or nil (and the create abandoned) when none came within `seconds`.
    func wait(seconds: Double) -> (status: Int32, message: String, handle: UncheckedHandle?)? {
        let limit = min(max(seconds.isFinite ? seconds : 0, 0.001), 86_400)
        _ = done.wait(timeout: .now() + .nanoseconds(Int(SafeTime.durationNs(limit))))
        return state.withLock { state in
            if let answer = state.answer { return answer }
            state.abandoned = true
            return nil
        }
    }
}
