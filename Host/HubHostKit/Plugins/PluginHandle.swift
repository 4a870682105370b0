/// One loaded plugin of an instance, wherever it runs: in this process (`isolation: in_process`,
/// the default) or in a worker child process (`isolation: process`). The kind adapters
/// (LoggingPlugin, AugmentationPlugin, ...) take a handle and hide the difference.
/// Sendable: all `let`s of Sendable types (the instance or worker in `backend`, the `calls` tracker and the
/// ejection state each guard their own).
public final class PluginHandle: Sendable {
    /// Where the plugin runs.
    package enum Backend: Sendable {
        case inProcess(PluginInstance)
        /// The worker and the plugin's index among the plugins it created.
        case isolated(PluginWorker, index: Int)
        /// A WebAssembly module instance and the plugin's index among the plugins it created.
        case wasm(WasmPluginInstance, index: Int)
    }

    /// The instance id from plugins.yaml.
    public let instanceID: String
    /// The plugin's id (its descriptor id).
    public let pluginID: String
    /// The plugin's kind.
    public let kind: PluginKind
    /// Where the plugin runs: an instance in this process, or a worker process.
    package let backend: Backend
    /// Its calls in flight and their deadlines: whether it is stuck in one.
    package let calls: PluginCallTracker
    /// Its run of failed calls, and whether it is ejected for it (not called for a while).
    package let ejection: PluginEjection

    /// A handle on an instance created in this process.
    public init(_ instance: PluginInstance) {
        instanceID = instance.instanceID
        calls = PluginCallTracker(instance: instanceID, kind: instance.kind.rawValue)
        pluginID = instance.descriptor.id
        kind = instance.kind
        backend = .inProcess(instance)
        ejection = PluginEjection(instanceID: instanceID, pluginID: pluginID)
    }

    package init(worker: PluginWorker, index: Int, pluginID: String, kind: PluginKind) {
        instanceID = worker.instanceID
        calls = PluginCallTracker(instance: instanceID, kind: kind.rawValue)
        self.pluginID = pluginID
        self.kind = kind
        backend = .isolated(worker, index: index)
        ejection = PluginEjection(instanceID: instanceID, pluginID: pluginID)
    }

    package init(wasm: WasmPluginInstance, index: Int) {
        instanceID = wasm.instanceID
        calls = PluginCallTracker(instance: instanceID, kind: wasm.plugins[index].kind.rawValue)
        pluginID = wasm.plugins[index].id
        kind = wasm.plugins[index].kind
        backend = .wasm(wasm, index: index)
        ejection = PluginEjection(instanceID: instanceID, pluginID: pluginID)
    }

    /// The in-process instance, when it runs here.
    public var instance: PluginInstance? {
        if case .inProcess(let instance) = backend { return instance }
        return nil
    }

    /// Destroys an in-process or WebAssembly instance; an isolated one ends with its worker.
    public func destroy() {
        switch backend {
        case .inProcess(let instance): instance.destroy()
        case .wasm(let guest, let index): guest.destroy(index)
        case .isolated: break
        }
    }
}
