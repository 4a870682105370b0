import Foundation
import HubHostABI

/// What the device can afford now, as a `device_conditions` plugin answered it (range-checked).
public struct DeviceConditions: Sendable, Equatable, Codable {
    /// The network a download would go over (HH_NETWORK_*); the raw value is what JSON says.
    public enum Network: String, Sendable, Codable {
        /// No network: every download waits.
        case none
        /// Wi-Fi; a metered one (a phone's hotspot) counts as cellular for a wifi-only policy.
        case wifi
        /// A mobile network: a wifi-only policy holds downloads.
        case cellular
        /// A wired network, treated as Wi-Fi.
        case ethernet
    }

    /// The network downloads would go over now.
    public var network: Network
    /// The network is billed by volume.
    public var metered: Bool
    /// 0...1; nil: the device has no battery.
    public var batteryLevel: Double?
    /// nil: unknown.
    public var charging: Bool?
    /// Bytes free for an unprivileged writer on the data directory's file system; nil: unknown.
    public var freeBytes: UInt64?

    /// Conditions with these values; `batteryLevel` 0...1 (nil: no battery), `freeBytes` in bytes (nil: unknown).
    public init(network: Network, metered: Bool, batteryLevel: Double? = nil, charging: Bool? = nil, freeBytes: UInt64? = nil) {
        self.network = network
        self.metered = metered
        self.batteryLevel = batteryLevel
        self.charging = charging
        self.freeBytes = freeBytes
    }
}

extension DeviceConditions {
    /// Checks a raw answer field by field, as hubhost_device_conditions.h promises: an unknown
    /// network or charging code, or a battery level outside 0...1 (NaN included), is refused with
    /// the field and value named. Used for in-process answers and for what a worker sends back.
    static func checked(
        network code: Int32, metered: Bool, hasBattery: Bool, batteryLevel: Double, charging chargingCode: Int32,
        hasFreeBytes: Bool, freeBytes: UInt64
    ) throws(DeviceConditionsProblem) -> DeviceConditions {
        let network: Network
        switch code {
        case HH_NETWORK_NONE: network = .none
        case HH_NETWORK_WIFI: network = .wifi
        case HH_NETWORK_CELLULAR: network = .cellular
        case HH_NETWORK_ETHERNET: network = .ethernet
        default: throw DeviceConditionsProblem("network code \(code) is not one of HH_NETWORK_NONE/WIFI/CELLULAR/ETHERNET (0...3)")
        }
        if hasBattery, !(batteryLevel.isFinite && (0...1).contains(batteryLevel)) {
            throw DeviceConditionsProblem("battery_level \(batteryLevel) is outside 0...1")
        }
        let charging: Bool?
        switch chargingCode {
        case HH_CHARGING_UNKNOWN: charging = nil
        case HH_CHARGING_NO: charging = false
        case HH_CHARGING_YES: charging = true
        default: throw DeviceConditionsProblem("charging code \(chargingCode) is not one of HH_CHARGING_UNKNOWN/NO/YES (0...2)")
        }
        return DeviceConditions(
            network: network, metered: metered, batteryLevel: hasBattery ? batteryLevel : nil,
            charging: charging, freeBytes: hasFreeBytes ? freeBytes : nil)
    }

    /// The codes of hubhost_device_conditions.h, for the isolation wire.
    var networkCode: Int32 {
        switch network {
        case .none: return HH_NETWORK_NONE
        case .wifi: return HH_NETWORK_WIFI
        case .cellular: return HH_NETWORK_CELLULAR
        case .ethernet: return HH_NETWORK_ETHERNET
        }
    }

    var chargingCode: Int32 {
        switch charging {
        case nil: return HH_CHARGING_UNKNOWN
        case false?: return HH_CHARGING_NO
        case true?: return HH_CHARGING_YES
        }
    }
}

