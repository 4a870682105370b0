// jsonl-logger: a logging plugin that appends one JSON object per record to a file, rotating by
// size: when the next record would push the file past `max_bytes`, file.N-1 becomes file.N, ...,
// the file becomes file.1, and a new file starts. At most `max_files` rotated files are kept.
//
// Each line: {"time":"2026-11-22T07:50:00.123Z","time_ms":...,"severity":"error",
//             "verbosity":"debug","source":"hubhost.loader","message":"..."}
import HubHostABI
import HubHostPluginSupport

#if canImport(Glibc)
    import Glibc
#endif

private final class JSONLinesLogger {
    let path: String
    let maxBytes: Int
    let maxFiles: Int
    var fd: Int32 = -1
    var size: Int = 0

    init(path: String, maxBytes: Int, maxFiles: Int) {
        self.path = path
        self.maxBytes = maxBytes
        self.maxFiles = maxFiles
    }

    /// Opens (creating folders) the current file for appending. Returns an error text or nil.
    func open() -> String? {
        createParentFolders(of: path)
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        if fd < 0 { return "cannot open log file \(path): \(String(cString: strerror(errno)))" }
        var info = stat()
        size = fstat(fd, &info) == 0 ? Int(info.st_size) : 0
        return nil
    }

    func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    /// [host-serialized]: the host never calls this concurrently on one instance.
    func write(_ line: [UInt8]) {
        if fd < 0 { return }
        if size > 0 && size + line.count > maxBytes { rotate() }
        let written = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if written > 0 { size += written }
    }

    private func rotate() {
        close()
        if maxFiles > 0 {
            unlink("\(path).\(maxFiles)")
            var n = maxFiles - 1
            while n >= 1 {
                rename("\(path).\(n)", "\(path).\(n + 1)")
                n -= 1
            }
            rename(path, "\(path).1")
        } else {
            unlink(path)
        }
        _ = open()
    }
}

private func createParentFolders(of path: String) {
    var prefix = ""
    let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
    for (i, part) in parts.enumerated() {
        prefix += (i == 0 ? "" : "/") + part
        if !prefix.isEmpty { mkdir(prefix, 0o755) }
    }
}

private func jsonEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    // Invalid UTF-8 becomes U+FFFD so every line stays valid JSON.
    for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
        switch scalar {
        case "\"": out.append(contentsOf: Array("\\\"".utf8))
        case "\\": out.append(contentsOf: Array("\\\\".utf8))
        case "\n": out.append(contentsOf: Array("\\n".utf8))
        case "\r": out.append(contentsOf: Array("\\r".utf8))
        case "\t": out.append(contentsOf: Array("\\t".utf8))
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                out.append(contentsOf: Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8))
            } else {
                out.append(contentsOf: Array(String(scalar).utf8))
            }
        }
    }
    out.append(UInt8(ascii: "\""))
}

private func buffer(_ s: hh_string_t) -> UnsafeBufferPointer<UInt8> {
    guard let data = s.data else { return UnsafeBufferPointer(start: nil, count: 0) }
    return UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: s.length)
}

private func isoTime(_ ms: Int64) -> String {
    var seconds = time_t(ms / 1000)
    var utc = tm()
    gmtime_r(&seconds, &utc)
    var text = [CChar](repeating: 0, count: 32)
    strftime(&text, 32, "%Y-%m-%dT%H:%M:%S", &utc)
    let millis = String(Int(ms % 1000))
    return String(cString: text) + "." + String(repeating: "0", count: 3 - millis.count) + millis + "Z"
}

private let severityNames = ["none", "critical_error", "error", "warning", "info"]
private let verbosityNames = ["none", "debug", "info"]

private func name(_ names: [String], _ level: Int32) -> String {
    level >= 0 && Int(level) < names.count ? names[Int(level)] : "unknown"
}

private let createInstance: @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t = {
    host, out in
    guard let host, let out else { return HH_ERR_INVALID_ARGUMENT }
    var path = "logs/hubhost.jsonl"
    if let configured = host.configString("path") { path = configured }
    if !path.hasPrefix("/"), let dataDirectory = host.pointee.data_directory {
        path = String(cString: dataDirectory) + "/" + path
    }
    let maxBytes = host.configInt("max_bytes").map { Int($0) } ?? 10 * 1024 * 1024
    let maxFiles = host.configInt("max_files").map { Int($0) } ?? 5
    guard maxBytes >= 1024 else {
        host.reportError(HH_ERR_CONFIG, "max_bytes must be at least 1024 (got \(maxBytes))")
        return HH_ERR_CONFIG
    }
    guard maxFiles >= 0 else {
        host.reportError(HH_ERR_CONFIG, "max_files must be 0 or more (got \(maxFiles))")
        return HH_ERR_CONFIG
    }
    let logger = JSONLinesLogger(path: path, maxBytes: maxBytes, maxFiles: maxFiles)
    if let problem = logger.open() {
        host.reportError(HH_ERR_IO, problem)
        return HH_ERR_IO
    }
    out.pointee = Unmanaged.passRetained(logger).toOpaque()
    return HH_OK
}

private let destroyInstance: @convention(c) (UnsafeMutableRawPointer?) -> Void = { raw in
    guard let raw else { return }
    let logger = Unmanaged<JSONLinesLogger>.fromOpaque(raw).takeRetainedValue()
    logger.close()
}

private let logRecord: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<hh_log_record_t>?) -> Void = { raw, record in
    guard let raw, let record else { return }
    let logger = Unmanaged<JSONLinesLogger>.fromOpaque(raw).takeUnretainedValue()
    let r = record.pointee
    var line: [UInt8] = []
    line.reserveCapacity(160 + r.message.length)
    line.append(
        contentsOf: Array(
            "{\"time\":\"\(isoTime(r.time_ms))\",\"time_ms\":\(r.time_ms),\"severity\":\"\(name(severityNames, r.severity))\",\"verbosity\":\"\(name(verbosityNames, r.verbosity))\",\"source\":"
                .utf8))
    jsonEscaped(buffer(r.source), into: &line)
    line.append(contentsOf: Array(",\"message\":".utf8))
    jsonEscaped(buffer(r.message), into: &line)
    line.append(contentsOf: Array("}\n".utf8))
    logger.write(line)
}

// The library table is made once, on first use, and never changed; the host only reads it.
nonisolated(unsafe) private let library = SwiftPluginLibrary.make([
    SwiftPluginSpec(
        id: "jsonl-logger", name: "JSON-lines file logger",
        description: "Appends one JSON object per log record to a file, rotating by size.",
        version: "1.0.0", kind: HH_KIND_LOGGING,
        kindAPI: SwiftPluginLibrary.table(hh_logging_v1_t(log: logRecord, flush: nil)),  // every write goes straight to the file
        create: createInstance, destroy: destroyInstance)
])

@_cdecl("hubhost_library_entry")
public func hubhostLibraryEntry() -> UnsafePointer<hh_library_t> {
    library
}
