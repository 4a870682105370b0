import HubHostABI

/// An ABI version (hh_version_t): major.minor.patch. Same major means compatible.
public struct ABIVersion: Codable, Equatable, Sendable, CustomStringConvertible {
    /// Changes only with an incompatible ABI: a library loads only when its major is the host's.
    public var major: UInt32
    /// Raised when the ABI only adds (extensions, status codes, kinds); a library exporting a kind must say at least
    /// the minor that added it.
    public var minor: UInt32
    /// The patch number; it does not affect compatibility.
    public var patch: UInt32

    /// The version `major`.`minor`.`patch`.
    public init(major: UInt32, minor: UInt32, patch: UInt32) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    init(_ version: hh_version_t) { self.init(major: version.major, minor: version.minor, patch: version.patch) }

    /// The version of the headers in Protocols/ this host was built with.
    public static let host = ABIVersion(
        major: UInt32(HH_ABI_VERSION_MAJOR), minor: UInt32(HH_ABI_VERSION_MINOR),
        patch: UInt32(HH_ABI_VERSION_PATCH))

    var raw: hh_version_t { hh_version_t(major: major, minor: minor, patch: patch) }

    public var description: String { "\(major).\(minor).\(patch)" }
}
