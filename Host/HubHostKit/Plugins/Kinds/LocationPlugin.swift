import Foundation
import HubHostABI

/// A location as a `location` plugin answered it, copied into host memory.
public struct Location: Codable, Equatable, Sendable {
    /// Degrees north (WGS84, -90...90); nil when the answer has no coordinates.
    public var latitude: Double?
    /// Degrees east (WGS84, -180...180); nil when the answer has no coordinates.
    public var longitude: Double?
    /// Radius of uncertainty of the coordinates, in meters; nil when unknown or without coordinates.
    public var accuracyMeters: Double?
    /// When the fix was taken, in milliseconds since 1970; nil when unknown.
    public var timeMs: Int64?
    /// An opaque id of the place, compared verbatim; nil: none.
    public var locationID: String?
    /// The place's name, e.g. "Pike Place Market"; nil: none.
    public var name: String?
    /// A postal address on one line; nil: none.
    public var address: String?

    /// A location with the fields given; every field is optional.
    public init(
        latitude: Double? = nil, longitude: Double? = nil, accuracyMeters: Double? = nil, timeMs: Int64? = nil,
        locationID: String? = nil, name: String? = nil, address: String? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracyMeters = accuracyMeters
        self.timeMs = timeMs
        self.locationID = locationID
        self.name = name
        self.address = address
    }
}

/// A `location` plugin's answer, or the location service's.
public enum LocationAnswer: Equatable, Sendable {
    /// Where the device is (it may still have neither coordinates nor a location id).
    case location(Location)
    /// No location now (HH_ERR_UNAVAILABLE, e.g. no fix yet, or no delegate at all): go on without one.
    case unavailable
    /// The plugin failed (HH_ERR_TIMEOUT when it overran its deadline); its status and message.
    case failed(status: Int32, message: String)

    /// What this answer says about the plugin, for its ejection.
    var ejectionVerdict: PluginEjection.Verdict {
        guard case .failed(let status, let message) = self else { return .answered }
        return PluginEjection.verdict(status: status, message: message)
    }
}

/// A `location` plugin: answers where the device is. The host's `LocationService` asks these delegates
/// in plugins.yaml order and caches the answer.
/// Sendable: its only field is the `let` handle, and `get_location` and `release_location` are [thread-safe] in
/// hubhost_location.h.
public final class LocationPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .location, "LocationPlugin needs a location plugin")
        self.handle = handle
    }

    /// Asks the plugin and copies the answer at once, then lets the plugin release its strings.
    /// [thread-safe], as the header promises. Waits for an in-process plugin at most
    /// `deadlineSeconds`: one that overran is stuck (later calls answer `.failed` at once until it
    /// returns, and health reports it); an isolated one has its worker's call_timeout.
    /// A plugin ejected after failing calls in a row answers `.failed` (HH_ERR_UNAVAILABLE) at once.
    public func current(deadlineSeconds: Double = PluginHandle.requestCallDeadlineSeconds) -> LocationAnswer {
        handle.unlessEjected({ currentInAnyRuntime(deadlineSeconds: deadlineSeconds) }, verdict: \.ejectionVerdict)
            ?? .failed(status: HH_ERR_UNAVAILABLE, message: handle.ejectedMessage)
    }

    private func currentInAnyRuntime(deadlineSeconds: Double) -> LocationAnswer {
        guard handle.instance != nil else { return IsolatedCalls.location(handle) }
        return handle.withDeadline(deadlineSeconds) { [self] in currentInProcess() }
            ?? .failed(status: HH_ERR_TIMEOUT, message: PluginHandle.overranMessage(deadlineSeconds))
    }

    private func currentInProcess() -> LocationAnswer {
        guard let instance = handle.instance else { return IsolatedCalls.location(handle) }
        let api = instance.api(hh_location_v1_t.self)
        var raw = hh_location_t()
        let status = api.pointee.get_location(instance.handle, &raw)
        switch status {
        case HH_OK:
            func text(_ s: hh_string_t) -> String? { s.length == 0 ? nil : lossyUTF8(s) }
            let location = Location(
                latitude: raw.has_coordinates ? raw.latitude : nil,
                longitude: raw.has_coordinates ? raw.longitude : nil,
                accuracyMeters: raw.has_coordinates && raw.accuracy_m > 0 ? raw.accuracy_m : nil,
                timeMs: raw.time_ms == 0 ? nil : raw.time_ms,
                locationID: text(raw.location_id), name: text(raw.name), address: text(raw.address))
            api.pointee.release_location?(instance.handle, &raw)
            return .location(location)
        case HH_ERR_UNAVAILABLE: return .unavailable
        default: return .failed(status: status, message: instance.takeError())
        }
    }
}

// MARK: Over the wire

extension IsolatedCalls {
    static func location(_ handle: PluginHandle) -> LocationAnswer {
        let (worker, index) = worker(handle)
        switch worker.call(index, .location, { _ in }) {
        case .success(var reader):
            do {
                switch try reader.u8() {
                case 0:
                    return .location(
                        Location(
                            latitude: try reader.optionalDouble(), longitude: try reader.optionalDouble(),
                            accuracyMeters: try reader.optionalDouble(),
                            timeMs: try reader.bool() ? try reader.i64() : nil,
                            locationID: try reader.optionalString(), name: try reader.optionalString(),
                            address: try reader.optionalString()))
                case 1: return .unavailable
                default: return .failed(status: try reader.i32(), message: try reader.string())
                }
            } catch {
                return .failed(status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)")
            }
        case .failure(let failure):
            return .failed(status: HH_ERR_UNAVAILABLE, message: failure.description)
        }
    }

    // The worker side: the answer's tag, then what the case carries.
    static let locationServers: [WorkerOp: Server] = [
        .location: { handle, _, out in
            switch LocationPlugin(handle).current() {
            case .location(let l):
                out.u8(0)
                out.optionalDouble(l.latitude)
                out.optionalDouble(l.longitude)
                out.optionalDouble(l.accuracyMeters)
                out.bool(l.timeMs != nil)
                if let t = l.timeMs { out.i64(t) }
                out.optionalString(l.locationID)
                out.optionalString(l.name)
                out.optionalString(l.address)
            case .unavailable: out.u8(1)
            case .failed(let status, let message):
                out.u8(2)
                out.i32(status)
                out.string(message)
            }
        }
    ]
}
