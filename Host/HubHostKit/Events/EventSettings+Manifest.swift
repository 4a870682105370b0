import Yams

/// `events:` in plugins.yaml: every key through EventSettings.schema.
extension EventSettings: ManifestSection {
    package static let sectionName = "events"
    package static let summary =
        "The event pipeline: augmentation, batching, delivery through a sink, retries, sessions, campaign attribution and the core values sent with every event (the Engage SDK's settings, with its defaults)."

    package init() { self.init(values: [:], lines: [:]) }

    package init(section node: Node, context: ManifestSectionContext) {
        var lines: [String: Int] = [:]
        let values = context.resolve(node, schema: Self.schema, lines: &lines)
        self.init(values: values, lines: lines)
    }

    package var effectiveValues: [EffectiveSetting] { Self.schema.effective(values, lines: lines, section: Self.sectionName) }
}

extension HostManifest {
    /// The event engine's settings (`events:`), defaults filled in.
    package var events: EventSettings {
        get { section(EventSettings.self) }
        set { setSection(newValue) }
    }
}
