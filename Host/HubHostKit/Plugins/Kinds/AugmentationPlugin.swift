import Foundation
import HubHostABI

/// An `augmentation` plugin. The event is exposed through hh_event_view_t and changed only through
/// hh_event_editor_t; edits are kept only when the plugin answers HH_OK.
/// Sendable: its only field is the `let` handle, and every function it calls is [thread-safe] in
/// hubhost_augmentation.h.
public final class AugmentationPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .augmentation, "AugmentationPlugin needs an augmentation plugin")
        self.handle = handle
    }

    /// Isolated: a failed worker answers false.
    public var processSynchronously: Bool {
        guard let instance = handle.instance else { return IsolatedCalls.flag(handle, .processSynchronously) }
        return instance.api(hh_augmentation_v1_t.self).pointee.process_synchronously(instance.handle)
    }

    public var isSupplementalDataReady: Bool {
        guard let instance = handle.instance else { return IsolatedCalls.flag(handle, .isSupplementalDataReady) }
        return instance.api(hh_augmentation_v1_t.self).pointee.is_supplemental_data_ready(instance.handle)
    }

    /// Runs the plugin on `event`. [thread-safe], as the header promises. Isolated: a failed
    /// worker leaves the event as it was (status HH_ERR_UNAVAILABLE, the cause as message).
    /// Takes `event` (consuming): a caller that hands over its only copy lets the plugin's edits
    /// append in place instead of copying every attribute first.
    public func augment(_ event: consuming AugmentableEvent) -> AugmentationOutcome {
        let outcome = call(consume event)
        if outcome.status != HH_OK { RuntimeMetrics.augmentationFailed(instance: handle.instanceID) }
        return outcome
    }

    private func call(_ event: consuming AugmentableEvent) -> AugmentationOutcome {
        guard let instance = handle.instance else { return IsolatedCalls.augment(handle, event) }
        let api = instance.api(hh_augmentation_v1_t.self)
        let session = EventEditSession(consume event)  // the session owns the event: the failure below answers its original
        defer { session.release() }
        let status = session.withView { view, editor in api.pointee.augment(instance.handle, view, editor) }
        if status == HH_OK { return AugmentationOutcome(status: status, message: "", event: session.working, appendsOnlyNewNames: true) }
        return AugmentationOutcome(status: status, message: instance.takeError(), event: session.original)
    }
}