/// One field of a device_conditions answer the host refuses.
struct DeviceConditionsProblem: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A loaded `device_conditions` plugin (hubhost_device_conditions.h), in process or isolated.
/// Sendable: its only field is the `let` handle, and `read_conditions` is [thread-safe] in
/// hubhost_device_conditions.h.
public final class DeviceConditionsPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .deviceConditions, "DeviceConditionsPlugin needs a device_conditions plugin")
        self.handle = handle
    }

    /// The conditions now; `dataDirectory` is the directory whose file system's free bytes are
    /// wanted. Throws `PluginCallError.failed` when the plugin fails (HH_ERR_UNAVAILABLE: it
    /// cannot tell now) and `.invalidAnswer` when a field is out of range. Blocking (the plugin
    /// reads files): call it through `BlockingPool.run` from async code. [thread-safe]
    /// A plugin ejected after failing calls in a row throws `.failed` (HH_ERR_UNAVAILABLE) at once.
    public func read(dataDirectory: String) throws -> DeviceConditions {
        guard let conditions = try handle.unlessEjected({ try readInAnyRuntime(dataDirectory: dataDirectory) }, verdict: { _ in .answered }) else {
            throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_UNAVAILABLE, message: handle.ejectedMessage)
        }
        return conditions
    }

    private func readInAnyRuntime(dataDirectory: String) throws -> DeviceConditions {
        guard handle.instance != nil else { return try IsolatedCalls.deviceConditions(handle, dataDirectory: dataDirectory) }
        let answer = handle.withDeadline(PluginHandle.requestCallDeadlineSeconds) { [self] in
            Result { try readInProcess(dataDirectory: dataDirectory) }.mapError {
                $0 as? PluginCallError ?? .failed(instance: "", status: HH_ERR_INTERNAL, message: "\($0)")
            }
        }
        guard let answer else {
            throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_TIMEOUT, message: PluginHandle.overranMessage)
        }
        return try answer.get()
    }

    private func readInProcess(dataDirectory: String) throws -> DeviceConditions {
        guard let instance = handle.instance else { return try IsolatedCalls.deviceConditions(handle, dataDirectory: dataDirectory) }
        let api = instance.api(hh_device_conditions_v1_t.self)
        guard let readConditions = api.pointee.read_conditions else {
            throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_UNSUPPORTED, message: "the plugin has no read_conditions")
        }
        var raw = hh_device_conditions_t()
        let status = readConditions(instance.handle, dataDirectory, &raw)
        guard status == HH_OK else {
            throw PluginCallError.failed(instance: handle.instanceID, status: status, message: instance.takeError())
        }
        do {
            return try DeviceConditions.checked(
                network: raw.network, metered: raw.metered, hasBattery: raw.has_battery,
                batteryLevel: raw.battery_level, charging: raw.charging,
                hasFreeBytes: raw.has_free_bytes, freeBytes: raw.free_bytes)
        } catch {
            throw PluginCallError.invalidAnswer(instance: handle.instanceID, reason: error.reason)
        }
    }
}

// MARK: Over the wire

extension IsolatedCalls {
    static func deviceConditions(_ handle: PluginHandle, dataDirectory: String) throws -> DeviceConditions {
        try valueCall(handle, .deviceConditions, { $0.string(dataDirectory) }) { reader in
            let network = try reader.i32()
            let metered = try reader.bool()
            let hasBattery = try reader.bool()
            let level = try reader.f64()
            let charging = try reader.i32()
            let hasFree = try reader.bool()
            let free = try reader.u64()
            do {
                return try DeviceConditions.checked(
                    network: network, metered: metered, hasBattery: hasBattery, batteryLevel: level,
                    charging: charging, hasFreeBytes: hasFree, freeBytes: free)
            } catch let problem as DeviceConditionsProblem {
                throw PluginCallError.invalidAnswer(instance: handle.instanceID, reason: problem.reason)
            }
        }
    }

    // The worker side: tag 0 and the conditions, or tag 1 and the error (see `valueCall`).
    static let deviceConditionsServers: [WorkerOp: Server] = [
        .deviceConditions: { handle, request, out in
            do {
                let c = try DeviceConditionsPlugin(handle).read(dataDirectory: try request.string())
                out.u8(0)
                out.i32(c.networkCode)
                out.bool(c.metered)
                out.bool(c.batteryLevel != nil)
                out.f64(c.batteryLevel ?? 0)
                out.i32(c.chargingCode)
                out.bool(c.freeBytes != nil)
                out.u64(c.freeBytes ?? 0)
            } catch let error as PluginCallError {
                out.u8(1)
                out.callError(error)
            }
        }
    ]
}
