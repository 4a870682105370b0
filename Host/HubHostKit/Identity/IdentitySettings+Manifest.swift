import Yams

/// `identity:` in plugins.yaml: every key through IdentitySettings.schema, after the Engage SDK's
/// spellings ("Recipient->mobileUserIdColumn", "AuditRecord>newRecipientIdColumnName") are
/// mapped to hubhost's key names.
extension IdentitySettings: ManifestSection {
    package static let sectionName = "identity"
    package static let summary =
        "The mobile identity manager and its XMLAPI client (the Engage SDK): the recipient list, the mobile user id, merges and their audit records. Keys are also accepted with the Engage SDK's group prefixes (Recipient->, AuditRecord->, General->)."

    package init() { self.init(values: [:], lines: [:]) }

    package init(section node: Node, context: ManifestSectionContext) {
        var lines: [String: Int] = [:]
        let values = context.resolve(Self.seedKeysMapped(node), schema: Self.schema, lines: &lines)
        self.init(values: values, lines: lines)
        if mergeHistoryInAuditRecordTable && auditRecordListID.isEmpty {
            context.report(
                node.mapping?["mergeHistoryInAuditRecordTable"], key: "identity.auditRecordListId",
                "mergeHistoryInAuditRecordTable is true but auditRecordListId (the audit table's id) is not set: merges would fail at the audit step")
        }
    }

    /// The section with each key written the Engage SDK's way renamed to hubhost's (positions kept).
    static func seedKeysMapped(_ node: Node) -> Node {
        guard let mapping = node.mapping else { return node }
        let pairs: [(Node, Node)] = mapping.map { pair in
            guard let key = pair.key.scalar, let prefix = seedPrefixes.first(where: { key.string.hasPrefix($0) }) else {
                return (pair.key, pair.value)
            }
            let renamed = Node.Scalar(String(key.string.dropFirst(prefix.count)), key.tag, key.style, key.mark)
            return (.scalar(renamed), pair.value)
        }
        return .mapping(Node.Mapping(pairs, mapping.tag, mapping.style, mapping.mark))
    }

    package var effectiveValues: [EffectiveSetting] {
        Self.schema.effective(values, lines: lines, section: Self.sectionName).map { setting in
            var setting = setting
            if setting.key.lowercased().contains("secret") || setting.key.hasSuffix("RefreshToken"), case .string(let s) = setting.value, !s.isEmpty {
                setting.value = .string("(set)")  // credentials are not printed
            }
            return setting
        }
    }
}

extension HostManifest {
    /// The mobile identity manager's settings (`identity:`), defaults filled in.
    package var identity: IdentitySettings {
        get { section(IdentitySettings.self) }
        set { setSection(newValue) }
    }
}
