import Foundation
import HubHostABI

/// An `augmentation` plugin. The event is exposed through hh_event_view_t and changed only through
/// hh_event_editor_t; edits are kept only when the plugin answers HH_OK.
/// Sendable: its fields are the `let` handle and the names it keeps (a Mutex), and every function it
/// calls is [thread-safe] in hubhost_augmentation.h.
public final class AugmentationPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle
    /// The attribute names its calls set and read, kept from one call to the next.
    let names = AttributeNames()
    /// The plugin in this process and its augmentation functions, read once: reading them through
    /// the handle at each call copied its backend and the instance's descriptor (a retain and a
    /// release of each). Nil for a plugin in a worker or a WebAssembly module.
    private let inProcess: InProcess?

    /// Sendable although it holds a pointer: `api` points at the plugin's function table, static
    /// in its library (hubhost_plugin.h), which stays loaded while `instance` holds it.
    private struct InProcess: @unchecked Sendable {
        let instance: PluginInstance
        let api: UnsafePointer<hh_augmentation_v1_t>
    }

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .augmentation, "AugmentationPlugin needs an augmentation plugin")
        self.handle = handle
        inProcess = handle.instance.map { InProcess(instance: $0, api: $0.api(hh_augmentation_v1_t.self)) }
    }

    /// Isolated: a failed worker answers false.
    public var processSynchronously: Bool {
        guard let instance = handle.instance else { return IsolatedCalls.flag(handle, .processSynchronously) }
        return instance.api(hh_augmentation_v1_t.self).pointee.process_synchronously(instance.handle)
    }

    /// Whether the plugin's supplemental data is available now (`is_supplemental_data_ready`); hubhost
    /// does not act on it today. Isolated: a failed worker answers false.
    public var isSupplementalDataReady: Bool {
        guard let instance = handle.instance else { return IsolatedCalls.flag(handle, .isSupplementalDataReady) }
        return instance.api(hh_augmentation_v1_t.self).pointee.is_supplemental_data_ready(instance.handle)
    }

    /// Runs the plugin on `event`. [thread-safe], as the header promises. Isolated: a failed
    /// worker leaves the event as it was (status HH_ERR_UNAVAILABLE, the cause as message).
    /// Takes `event` (consuming): a caller that hands over its only copy lets the plugin's edits
    /// append in place instead of copying every attribute first.
    public func augment(_ event: consuming AugmentableEvent) -> AugmentationOutcome {
        switch augment(consume event, appendedApart: false) {
        case .outcome(let outcome): return outcome
        case .appended: preconditionFailure("attributes are answered apart only when asked for")
        }
    }

    /// `augment(_:)`; with `appendedApart`, an in-process plugin that only appended answers its
    /// attributes apart (`AugmentationAnswer.appended`) rather than in a new whole event, so that
    /// the caller's copy of the event, no longer shared once the call returns, can take them in place.
    func augment(_ event: consuming AugmentableEvent, appendedApart: Bool) -> AugmentationAnswer {
        let answer = call(consume event, appendedApart: appendedApart)
        if answer.status != HH_OK { RuntimeMetrics.augmentationFailed(instance: handle.instanceID) }
        return answer
    }

    private func call(_ event: consuming AugmentableEvent, appendedApart: Bool) -> AugmentationAnswer {
        guard let inProcess else { return .outcome(IsolatedCalls.augment(handle, event)) }
        let instance = inProcess.instance
        let api = inProcess.api
        let session = EventEditSession(consume event, names: names)  // the session owns the event: the failure below answers its original
        defer { session.release() }
        let status = session.withView { view, editor in api.pointee.augment(instance.handle, view, editor) }
        guard status == HH_OK else { return .outcome(AugmentationOutcome(status: status, message: instance.takeError(), event: session.original)) }
        // The event is not answered when the plugin only appended: the caller has it (copying its
        // strings in was a retain and a release of each per call).
        if appendedApart, let appended = session.appended { return .appended(appended) }
        return .outcome(AugmentationOutcome(status: status, message: "", event: session.working, appendsOnlyNewNames: true))
    }
}

