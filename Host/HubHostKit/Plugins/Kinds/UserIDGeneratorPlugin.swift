import Foundation
import HubHostABI

/// A `user_id_generator` plugin (ABI 1.1): makes mobile user ids and audit record keys for the
/// mobile identity manager.
/// Sendable: its only field is the `let` handle, and `generate` is [thread-safe] in hubhost_user_id_generator.h.
package final class UserIDGeneratorPlugin: IdentifierGenerator, Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    package let handle: PluginHandle

    /// Wraps an instance created in this process; the caller checks its kind first.
    package convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    package init(_ handle: PluginHandle) {
        precondition(handle.kind == .userIDGenerator, "UserIDGeneratorPlugin needs a user_id_generator plugin")
        self.handle = handle
    }

    package var name: String { "user_id_generator '\(handle.instanceID)'" }

    /// What one call answered.
    package enum Answer: Equatable, Sendable {
        case id(String)
        case failed(status: Int32, message: String)

        /// What this answer says about the plugin, for its ejection.
        var ejectionVerdict: PluginEjection.Verdict {
            guard case .failed(let status, let message) = self else { return .answered }
            return PluginEjection.verdict(status: status, message: message)
        }
    }

    /// Calls `generate` once. [thread-safe], as the header promises. Isolated: a failed worker
    /// answers `.failed`. A plugin ejected after failing calls in a row answers `.failed`
    /// (HH_ERR_UNAVAILABLE) at once.
    package func answer() -> Answer {
        handle.unlessEjected(answerInAnyRuntime, verdict: \.ejectionVerdict)
            ?? .failed(status: HH_ERR_UNAVAILABLE, message: handle.ejectedMessage)
    }

    private func answerInAnyRuntime() -> Answer {
        guard handle.instance != nil else { return IsolatedCalls.userID(handle) }
        return handle.withDeadline(PluginHandle.requestCallDeadlineSeconds) { [self] in answerInProcess() }
            ?? .failed(status: HH_ERR_TIMEOUT, message: PluginHandle.overranMessage)
    }

    private func answerInProcess() -> Answer {
        guard let instance = handle.instance else { return IsolatedCalls.userID(handle) }
        let api = instance.api(hh_user_id_generator_v1_t.self)
        final class Box { var value: String? }
        let box = Box()
        var sink = hh_string_sink_t(
            sink_data: Unmanaged.passUnretained(box).toOpaque(),
            set: { data, value in
                guard let data else { return }
                Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().value = lossyUTF8(value)
            })
        let status = withExtendedLifetime(box) { api.pointee.generate(instance.handle, &sink) }
        guard status == HH_OK else { return .failed(status: status, message: instance.takeError()) }
        guard let id = box.value, !id.isEmpty, id.utf8.count <= Int(HH_USER_ID_MAX_BYTES) else {
            return .failed(
                status: HH_ERR_INTERNAL,
                message:
                    "answered HH_OK with \(box.value == nil ? "no id (no set call)" : "an id of \(box.value!.utf8.count) bytes (1 to \(HH_USER_ID_MAX_BYTES) allowed)")"
            )
        }
        return .id(id)
    }

    package func generate() throws -> String {
        switch answer() {
        case .id(let id): return id
        case .failed(let status, let message):
            throw MobileIdentityManager.Failure(
                description: "\(name) failed (\(StatusCode.name(status))): \(message.isEmpty ? "no message" : message)")
        }
    }
}

// MARK: Over the wire

extension IsolatedCalls {
    static func userID(_ handle: PluginHandle) -> UserIDGeneratorPlugin.Answer {
        let (worker, index) = worker(handle)
        switch worker.call(index, .userID, { _ in }) {
        case .success(var reader):
            do {
                switch try reader.u8() {
                case 0: return .id(try reader.string())
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
    static let userIDGeneratorServers: [WorkerOp: Server] = [
        .userID: { handle, _, out in
            switch UserIDGeneratorPlugin(handle).answer() {
            case .id(let id):
                out.u8(0)
                out.string(id)
            case .failed(let status, let message):
                out.u8(1)
                out.i32(status)
                out.string(message)
            }
        }
    ]
}
