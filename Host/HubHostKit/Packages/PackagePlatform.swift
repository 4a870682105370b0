/// A platform a package carries a native library for, named by its GNU triple: the library's
/// folder in the package is `lib/<triple>/`.
package enum PackagePlatform: String, CaseIterable, Sendable {
    case x86_64 = "x86_64-linux-gnu"
    case aarch64 = "aarch64-linux-gnu"

    /// The ELF machine (e_machine) of its libraries.
    package var elfMachine: Int {
        switch self {
        case .x86_64: return 62
        case .aarch64: return 183
        }
    }

    /// The platform of this process, nil on one no package carries.
    package static var host: PackagePlatform? { allCases.first { $0.elfMachine == ELFCheck.hostMachine } }

    /// The folder in a package that holds its library.
    package var folder: String { "lib/\(rawValue)" }

    /// The platform of a 64-bit little-endian ELF shared object (checked whole by ELFCheck, for any
    /// machine), or why it has none.
    package static func of(elf bytes: [UInt8]) -> Result<PackagePlatform, PluginPackageError> {
        if let problem = ELFCheck.problem(bytes, anyMachine: true) { return .failure(PluginPackageError(path: "", reason: problem)) }
        let machine = ELFCheck.machine(of: bytes) ?? -1
        guard let platform = allCases.first(where: { $0.elfMachine == machine }) else {
            return .failure(
                PluginPackageError(
                    path: "",
                    reason:
                        "it was built for ELF machine \(machine) (\(ELFCheck.machineName(machine))); a package carries \(allCases.map(\.rawValue).joined(separator: " and "))"
                ))
        }
        return .success(platform)
    }
}
