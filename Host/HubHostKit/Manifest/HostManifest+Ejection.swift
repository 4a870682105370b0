import Foundation
import Yams

extension HostManifest {
    /// `eject_after`, `eject_for` and `eject_max` of one `plugins:` entry, range-checked: a value
    /// out of range is a problem of the instance, and the default stays.
    static func parseEjection(
        _ fields: [String: (keyNode: Node, value: Node)], path: String, reader: YAMLReader, into policy: inout EjectionPolicy
    ) {
        if let node = fields["eject_after"]?.value, let count = reader.int(node, key: "\(path).eject_after") {
            if count >= 0 && count <= Int64(EjectionPolicy.maximumAfterFailures) {
                policy.afterFailures = Int(count)
            } else {
                reader.report(
                    node, key: "\(path).eject_after",
                    "eject_after must be 0 (never eject) to \(EjectionPolicy.maximumAfterFailures) failed calls in a row, not \(count)")
            }
        }
        if let node = fields["eject_for"]?.value, let seconds = reader.duration(node, key: "\(path).eject_for") {
            if seconds > 0 && seconds <= 86_400 {
                policy.forSeconds = seconds
            } else {
                reader.report(node, key: "\(path).eject_for", "the ejection time must be longer than 0 seconds and at most a day, not \(seconds)")
            }
        }
        var maxGiven = false
        if let node = fields["eject_max"]?.value, let seconds = reader.duration(node, key: "\(path).eject_max") {
            if seconds > 0 && seconds <= 86_400 && seconds >= policy.forSeconds {
                policy.maxSeconds = seconds
                maxGiven = true
            } else {
                reader.report(
                    node, key: "\(path).eject_max",
                    "the longest ejection must be at least eject_for (\(EngageDuration.format(policy.forSeconds))) and at most a day, not \(seconds)")
            }
        }
        // An eject_for above the default eject_max, with no eject_max: the ejection never grows.
        if !maxGiven, policy.maxSeconds < policy.forSeconds {
            policy.maxSeconds = policy.forSeconds
        }
    }
}
