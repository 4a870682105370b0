import Foundation

/// Whether a policy-driven download may start now, and if not, the reason (the PCD SDK's
/// downloadAllowed / downloadPolicyStatus). The inputs: the settings in force (network selection
/// from the API override, plugins.yaml or the server), the server's defaults, the device's network
/// as far as it is known, the clock and what was downloaded today. User-initiated downloads skip
/// the server's quantity limits (items per category, daily bytes, file size, time window) but not
/// the network selection and the storage threshold: a user asking for a file does not make a
/// wifi-only policy allow cellular, nor fill a full disk. Battery and charging hold policy-driven
/// downloads only.
struct PrefetchPolicy: Sendable, Equatable {
    var networkSelection: PrefetchSettings.NetworkSelection
    var server: CatalogProtocol.ServerPolicy

    /// What the device says, in the engine's own terms (filled from the device_conditions plugin
    /// when one is configured): network kind ("none", "wifi", "cellular", "ethernet") and metered.
    struct Device: Sendable, Equatable {
        var network: String
        var metered: Bool
        /// 0...1; nil: no battery.
        var batteryLevel: Double? = nil
        /// nil: unknown (no battery).
        var charging: Bool? = nil
        /// Free bytes at the data directory; nil: unknown.
        var freeBytes: UInt64? = nil
        /// Assumed when no device_conditions instance is configured: an unmetered wired network.
        static let assumed = Device(network: "ethernet", metered: false)
    }

    /// The device thresholds (prefetch.requires_charging, battery_low, storage_low).
    var requiresCharging = false
    var batteryLow = 0.15
    var storageLow: UInt64 = 512 << 20

    /// "HH:MM" as minutes after midnight, nil when it is not a time.
    static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count <= 2, parts[1].count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0...23).contains(hours), (0...59).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }

    /// What holds every download, user-initiated ones too: the network and the storage.
    func holdAll(_ device: Device) -> PrefetchWaitReason? {
        if let reason = networkReason(device) { return reason }
        if let free = device.freeBytes, free < storageLow { return .storageLow }
        return nil
    }

    /// The network check alone.
    func networkReason(_ device: Device) -> PrefetchWaitReason? {
        switch device.network {
        case "none": return .noNetwork
        case "cellular": return networkSelection == .wifi ? .networkNotAllowed : nil
        case "wifi", "ethernet":
            // A metered wifi (a phone's hotspot) counts as cellular for a wifi-only policy.
            return device.metered && networkSelection == .wifi ? .networkNotAllowed : nil
        default: return .noNetwork
        }
    }

    /// The reason a policy-driven download of a file of `fileSize` bytes may not start, nil when it may.
    func reason(device: Device, minuteOfDay: Int, bytesToday: Int64, fileSize: Int64?, categoryCount: Int?) -> PrefetchWaitReason? {
        if let reason = holdAll(device) { return reason }
        if let level = device.batteryLevel, level < batteryLow, device.charging != true { return .lowBattery }
        if requiresCharging, device.charging == false { return .notCharging }
        if let start = server.windowStart.flatMap(Self.minutes), let end = server.windowEnd.flatMap(Self.minutes), start != end {
            let inside = start < end ? (start..<end).contains(minuteOfDay) : (minuteOfDay >= start || minuteOfDay < end)
            if !inside { return .outsideTimeWindow }
        }
        if let limit = server.dailyByteLimit, bytesToday >= limit { return .dailyLimitReached }
        if let limit = server.maxFileSize, let fileSize, fileSize > limit { return .fileTooLarge }
        if let limit = server.itemsPerCategory, limit > 0, let categoryCount, categoryCount >= limit { return .categoryLimitReached }
        return nil
    }
}
