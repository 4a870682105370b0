/// A platform a package carries a native library for, named by its GNU triple: the library's
/// folder in the package is `lib/<triple>/`.
public enum PackagePlatform: String, CaseIterable, Sendable {
    case x86_64 = "x86_64-linux-gnu"
    case aarch64 = "aarch64-linux-gnu"

    /// The ELF machine (e_machine) of its libraries.
    public var elfMachine: Int {
        switch self {
        case .x86_64: return 62
        case .aarch64: return 183
        }
    }

    /// The platform of this process, nil on one no package carries.
    public static var host: PackagePlatform? { allCases.first { $0.elfMachine == ELFCheck.hostMachine } }

    /// The folder in a package that holds its library.
    public var folder: String { "lib/\(rawValue)" }

    /// The platform of a 64-bit little-endian ELF shared object, from its header; or why it has none.
    public static func of(elf bytes: [UInt8]) -> Result<PackagePlatform, PluginPackageError> {
        func refuse(_ reason: String) -> Result<PackagePlatform, PluginPackageError> { .failure(PluginPackageError(path: "", reason: reason)) }
        guard bytes.count >= 64, bytes[0] == 0x7f, bytes[1] == UInt8(ascii: "E"), bytes[2] == UInt8(ascii: "L"), bytes[3] == UInt8(ascii: "F")
        else { return refuse("it is not an ELF file") }
        guard bytes[4] == 2, bytes[5] == 1 else { return refuse("it is not a 64-bit little-endian ELF file") }
        guard Int(bytes[16]) | Int(bytes[17]) << 8 == 3 else { return refuse("it is not an ELF shared library (type 3)") }
        let machine = Int(bytes[18]) | Int(bytes[19]) << 8
        guard let platform = allCases.first(where: { $0.elfMachine == machine }) else {
            return refuse(
                "it was built for ELF machine \(machine) (\(ELFCheck.machineName(machine))); a package carries \(allCases.map(\.rawValue).joined(separator: " and "))"
            )
        }
        return .success(platform)
    }
}
