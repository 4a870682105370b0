import Foundation
import HubHostABI

/// A `trigger_operator` plugin: compares an event value with a trigger value.
/// Safe to share: immutable after init (all `let`s, the C table and instance pointers included), and `compare` is
/// [thread-safe] in hubhost_trigger_operator.h.
public final class TriggerOperatorPlugin: @unchecked Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle
    /// The operator's name and wire code, read once (from the worker when isolated).
    public let operatorName: String
    /// The operator's In-App Messaging wire code, 1 to 8; 0 for an operator named by string only.
    public let wireCode: Int32
    /// In-process: the operator table and the instance's handle, read once, so that a comparison
    /// (the campaign engine makes millions) is one indirect call with no lookup on the way.
    private let api: UnsafePointer<hh_trigger_operator_v1_t>?
    private let instanceHandle: UnsafeMutableRawPointer?

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .triggerOperator, "TriggerOperatorPlugin needs a trigger_operator plugin")
        self.handle = handle
        if let instance = handle.instance {
            let api = instance.api(hh_trigger_operator_v1_t.self)
            operatorName = api.pointee.operator_name.map { String(cString: $0) } ?? instance.descriptor.id
            wireCode = api.pointee.wire_code
            self.api = api
            instanceHandle = instance.handle
        } else {
            (operatorName, wireCode) = IsolatedCalls.operatorInfo(handle)
            api = nil
            instanceHandle = nil
        }
    }

    /// In-process: the compare function and the instance's handle, for a caller that calls it in a
    /// loop and keeps this plugin alive meanwhile (the campaign engine's compiled triggers); nil
    /// when the plugin is isolated.
    var inProcessCompare: (compare: CompiledTriggers.Compare, instance: UnsafeMutableRawPointer?)? {
        guard let api, let compare = api.pointee.compare else { return nil }
        return (compare, instanceHandle)
    }

    /// The operator's answer; a type mismatch or a failure answers false (and says why in `reason`).
    /// Isolated: a failed worker answers false.
    /// An isolated operator ejected after failing calls in a row answers false (HH_ERR_UNAVAILABLE)
    /// at once; an in-process one is bounded by the campaign evaluation's deadline instead, which
    /// keeps this call free of a lock.
    public func compare(event: PluginValue, trigger: PluginValue) -> (result: Bool, status: Int32, reason: String) {
        guard let api else {
            return handle.unlessEjected(
                { IsolatedCalls.compare(handle, event, trigger) },
                verdict: { PluginEjection.verdict(status: $0.status, message: $0.reason) })
                ?? (false, HH_ERR_UNAVAILABLE, handle.ejectedMessage)
        }
        var result = false
        let status = event.withRawValue { eventRaw in
            trigger.withRawValue { triggerRaw in
                api.pointee.compare(instanceHandle, eventRaw, triggerRaw, &result)
            }
        }
        if status == HH_OK { return (result, status, "") }
        return (false, status, handle.instance?.takeError() ?? "")
    }
}

extension PluginValue {
    /// Calls `body` with this value as an hh_value_t whose string bytes are borrowed for the call.
    func withRawValue<R>(_ body: (UnsafePointer<hh_value_t>) -> R) -> R {
        var raw = hh_value_t()
        switch self {
        case .null:
            raw.type = HH_VALUE_NULL
            return body(&raw)
        case .string(var text):
            return text.withUTF8 { bytes in
                raw.type = HH_VALUE_STRING
                raw.of.string = hh_string_t(data: UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: bytes.count)
                return body(&raw)
            }
        case .int(let i):
            raw.type = HH_VALUE_INT64
            raw.of.int64 = i
        case .double(let d):
            raw.type = HH_VALUE_DOUBLE
            raw.of.real = d
        case .bool(let b):
            raw.type = HH_VALUE_BOOL
            raw.of.boolean = b
        case .timeMs(let t):
            raw.type = HH_VALUE_TIME_MS
            raw.of.time_ms = t
        }
        return body(&raw)
    }
}

// MARK: Over the wire

extension IsolatedCalls {
    static func operatorInfo(_ handle: PluginHandle) -> (String, Int32) {
        let (worker, index) = worker(handle)
        guard case .success(var reader) = worker.call(index, .operatorInfo, { _ in }),
            let name = try? reader.string(), let code = try? reader.i32()
        else { return (handle.pluginID, 0) }
        return (name, code)
    }

    static func compare(_ handle: PluginHandle, _ event: PluginValue, _ trigger: PluginValue) -> (result: Bool, status: Int32, reason: String) {
        let (worker, index) = worker(handle)
        switch worker.call(
            index, .compare,
            {
                $0.value(event)
                $0.value(trigger)
            })
        {
        case .success(var reader):
            guard let result = try? reader.bool(), let status = try? reader.i32(), let reason = try? reader.string() else {
                return (false, HH_ERR_INTERNAL, "bad answer from the worker")
            }
            return (result, status, reason)
        case .failure(let failure):
            return (false, status(of: failure), failure.description)
        }
    }

    // The worker side, one server per call of the kind.
    static let triggerOperatorServers: [WorkerOp: Server] = [
        .operatorInfo: { handle, _, out in
            let op = TriggerOperatorPlugin(handle)
            out.string(op.operatorName)
            out.i32(op.wireCode)
        },
        .compare: { handle, request, out in
            let event = try request.value()
            let trigger = try request.value()
            let answer = TriggerOperatorPlugin(handle).compare(event: event, trigger: trigger)
            out.bool(answer.result)
            out.i32(answer.status)
            out.string(answer.reason)
        }
    ]
}
