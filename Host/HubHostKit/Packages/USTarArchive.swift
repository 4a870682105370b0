/// A POSIX ustar archive of regular files, written and read here (no dependency): 512-byte headers
/// with octal fields, each file's bytes padded to 512, two zero blocks at the end. The reader trusts
/// nothing: every number is range-checked, every header's checksum verified, and anything but a
/// regular file (links, devices, folders, pax or GNU extension headers) is refused by name.
enum USTarArchive {
    static let block = 512

    /// One regular file of an archive.
    struct Entry: Equatable {
        var name: String
        var bytes: [UInt8]
        /// Unix permission bits as written (0o644 or 0o755); the reader range-checks them and keeps them.
        var mode: Int = 0o644
    }

    /// Why an archive was refused: `entry` is the name of the entry concerned (nil for the archive as
    /// a whole) and `reason` says what is wrong with it.
    struct Refusal: Error, Equatable {
        var entry: String?
        var reason: String
    }

    // MARK: Writing

    /// The archive of `entries`, in order. Names longer than 100 bytes are split into prefix and
    /// name at a '/', as ustar allows; a name that does not fit is a precondition failure (the
    /// package layout keeps names short).
    static func write(_ entries: [Entry]) -> [UInt8] {
        var archive: [UInt8] = []
        for entry in entries {
            archive += header(for: entry)
            archive += entry.bytes
            archive += [UInt8](repeating: 0, count: (block - entry.bytes.count % block) % block)
        }
        archive += [UInt8](repeating: 0, count: 2 * block)
        return archive
    }

