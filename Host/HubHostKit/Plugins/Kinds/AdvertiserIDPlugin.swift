import Foundation
import HubHostABI

/// An `advertiser_id` plugin's answer.
public enum AdvertiserIDAnswer: Equatable, Sendable {
    /// Use this advertiser ID.
    case id(String)
    /// Limit ad tracking is on: no advertiser ID is used at all.
    case limitAdTracking
    /// The delegate answered but has no ID: none is used.
    case none
    /// The delegate has no opinion (HH_ERR_NOT_FOUND): ask the next one.
    case noOpinion
    /// The delegate failed; its status and message.
    case failed(status: Int32, message: String)

    /// What this answer says about the plugin, for its ejection.
    var ejectionVerdict: PluginEjection.Verdict {
        guard case .failed(let status, let message) = self else { return .answered }
        return PluginEjection.verdict(status: status, message: message)
    }
}

/// An `advertiser_id` plugin: decides the advertiser ID the host uses in metrics, or that none is
/// used. The host asks these delegates in plugins.yaml order (`HubHost.advertiserID()`).
/// Sendable: its only field is the `let` handle, and `advertiser_id` is [thread-safe] in hubhost_advertiser_id.h.
public final class AdvertiserIDPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .advertiserID, "AdvertiserIDPlugin needs an advertiser_id plugin")
        self.handle = handle
    }

    /// Asks the plugin. [thread-safe], as the header promises. Isolated: a failed worker answers
    /// `.failed`, so the chain asks the next delegate.
    /// A plugin ejected after failing calls in a row answers `.failed` (HH_ERR_UNAVAILABLE) at once.
    public func answer() -> AdvertiserIDAnswer {
        handle.unlessEjected(answerInAnyRuntime, verdict: \.ejectionVerdict)
            ?? .failed(status: HH_ERR_UNAVAILABLE, message: handle.ejectedMessage)
    }

    private func answerInAnyRuntime() -> AdvertiserIDAnswer {
        guard handle.instance != nil else { return IsolatedCalls.advertiserID(handle) }
        return handle.withDeadline(PluginHandle.requestCallDeadlineSeconds) { [self] in answerInProcess() }
            ?? .failed(status: HH_ERR_TIMEOUT, message: PluginHandle.overranMessage)
    }

    private func answerInProcess() -> AdvertiserIDAnswer {
        guard let instance = handle.instance else { return IsolatedCalls.advertiserID(handle) }
        let api = instance.api(hh_advertiser_id_v1_t.self)
        final class Box { var value: String? }
        let box = Box()
        var sink = hh_string_sink_t(
            sink_data: Unmanaged.passUnretained(box).toOpaque(),
            set: { data, value in
                guard let data else { return }
                Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().value = lossyUTF8(value)
            })
        var limit = false
        let status = withExtendedLifetime(box) { api.pointee.advertiser_id(instance.handle, &limit, &sink) }
        switch status {
        case HH_OK:
            if limit { return .limitAdTracking }
            if let id = box.value, !id.isEmpty { return .id(id) }
            return AdvertiserIDAnswer.none
        case HH_ERR_NOT_FOUND: return .noOpinion
        default: return .failed(status: status, message: instance.takeError())
        }
    }
}

// MARK: Over the wire

extension IsolatedCalls {
    static func advertiserID(_ handle: PluginHandle) -> AdvertiserIDAnswer {
        let (worker, index) = worker(handle)
        switch worker.call(index, .advertiserID, { _ in }) {
        case .success(var reader):
            do {
                switch try reader.u8() {
                case 0: return .id(try reader.string())
                case 1: return .limitAdTracking
                case 2: return AdvertiserIDAnswer.none
                case 3: return .noOpinion
                default: return .failed(status: try reader.i32(), message: try reader.string())
                }
            } catch {
                return .failed(status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)")
            }
        case .failure(let failure):
            return .failed(status: HH_ERR_UNAVAILABLE, message: failure.description)
        }
    }

    // The worker side: the answer's tag, then what the case carries.
    static let advertiserIDServers: [WorkerOp: Server] = [
        .advertiserID: { handle, _, out in
            switch AdvertiserIDPlugin(handle).answer() {
            case .id(let id):
                out.u8(0)
                out.string(id)
            case .limitAdTracking: out.u8(1)
            case .none: out.u8(2)
            case .noOpinion: out.u8(3)
            case .failed(let status, let message):
                out.u8(4)
                out.i32(status)
                out.string(message)
            }
        }
    ]
}
