import Foundation
import HubHostABI

extension PluginHandle {
    /// `call` made through the plugin's ejection (PluginEjection): nil at once, without calling,
    /// while the plugin is ejected (or another caller's probe is in flight); otherwise the answer,
    /// reported as `verdict` judges it. A thrown error is judged by its status, and thrown on. The kind adapters of the request path (location,
    /// advertiser id, user id generator, device conditions, download request, content provider)
    /// and isolated trigger operators call through here, in every runtime; augmentation has its
    /// own (AugmentationTimeline), with the augmentation timeout.
    func unlessEjected<T>(_ call: () throws -> T, verdict: (T) -> PluginEjection.Verdict) rethrows -> T? {
        guard ejection.admit() else { return nil }
        let answer: T
        do {
            answer = try call()
        } catch {
            if let error = error as? PluginCallError, case .failed(_, let status, let message) = error {
                ejection.record(PluginEjection.verdict(status: status, message: message))
            } else {
                ejection.failed("\(error)")
            }
            throw error
        }
        ejection.record(verdict(answer))
        return answer
    }

    /// What a call skipped because the plugin is ejected answers.
    var ejectedMessage: String {
        guard let ejected = ejection.ejected else { return "plugin instance '\(instanceID)' is probed by another call now" }
        return
            "plugin instance '\(instanceID)' is ejected until \(UTCTimestamp.text(ms: Int64(ejected.until.timeIntervalSince1970 * 1000))) after failing calls in a row (\(ejected.reason)); it is not called until then"
    }
}

extension PluginEjection {
    /// What one call's outcome says about the plugin.
    enum Verdict: Equatable {
        /// It answered (an answer or an answer about the request): the run of failures ends.
        case answered
        /// It failed for this reason: one more in the run.
        case failed(String)
        /// The call never reached it (its worker is in its restart backoff after a crash, which
        /// counted once): the run stays as it is.
        case notCalled
    }

    /// What an outcome with `status` says: a plugin that timed out, crashed (a worker or a trap:
    /// HH_ERR_UNAVAILABLE) or hit a bug failed, unless the call was refused during its worker's
    /// restart backoff. "Not found", "unsupported", an I/O failure (the origin is down, the host
    /// refused the bytes), a refused argument or its configuration are answers about the request
    /// or the world, which cost the caller little to get again.
    static func verdict(status: Int32, message: String) -> Verdict {
        switch status {
        case HH_ERR_UNAVAILABLE where message.hasPrefix(WorkerFailure.restartingPrefix):
            return .notCalled
        case HH_ERR_TIMEOUT, HH_ERR_INTERNAL, HH_ERR_UNAVAILABLE:
            return .failed("\(StatusCode.name(status))\(message.isEmpty ? "" : ": \(message)")")
        default:
            return .answered
        }
    }

    /// Reports an admitted call's outcome as `verdict` judges it.
    func record(_ verdict: Verdict) {
        switch verdict {
        case .answered: succeeded()
        case .failed(let why): failed(why)
        case .notCalled: notCalled()
        }
    }
}
