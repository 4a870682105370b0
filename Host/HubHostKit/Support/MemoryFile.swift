import Foundation

/// memfd_create and file seals, which Glibc's module map does not export: an anonymous file in
/// memory that can be handed to a child process and sealed so that no one, the host included, can
/// change its size or content any more.
enum MemoryFile {
    /// A new close-on-exec memory file that accepts seals, or nil when the system refuses.
    static func create(name: String) -> Int32? {
        guard let create = memfdCreate else { return nil }
        let fd = create(name, cloexec | allowSealing)
        return fd >= 0 ? fd : nil
    }

    /// Adds `seals` (a union of the `seal...` values); false when the system refuses.
    static func seal(_ fd: Int32, _ seals: Int32) -> Bool { fcntl(fd, addSeals, seals) == 0 }

    /// The seals `fd` carries (0 for a file that takes none), or nil when it cannot tell.
    static func seals(_ fd: Int32) -> Int32? {
        let seals = fcntl(fd, getSeals)
        return seals >= 0 ? seals : nil
    }

    private typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
    private static let memfdCreate: MemfdCreate? = {
        // nil is RTLD_DEFAULT: the symbol as the process's libraries provide it.
        guard let symbol = dlsym(nil, "memfd_create") else { return nil }
        return unsafeBitCast(symbol, to: MemfdCreate.self)
    }()
    // From <linux/memfd.h> and <linux/fcntl.h>.
    private static let cloexec: UInt32 = 0x0001
    private static let allowSealing: UInt32 = 0x0002
    private static let addSeals: Int32 = 1024 + 9
    private static let getSeals: Int32 = 1024 + 10
    static let sealSeal: Int32 = 0x0001
    static let sealShrink: Int32 = 0x0002
    static let sealGrow: Int32 = 0x0004
    static let sealWrite: Int32 = 0x0008
}
