import Foundation
import Yams

/// `prefetch:` in plugins.yaml, parsed by the prefetch engine's own settings type.
extension PrefetchSettings: ManifestSection {
    package static let sectionName = "prefetch"
    package static let summary =
        "Content prefetch (the PCD SDK): the catalog service, what downloads by itself, and the device conditions downloads wait for. Off unless enabled."

    package init(section node: Node, context: ManifestSectionContext) {
        self.init()
        let values = context.resolve(node, schema: Self.schema, lines: &lines)
        func text(_ key: String) -> String? {
            if case .string(let value)? = values[key], !value.isEmpty { return value }
            return nil
        }
        // Ranges and allowed values were checked against the schema: a refused value arrives as the default.
        func seconds(_ key: String, into target: inout Double) {
            if case .double(let value)? = values[key] { target = value }
        }
        if case .bool(let on)? = values["enabled"] { enabled = on }
        license = text("license")
        provider = text("provider")
        deviceID = text("device_id")
        deviceConditions = text("device_conditions")
        downloadRequest = text("download_request")
        if case .int(let count)? = values["max_concurrent_downloads"] { maxConcurrentDownloads = Int(count) }
        if let behavior = text("item_download_behavior"), let parsed = DownloadBehavior(rawValue: behavior) { itemDownloadBehavior = parsed }
        if let network = text("network_selection"), let parsed = NetworkSelection(rawValue: network) { networkSelection = parsed }
        if case .bool(let purge)? = values["enable_auto_purge"] { enableAutoPurge = purge }
        if case .int(let bytes)? = values["cache_size_limit"] { cacheSizeLimit = Int(bytes) }
        if case .bool(let charging)? = values["requires_charging"] { requiresCharging = charging }
        if case .double(let level)? = values["battery_low"] { batteryLow = level }
        if case .int(let bytes)? = values["storage_low"] { storageLow = Int(bytes) }
        seconds("sync_interval", into: &syncInterval)
        seconds("read_timeout", into: &readTimeout)
        seconds("retry_delay", into: &retryDelay)
        seconds("register_retry", into: &registerRetry)
        seconds("lookup_retry_delay", into: &lookupRetryDelay)
    }

    package var effectiveValues: [EffectiveSetting] {
        // The licence itself is a secret: config show says whether one is set, not what it is.
        let values: [String: PluginValue] = [
            "enabled": .bool(enabled), "license": .string(license == nil ? "" : "(set)"), "provider": .string(provider ?? ""),
            "device_id": .string(deviceID ?? ""), "max_concurrent_downloads": .int(Int64(maxConcurrentDownloads)),
            "item_download_behavior": .string(itemDownloadBehavior.rawValue), "network_selection": .string(networkSelection?.rawValue ?? ""),
            "enable_auto_purge": .bool(enableAutoPurge), "cache_size_limit": .int(Int64(cacheSizeLimit)), "sync_interval": .double(syncInterval),
            "read_timeout": .double(readTimeout),
            "retry_delay": .double(retryDelay), "register_retry": .double(registerRetry), "lookup_retry_delay": .double(lookupRetryDelay),
            "requires_charging": .bool(requiresCharging), "battery_low": .double(batteryLow), "storage_low": .int(Int64(storageLow)),
            "device_conditions": .string(deviceConditions ?? ""), "download_request": .string(downloadRequest ?? "")
        ]
        return Self.schema.effective(values, lines: lines, section: Self.sectionName)
    }
}

extension HostManifest {
    /// The prefetch engine's settings (`prefetch:`).
    package var prefetch: PrefetchSettings {
        get { section(PrefetchSettings.self) }
        set { setSection(newValue) }
    }
}
