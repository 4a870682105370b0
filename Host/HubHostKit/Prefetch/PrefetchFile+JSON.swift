import Foundation

extension PrefetchFile {
    /// An item's `files` column as PrefetchStore writes it: read by hand, straight into the files
    /// (no JSONDecoder, no dictionary per file: both were most of a catalog query's time), and
    /// through JSONDecoder only when the text is not in a shape the fast path takes, so a row
    /// decodes to the same files, or fails with the same error, either way.
    static func decodeList(_ text: String) throws -> [PrefetchFile] {
        var text = text
        let fast = text.withUTF8 { bytes -> [PrefetchFile]? in
            var scanner = JSONScanner(bytes: bytes)
            guard let files = scanner.prefetchFiles() else { return nil }
            scanner.skipSpace()
            return scanner.at == bytes.count ? files : nil
        }
        if let fast { return fast }
        return try JSONDecoder().decode([PrefetchFile].self, from: Data(text.utf8))
    }
}

extension JSONScanner {
    /// `[file, ...]` in PrefetchFile's Codable form; nil for anything JSONDecoder would not decode
    /// exactly so (a missing key, a wrong type, a number that is not a whole one) and for a key
    /// given twice.
    fileprivate mutating func prefetchFiles() -> [PrefetchFile]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var files: [PrefetchFile] = []
        if take(UInt8(ascii: "]")) { return files }
        repeat {
            guard let file = prefetchFile() else { return nil }
            files.append(file)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? files : nil
    }

    /// One file object of the catalog's JSON. Long on purpose: one case per key of a file, read in
    /// one pass without building a dictionary (the catalog's hot path).
    private mutating func prefetchFile() -> PrefetchFile? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var role: String?
        var index: Int64?
        var url: String?
        var autoDownload: Bool?
        var localPath: String?
        var bytesDownloaded: Int64?
        var done: Bool?
        // Optional keys stay nil when absent or null.
        var size: Int64?
        var sha256: String?
        var validator: String?
        var duration: Double?
        var partialLength: Int64?
        var partialSeconds: Double?
        var seen: UInt16 = 0  // one bit per known key: a key given twice is left to JSONDecoder
        if !take(UInt8(ascii: "}")) {
            repeat {
                skipSpace()
                guard let key = string(), take(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                let bit: UInt16
                switch key {
                case "role":
                    bit = 1 << 0
                    guard let value = string() else { return nil }
                    role = value
                case "index":
                    bit = 1 << 1
                    guard let value = whole() else { return nil }
                    index = value
                case "url":
                    bit = 1 << 2
                    guard let value = string() else { return nil }
                    url = value
                case "autoDownload":
                    bit = 1 << 3
                    guard let value = bool() else { return nil }
                    autoDownload = value
                case "localPath":
                    bit = 1 << 4
                    guard let value = string() else { return nil }
                    localPath = value
                case "bytesDownloaded":
                    bit = 1 << 5
                    guard let value = whole() else { return nil }
                    bytesDownloaded = value
                case "done":
                    bit = 1 << 6
                    guard let value = bool() else { return nil }
                    done = value
                case "size":
                    bit = 1 << 7
                    guard
                        null()
                            || {
                                size = whole()
                                return size != nil
                            }()
                    else { return nil }
                case "sha256":
                    bit = 1 << 8
                    guard
                        null()
                            || {
                                sha256 = string()
                                return sha256 != nil
                            }()
                    else { return nil }
                case "validator":
                    bit = 1 << 9
                    guard
                        null()
                            || {
                                validator = string()
                                return validator != nil
                            }()
                    else { return nil }
                case "duration":
                    bit = 1 << 10
                    guard
                        null()
                            || {
                                duration = number()
                                return duration != nil
                            }()
                    else { return nil }
                case "partialLength":
                    bit = 1 << 11
                    guard
                        null()
                            || {
                                partialLength = whole()
                                return partialLength != nil
                            }()
                    else { return nil }
                case "partialSeconds":
                    bit = 1 << 12
                    guard
                        null()
                            || {
                                partialSeconds = number()
                                return partialSeconds != nil
                            }()
                    else { return nil }
                default:
                    bit = 0
                    guard value(depth: 1) != nil else { return nil }  // a key JSONDecoder ignores
                }
                guard seen & bit == 0 else { return nil }
                seen |= bit
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return nil }
        }
        guard let role, let index = index.flatMap({ Int(exactly: $0) }), let url, let autoDownload, let localPath, let bytesDownloaded,
            let done
        else { return nil }
        return PrefetchFile(
            role: role, index: index, url: url, size: size, sha256: sha256, autoDownload: autoDownload, localPath: localPath,
            bytesDownloaded: bytesDownloaded, done: done, validator: validator, duration: duration, partialLength: partialLength,
            partialSeconds: partialSeconds)
    }

    private mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// An integer token (no fraction, no exponent: the form JSONEncoder writes an Int64 in).
    private mutating func whole() -> Int64? {
        let start = at
        guard let d = number() else { return nil }
        for byte in bytes[start..<at] where byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            return nil
        }
        return Int64(d)
    }

    private mutating func null() -> Bool { literal("null") }
}
