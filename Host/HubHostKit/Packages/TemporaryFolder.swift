import Foundation

/// Private temporary folders for packages: made with mkdtemp (0700, a fresh name) beside where the
/// result goes, and moved into place with a rename that never replaces what is there.
enum TemporaryFolder {
    struct Refusal: Error {
        var reason: String
    }

    /// A new folder `<near>/.hhp-XXXXXX`, or why not.
    static func create(near folder: String) throws(Refusal) -> String {
        var template = Array((folder + "/.hhp-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw Refusal(reason: String(cString: strerror(errno)))
        }
        return String(cString: made)
    }

    /// Renames `source` to `destination` unless `destination` exists (renameat2 RENAME_NOREPLACE,
    /// looked up at run time; without it, a check then rename(2), which never replaces a non-empty
    /// folder or a file). Returns why it failed, or nil.
    static func renameNoReplace(_ source: String, to destination: String) -> String? {
        typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        let noReplace: UInt32 = 1  // RENAME_NOREPLACE
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") {
            let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
            if renameat2(AT_FDCWD, source, AT_FDCWD, destination, noReplace) == 0 { return nil }
            if errno != ENOSYS && errno != EINVAL {
                return errno == EEXIST ? "it already exists; extract into a new folder" : "cannot be created: \(String(cString: strerror(errno)))"
            }
        }
        var status = stat()
        guard lstat(destination, &status) != 0 else { return "it already exists; extract into a new folder" }
        return rename(source, destination) == 0 ? nil : "cannot be created: \(String(cString: strerror(errno)))"
    }
}