// MARK: Over the wire

extension IsolatedCalls {
    static func augment(_ handle: PluginHandle, _ event: AugmentableEvent) -> AugmentationOutcome {
        let (worker, index) = worker(handle)
        switch worker.call(index, .augment, { $0.event(event) }) {
        case .success(var reader):
            do {
                let status = try reader.i32()
                let message = try reader.string()
                var result = event
                if status == HH_OK {
                    // A worker sends the event back, edited in its process by the in-process editor;
                    // a WebAssembly guest only its plugin's edits, replayed through that editor here.
                    if case .wasm = handle.backend {
                        let session = EventEditSession(event)
                        defer { session.release() }
                        try session.replayWasmGuestEdits(from: &reader)
                        result = session.working
                    } else {
                        result = try reader.event()
                    }
                }
                return AugmentationOutcome(status: status, message: message, event: result)
            } catch {
                return AugmentationOutcome(status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)", event: event)
            }
        case .failure(let failure):
            return AugmentationOutcome(status: status(of: failure), message: failure.description, event: event)
        }
    }

    /// An augment call whose event id, name, and one attribute's name and string value are `bytes`
    /// exactly, UTF-8 or not (which no Swift String can carry): the status the plugin answered, for
    /// the conformance suite's non-UTF-8 test on a plugin that is not in process.
    package static func augmentStatus(_ handle: PluginHandle, rawStrings bytes: [UInt8]) -> Int32 {
        let (worker, index) = worker(handle)
        let raw = { (out: inout WireWriter) in
            out.u32(UInt32(bytes.count))
            out.raw(bytes)
        }
        let result = worker.call(index, .augment) { out in
            raw(&out)
            out.i32(17)
            raw(&out)
            out.i64(0)
            out.u32(1)
            raw(&out)
            out.u8(1)  // a string value
            raw(&out)
        }
        switch result {
        case .success(var reader): return (try? reader.i32()) ?? HH_ERR_INTERNAL
        case .failure(let failure): return status(of: failure)
        }
    }

    static func flag(_ handle: PluginHandle, _ op: WorkerOp) -> Bool {
        let (worker, index) = worker(handle)
        guard case .success(var reader) = worker.call(index, op, { _ in }) else { return false }
        return (try? reader.bool()) ?? false
    }

    // The worker side, one server per call of the kind.
    static let augmentationServers: [WorkerOp: Server] = [
        .augment: { handle, request, out in
            let outcome = AugmentationPlugin(handle).augment(try request.event())
            out.i32(outcome.status)
            out.string(outcome.message)
            if outcome.status == HH_OK { out.event(outcome.event) }
        },
        .processSynchronously: { handle, _, out in out.bool(AugmentationPlugin(handle).processSynchronously) },
        .isSupplementalDataReady: { handle, _, out in out.bool(AugmentationPlugin(handle).isSupplementalDataReady) }
    ]
}

extension WireWriter {
    mutating func event(_ e: AugmentableEvent) {
        // Sized once: growing the buffer attribute by attribute was a tenth of a WebAssembly call.
        var size = 24 + e.id.utf8.count + e.name.utf8.count
        for attribute in e.list {
            size += 14 + attribute.name.utf8.count
            if case .string(let text) = attribute.value { size += text.utf8.count }
        }
        reserve(size)
        string(e.id)
        i32(e.typeCode)
        string(e.name)
        i64(e.timeMs)
        u32(UInt32(e.list.count))
        for attribute in e.list {
            string(attribute.name)
            value(attribute.value)
        }
    }
}

extension WireReader {
    mutating func event() throws -> AugmentableEvent {
        let id = try string()
        let typeCode = try i32()
        let name = try string()
        let timeMs = try i64()
        let count = Int(try u32())
        var attributes: [Event.Attribute] = []
        attributes.reserveCapacity(min(count, 4096))
        for _ in 0..<count { attributes.append(Event.Attribute(try string(), try value())) }
        return AugmentableEvent(id: id, typeCode: typeCode, name: name, timeMs: timeMs, list: attributes)
    }
}
