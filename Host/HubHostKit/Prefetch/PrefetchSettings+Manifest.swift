import Foundation
import Yams

/// `prefetch:` in plugins.yaml, parsed by the prefetch engine's own settings type.
extension PrefetchSettings: ManifestSection {
    public static let sectionName = "prefetch"

    public init(section node: Node, context: ManifestSectionContext) {
        self.init()
        let values = context.resolve(node, schema: Self.schema, lines: &lines)
        func text(_ key: String) -> String? { if case .string(let value)? = values[key], !value.isEmpty { return value }; return nil }
        func seconds(_ key: String, into target: inout Double) {
            guard case .double(let value)? = values[key] else { return }
            guard value > 0, value <= SafeTime.maxDurationSeconds else {
                context.report(node.mapping?[key], key: "prefetch.\(key)", "must be a positive duration, not \(value) s")
                return
            }
            target = value
        }
        if case .bool(let on)? = values["enabled"] { enabled = on }
        license = text("license")
        provider = text("provider")
        deviceID = text("device_id")
        deviceConditions = text("device_conditions")
        downloadRequest = text("download_request")
        if case .int(let count)? = values["max_concurrent_downloads"] {
            if count >= Int64(Self.concurrencyRange.lowerBound) && count <= Int64(Self.concurrencyRange.upperBound) { maxConcurrentDownloads = Int(count) } else {
                context.report(node.mapping?["max_concurrent_downloads"], key: "prefetch.max_concurrent_downloads",
                               "must be between \(Self.concurrencyRange.lowerBound) and \(Self.concurrencyRange.upperBound), not \(count)")
            }
        }
        if let behavior = text("item_download_behavior") {
            if let parsed = DownloadBehavior(rawValue: behavior) { itemDownloadBehavior = parsed } else {
                context.report(node.mapping?["item_download_behavior"], key: "prefetch.item_download_behavior",
                               "unknown behavior '\(behavior)'; expected one of: \(DownloadBehavior.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        if let network = text("network_selection") {
            if let parsed = NetworkSelection(rawValue: network) { networkSelection = parsed } else {
                context.report(node.mapping?["network_selection"], key: "prefetch.network_selection",
                               "unknown network selection '\(network)'; expected one of: \(NetworkSelection.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        if case .bool(let purge)? = values["enable_auto_purge"] { enableAutoPurge = purge }
        if case .int(let bytes)? = values["cache_size_limit"] {
            if bytes >= 0 && bytes <= CatalogProtocol.maxFileSize { cacheSizeLimit = Int(bytes) } else {
                context.report(node.mapping?["cache_size_limit"], key: "prefetch.cache_size_limit", "must be between 0 and \(CatalogProtocol.maxFileSize) bytes, not \(bytes)")
            }
        }
        if case .bool(let charging)? = values["requires_charging"] { requiresCharging = charging }
        if case .double(let level)? = values["battery_low"] {
            if (0...1).contains(level) { batteryLow = level } else {
                context.report(node.mapping?["battery_low"], key: "prefetch.battery_low", "must be between 0 and 1, not \(level)")
            }
        }
        if case .int(let bytes)? = values["storage_low"] {
            if bytes >= 0 && bytes <= CatalogProtocol.maxFileSize { storageLow = Int(bytes) } else {
                context.report(node.mapping?["storage_low"], key: "prefetch.storage_low", "must be between 0 and \(CatalogProtocol.maxFileSize) bytes, not \(bytes)")
            }
        }
        seconds("sync_interval", into: &syncInterval)
        seconds("read_timeout", into: &readTimeout)
        seconds("retry_delay", into: &retryDelay)
        seconds("register_retry", into: &registerRetry)
        seconds("lookup_retry_delay", into: &lookupRetryDelay)
    }

    public var effectiveValues: [EffectiveSetting] {
        // The licence itself is a secret: config show says whether one is set, not what it is.
        let values: [String: PluginValue] = [
            "enabled": .bool(enabled), "license": .string(license == nil ? "" : "(set)"), "provider": .string(provider ?? ""),
            "device_id": .string(deviceID ?? ""), "max_concurrent_downloads": .int(Int64(maxConcurrentDownloads)),
            "item_download_behavior": .string(itemDownloadBehavior.rawValue), "network_selection": .string(networkSelection?.rawValue ?? ""),
            "enable_auto_purge": .bool(enableAutoPurge), "cache_size_limit": .int(Int64(cacheSizeLimit)), "sync_interval": .double(syncInterval), "read_timeout": .double(readTimeout),
            "retry_delay": .double(retryDelay), "register_retry": .double(registerRetry), "lookup_retry_delay": .double(lookupRetryDelay),
            "requires_charging": .bool(requiresCharging), "battery_low": .double(batteryLow), "storage_low": .int(Int64(storageLow)),
            "device_conditions": .string(deviceConditions ?? ""), "download_request": .string(downloadRequest ?? ""),
        ]
        return Self.schema.effective(values, lines: lines, section: Self.sectionName)
    }
}

extension HostManifest {
    /// The prefetch engine's settings (`prefetch:`).
    public var prefetch: PrefetchSettings {
        get { section(PrefetchSettings.self) }
        set { setSection(newValue) }
    }
}
