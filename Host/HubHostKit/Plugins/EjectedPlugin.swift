import Foundation

/// A plugin that is ejected (PluginEjection), as `GET /v1/health` names it.
public struct EjectedPlugin: Codable, Equatable, Sendable {
    /// The id of its instance in plugins.yaml.
    public var instance: String
    /// The plugin's id in its library (an `exports:` id of its plugin.yaml).
    public var plugin: String
    /// The plugin's kind as plugin.yaml spells it (`PluginKind.rawValue`, e.g. "augmentation").
    public var kind: String
    /// When its probe call is let through (ISO 8601, UTC).
    public var until: String
    /// The failure that ejected it.
    public var reason: String
}

extension PluginRegistry {
    /// Every loaded plugin that is ejected now, in plugins.yaml order.
    public var ejectedPlugins: [EjectedPlugin] {
        PluginKind.allCases.flatMap { plugins(of: $0) }.compactMap { handle in
            guard let ejected = handle.ejection.ejected else { return nil }
            return EjectedPlugin(
                instance: handle.instanceID, plugin: handle.pluginID, kind: handle.kind.rawValue,
                until: UTCTimestamp.text(ms: Int64(ejected.until.timeIntervalSince1970 * 1000)), reason: ejected.reason)
        }
    }
}
