/// The trigger operators the loaded plugins provide, by name ("EQUALS", "STARTS_WITH") and by
/// wire code (1..8): what campaigns and `hubhost operators` use. Names compare case-insensitively;
/// when two plugins claim one name or code, the first in plugins.yaml keeps it.
package struct OperatorSet: Sendable {
    package let operators: [TriggerOperatorPlugin]
    /// Names or codes claimed twice, for a warning.
    package let conflicts: [String]

    package init(_ handles: [PluginHandle]) {
        var kept: [TriggerOperatorPlugin] = []
        var conflicts: [String] = []
        for handle in handles {
            let op = TriggerOperatorPlugin(handle)
            if let other = kept.first(where: { $0.operatorName.uppercased() == op.operatorName.uppercased() }) {
                conflicts.append("operator \(op.operatorName) of '\(handle.instanceID)' is already provided by '\(other.handle.instanceID)'")
                continue
            }
            if op.wireCode != 0, let other = kept.first(where: { $0.wireCode == op.wireCode }) {
                conflicts.append("wire code \(op.wireCode) of \(op.operatorName) is already used by \(other.operatorName)")
                continue
            }
            kept.append(op)
        }
        operators = kept
        self.conflicts = conflicts
    }

    /// The operator named `text` (case-insensitive), or with the wire code `text`.
    package func find(_ text: String) -> TriggerOperatorPlugin? {
        if let code = Int32(text), code != 0 { return operators.first { $0.wireCode == code } }
        return operators.first { $0.operatorName.uppercased() == text.uppercased() }
    }
}
