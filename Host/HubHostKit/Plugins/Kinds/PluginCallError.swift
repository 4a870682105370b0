import Foundation

/// Why a plugin call that answers a value (`DeviceConditionsPlugin.read`,
/// `DownloadRequestPlugin.convert`) gave none: the plugin failed, or it answered something outside
/// its header's contract. Either way the host keeps running; the caller decides what to do.
package enum PluginCallError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The plugin returned a failure status with the message it reported (for an isolated plugin,
    /// also a worker that died or timed out: HH_ERR_UNAVAILABLE with the worker's failure).
    case failed(instance: String, status: Int32, message: String)
    /// The plugin returned HH_OK with a value the host refuses (out of range, unknown code,
    /// malformed URL or header); `reason` names the field and the value.
    case invalidAnswer(instance: String, reason: String)

    /// The plugin's status, HH_ERR_INTERNAL for an invalid answer.
    package var status: Int32 {
        switch self {
        case .failed(_, let status, _): return status
        case .invalidAnswer: return 8  // HH_ERR_INTERNAL: the plugin broke its contract
        }
    }

    package var description: String {
        switch self {
        case .failed(let instance, let status, let message):
            return "plugin instance '\(instance)' failed (\(StatusCode.name(status)))\(message.isEmpty ? "" : ": \(message)")"
        case .invalidAnswer(let instance, let reason):
            return "plugin instance '\(instance)' gave an invalid answer: \(reason)"
        }
    }
}