    static func header(for entry: Entry) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: block)
        func put(_ text: String, at offset: Int, width: Int) {
            let bytes = Array(text.utf8)
            precondition(bytes.count <= width, "'\(text)' does not fit a \(width)-byte tar field")
            header.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        }
        func octal(_ value: Int, at offset: Int, width: Int) {
            // width - 1 digits, then a NUL.
            let digits = String(value, radix: 8)
            put(String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits, at: offset, width: width - 1)
        }
        let (prefix, name) = split(entry.name)
        put(name, at: 0, width: 100)
        octal(entry.mode, at: 100, width: 8)
        octal(0, at: 108, width: 8)  // uid
        octal(0, at: 116, width: 8)  // gid
        octal(entry.bytes.count, at: 124, width: 12)
        octal(0, at: 136, width: 12)  // mtime: the epoch, so that the same files make the same archive
        header[156] = UInt8(ascii: "0")
        put("ustar", at: 257, width: 6)
        put("00", at: 263, width: 2)
        put("root", at: 265, width: 32)
        put("root", at: 297, width: 32)
        octal(0, at: 329, width: 8)
        octal(0, at: 337, width: 8)
        put(prefix, at: 345, width: 155)
        // The checksum: the sum of the header's bytes with the field itself as spaces.
        put("        ", at: 148, width: 8)
        let sum = header.reduce(0) { $0 + Int($1) }
        let digits = String(sum, radix: 8)
        put(String(repeating: "0", count: 6 - digits.count) + digits, at: 148, width: 6)
        header[154] = 0
        header[155] = UInt8(ascii: " ")
        return header
    }

    private static func split(_ path: String) -> (prefix: String, name: String) {
        if path.utf8.count <= 100 { return ("", path) }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        for cut in 1..<parts.count {
            let prefix = parts[..<cut].joined(separator: "/")
            let name = parts[cut...].joined(separator: "/")
            if prefix.utf8.count <= 155, name.utf8.count <= 100 { return (prefix, name) }
        }
        preconditionFailure("'\(path)' is too long for a ustar name")
    }

    // MARK: Reading

    /// The regular files of `archive`, in order, or the first reason it is refused. `maxEntryBytes`
    /// bounds each file and `maxEntries` their number; the archive must end with its end-of-archive
    /// zero blocks and hold nothing but zeros after them.
    static func read(_ archive: [UInt8], maxEntryBytes: Int, maxEntries: Int) throws(Refusal) -> [Entry] {
        guard archive.count % block == 0 else {
            throw Refusal(entry: nil, reason: "it is \(archive.count) bytes, not a whole number of 512-byte blocks (cut short?)")
        }
        var entries: [Entry] = []
        var offset = 0
        while true {  // bounded: each pass moves offset forward by at least one block, or ends
            guard offset + block <= archive.count else {
                let after = entries.last.map { " after '\($0.name)'" } ?? ""
                throw Refusal(entry: nil, reason: "it ends\(after) without the end-of-archive blocks (cut short?)")
            }
            let header = archive[offset..<offset + block]
            if header.allSatisfy({ $0 == 0 }) {
                guard archive[(offset + block)...].allSatisfy({ $0 == 0 }) else {
                    throw Refusal(entry: nil, reason: "it has data after its end-of-archive block")
                }
                return entries
            }
            let entry = try readHeader(Array(header), at: offset, maxEntryBytes: maxEntryBytes)
            guard entries.count < maxEntries else {
                throw Refusal(entry: entry.name, reason: "the archive has more than \(maxEntries) entries")
            }
            let start = offset + block
            // Overflow cannot happen (size <= maxEntryBytes, offset <= archive.count), but check anyway.
            let (end, overflow) = start.addingReportingOverflow(entry.size)
            guard !overflow, end <= archive.count else {
                throw Refusal(
                    entry: entry.name,
                    reason: "its header declares \(entry.size) bytes, but only \(max(0, archive.count - start)) follow (cut short?)")
            }
            entries.append(Entry(name: entry.name, bytes: Array(archive[start..<end]), mode: entry.mode))
            let padded = (entry.size + block - 1) / block * block
            offset = start + padded
        }
    }

    /// A header's name, size and mode, or why it is refused.
    private static func readHeader(_ header: [UInt8], at offset: Int, maxEntryBytes: Int) throws(Refusal) -> (
        name: String, size: Int, mode: Int
    ) {
        // The name first, so that every other refusal can say which entry it is about.
        let rawName = try text(header, 0, 100, field: "name", entry: nil)
        let prefix = try text(header, 345, 155, field: "prefix", entry: rawName)
        let name = prefix.isEmpty ? rawName : prefix + "/" + rawName
        let recorded = try number(header, 148, 8, field: "checksum", entry: name)
        var sum = 0
        for (index, byte) in header.enumerated() { sum += (148..<156).contains(index) ? 32 : Int(byte) }
        guard recorded == sum else {
            throw Refusal(entry: name, reason: "its header checksum is \(recorded) but the header sums to \(sum) (damaged, or not a tar header)")
        }
        guard header[257..<263].elementsEqual(Array("ustar".utf8) + [0]), header[263..<265].elementsEqual(Array("00".utf8)) else {
            throw Refusal(entry: name, reason: "its header is not a POSIX ustar header (magic \"ustar\" and version \"00\")")
        }
        switch header[156] {
        case UInt8(ascii: "0"), 0: break
        case UInt8(ascii: "1"):
            throw Refusal(
                entry: name,
                reason:
                    "it is a hard link (to '\((try? text(header, 157, 100, field: "linkname", entry: name)) ?? "?")'); only regular files are allowed"
            )
        case UInt8(ascii: "2"):
            throw Refusal(
                entry: name,
                reason:
                    "it is a symbolic link (to '\((try? text(header, 157, 100, field: "linkname", entry: name)) ?? "?")'); only regular files are allowed"
            )
        case UInt8(ascii: "3"), UInt8(ascii: "4"): throw Refusal(entry: name, reason: "it is a device node; only regular files are allowed")
        case UInt8(ascii: "5"): throw Refusal(entry: name, reason: "it is a folder entry; only regular files are allowed")
        case UInt8(ascii: "6"): throw Refusal(entry: name, reason: "it is a FIFO; only regular files are allowed")
        case UInt8(ascii: "7"): throw Refusal(entry: name, reason: "it is a contiguous file (type 7); only regular files (type 0) are allowed")
        case UInt8(ascii: "x"), UInt8(ascii: "g"): throw Refusal(entry: name, reason: "it is a pax extended header; a package is plain ustar")
        case UInt8(ascii: "L"), UInt8(ascii: "K"): throw Refusal(entry: name, reason: "it is a GNU long-name header; a package is plain ustar")
        case let other:
            throw Refusal(entry: name, reason: "it has entry type \(other) ('\(Character(Unicode.Scalar(other)))'); only regular files are allowed")
        }
        let size = try number(header, 124, 12, field: "size", entry: name)
        guard size <= maxEntryBytes else {
            throw Refusal(
                entry: name, reason: "its header declares \(size) bytes, more than the \(ByteCount.text(maxEntryBytes)) a file may be")
        }
        let mode = try number(header, 100, 8, field: "mode", entry: name)
        guard mode & ~0o777 == 0 else {
            throw Refusal(entry: name, reason: "its mode \(String(mode, radix: 8)) has bits beyond rwx (setuid, setgid or sticky)")
        }
        return (name, size, mode)
    }

    /// A NUL-terminated (or full-width) UTF-8 field with nothing but NULs after its end.
    private static func text(_ header: [UInt8], _ offset: Int, _ width: Int, field: String, entry: String?) throws(Refusal) -> String {
        let bytes = header[offset..<offset + width]
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        guard bytes[end...].allSatisfy({ $0 == 0 }) else {
            throw Refusal(entry: entry, reason: "its header's \(field) field has bytes after its terminating NUL")
        }
        guard let text = String(validating: bytes[..<end], as: UTF8.self) else {
            throw Refusal(entry: entry, reason: "its header's \(field) field is not UTF-8")
        }
        return text
    }

    /// An octal field: optional leading spaces, octal digits, then NULs or spaces to the end. Base-256
    /// (GNU's binary numbers) is refused; every value fits the field's digits, so fits an Int.
    private static func number(_ header: [UInt8], _ offset: Int, _ width: Int, field: String, entry: String) throws(Refusal) -> Int {
        let bytes = Array(header[offset..<offset + width])
        var index = 0
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        var value = 0
        var digits = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(bytes[index]) {
            value = value * 8 + Int(bytes[index] - UInt8(ascii: "0"))  // at most 12 digits: < 2^36
            digits += 1
            index += 1
        }
        guard digits > 0, bytes[index...].allSatisfy({ $0 == 0 || $0 == UInt8(ascii: " ") }) else {
            throw Refusal(entry: entry, reason: "its header's \(field) field is not an octal number")
        }
        return value
    }
}
