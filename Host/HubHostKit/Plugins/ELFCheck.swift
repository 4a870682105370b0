/// Checks that a library's bytes are an ELF shared object this process can map, before dlopen sees
/// them. dlopen maps each loadable segment at the file offset its program header gives; a file
/// cut short (a copy interrupted, a non-atomic deploy) is mapped past its end, and the first touch
/// of those pages kills the process with SIGBUS. So every offset and size the headers give is
/// checked against the bytes there are, with overflow-checked arithmetic, and the class, byte
/// order, type and machine against this process.
package enum ELFCheck {
    /// Why `bytes` is not a shared object dlopen can map whole here, or nil when it is. With
    /// `anyMachine`, a whole shared object for another machine passes too (a package's library for
    /// another platform): `machine(of:)` then tells which.
    package static func problem(_ bytes: [UInt8], anyMachine: Bool = false) -> String? {
        bytes.withUnsafeBytes { problem(UnsafeRawBufferPointer($0), anyMachine: anyMachine) }
    }

    /// The ELF machine (e_machine) of bytes that passed `problem`.
    package static func machine(of bytes: [UInt8]) -> Int? {
        bytes.count >= 20 ? Int(bytes[18]) | Int(bytes[19]) << 8 : nil
    }

    static func problem(_ bytes: UnsafeRawBufferPointer, anyMachine: Bool = false) -> String? {
        let size = bytes.count
        guard size >= 64 else { return "it is \(size) bytes, shorter than an ELF header (cut short?)" }
        guard bytes[0] == 0x7f, bytes[1] == UInt8(ascii: "E"), bytes[2] == UInt8(ascii: "L"), bytes[3] == UInt8(ascii: "F") else {
            return "it is not an ELF file"
        }
        guard bytes[4] == 2 else { return "it is a 32-bit ELF file; this hubhost loads 64-bit libraries" }
        guard bytes[5] == 1 else { return "it is a big-endian ELF file; this machine is little-endian" }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        // A 64-bit field read as UInt64, so that a value past Int.max is refused, not wrapped.
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
        /// Whether [offset, offset + count * entry) lies inside the bytes.
        func inside(_ offset: UInt64, _ count: Int, _ entry: Int) -> Bool {
            let (length, overflow) = UInt64(count).multipliedReportingOverflow(by: UInt64(entry))
            let (end, overflowEnd) = offset.addingReportingOverflow(length)
            return !overflow && !overflowEnd && end <= UInt64(size)
        }
        let type = u16(16)
        guard type == 3 else {
            return type == 2
                ? "it is an executable, not a shared library (link it with -shared)" : "it is an ELF file of type \(type), not a shared library"
        }
        let machine = u16(18)
        guard anyMachine || machine == hostMachine else {
            return "it was built for ELF machine \(machine) (\(machineName(machine))); this machine is \(machineName(hostMachine))"
        }
        let programOffset = u64(32)
        let sectionOffset = u64(40)
        let programEntry = u16(54)
        let programCount = u16(56)
        let sectionEntry = u16(58)
        let sectionCount = u16(60)
        guard programCount > 0, programEntry == 56, inside(programOffset, programCount, programEntry) else {
            return "its program headers lie outside its \(size) bytes (cut short?)"
        }
        if sectionCount > 0, sectionOffset != 0, !(sectionEntry == 64 && inside(sectionOffset, sectionCount, sectionEntry)) {
            return "its section headers lie outside its \(size) bytes (cut short?)"
        }
        var loadable = 0
        for index in 0..<programCount {
            let header = Int(programOffset) + index * programEntry
            guard u32(header) == 1 else { continue }  // PT_LOAD: what dlopen maps from the file
            loadable += 1
            let offset = u64(header + 8)
            let fileSize = u64(header + 32)
            let memorySize = u64(header + 40)
            guard fileSize <= memorySize, inside(offset, 1, Int(clamping: fileSize)), fileSize <= UInt64(size) else {
                return "its segment \(index) needs bytes \(offset) to \(offset &+ fileSize), past its end at \(size) (cut short?)"
            }
        }
        guard loadable > 0 else { return "it has no loadable segment" }
        return nil
    }

    /// The ELF machine of this process's architecture.
    static var hostMachine: Int {
        #if arch(x86_64)
            return 62
        #elseif arch(arm64)
            return 183
        #else
            return -1
        #endif
    }

    static func machineName(_ machine: Int) -> String {
        switch machine {
        case 3: return "x86"
        case 40: return "ARM"
        case 62: return "x86-64"
        case 183: return "AArch64"
        case 243: return "RISC-V"
        default: return "machine \(machine)"
        }
    }
}
