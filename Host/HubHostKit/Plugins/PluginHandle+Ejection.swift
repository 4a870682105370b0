import Foundation
import HubHostABI

extension PluginHandle {
    /// `call` made through the plugin's ejection (PluginEjection): nil at once, without calling,
    /// while the plugin is ejected (or another caller's probe is in flight); otherwise the answer,
    /// reported as a failure when `failure` names one and as a success otherwise. A thrown error
    /// is a failure too, and is thrown on. The kind adapters of the request path (location,
    /// advertiser id, user id generator, device conditions, download request, content provider)
    /// and isolated trigger operators call through here, in every runtime; augmentation has its
    /// own (AugmentationTimeline), with the augmentation timeout.
    func unlessEjected<T>(_ call: () throws -> T, failure: (T) -> String?) rethrows -> T? {
        guard ejection.admit() else { return nil }
        let answer: T
        do {
            answer = try call()
        } catch {
            if let error = error as? PluginCallError, case .failed(_, let status, let message) = error {
                if let why = PluginEjection.failure(status: status, message: message) {
                    ejection.failed(why)
                } else {
                    ejection.succeeded()
                }
            } else {
                ejection.failed("\(error)")
            }
            throw error
        }
        if let why = failure(answer) { ejection.failed(why) } else { ejection.succeeded() }
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
    /// Why an answer with `status` counts towards ejecting the plugin, or nil when it does not:
    /// a plugin that timed out, crashed (a worker or a trap: HH_ERR_UNAVAILABLE) or hit a bug.
    /// "Not found", "unsupported", an I/O failure (the origin is down, the host refused the
    /// bytes), a refused argument or its configuration are answers about the request or the
    /// world, which cost the caller little to get again.
    static func failure(status: Int32, message: String) -> String? {
        switch status {
        case HH_ERR_TIMEOUT, HH_ERR_INTERNAL, HH_ERR_UNAVAILABLE:
            return "\(StatusCode.name(status))\(message.isEmpty ? "" : ": \(message)")"
        default:
            return nil
        }
    }
}
