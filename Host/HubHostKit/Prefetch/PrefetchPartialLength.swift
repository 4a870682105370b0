import Foundation

/// How much of an item's main file a partial download asks for (the PCD SDK's
/// videoPartialDownloadLength): the first N bytes, or the first N seconds of play. Seconds become
/// bytes in proportion to the file's catalog duration and size (`ceil(size * seconds / duration)`):
/// a constant-bitrate approximation, which is what a byte-range prefetch can know without parsing
/// the container. Seconds need both the duration and the size from the catalog; bytes need neither.
public enum PrefetchPartialLength: Sendable, Equatable {
    /// The first N bytes of the main file (1 to 16 TiB); refused for HLS items.
    case bytes(Int64)
    /// The first N seconds of play (more than 0, at most `maxSeconds`); needs the catalog's duration and size of the file.
    case seconds(Double)

    /// The largest number of seconds accepted (about 11 days), so arithmetic stays exact.
    public static let maxSeconds = 1_000_000.0

    /// Checks a length from outside (CLI, HTTP, Swift API) before any arithmetic touches it.
    public func validated() throws -> PrefetchPartialLength {
        switch self {
        case .bytes(let bytes):
            guard (1...CatalogProtocol.maxFileSize).contains(bytes) else {
                throw PrefetchError.invalid("a partial length must be 1...\(CatalogProtocol.maxFileSize) bytes, not \(bytes)")
            }
        case .seconds(let seconds):
            guard seconds.isFinite, seconds > 0, seconds <= Self.maxSeconds else {
                throw PrefetchError.invalid("a partial length must be more than 0 and at most \(Int(Self.maxSeconds)) seconds, not \(seconds)")
            }
        }
        return self
    }

    /// The bytes of `file` this length asks for: nil when that is the whole file (a full
    /// download), or a refusal when seconds cannot be turned into bytes.
    func bytes(of file: PrefetchFile) -> Result<Int64?, PrefetchError> {
        let wanted: Int64
        switch self {
        case .bytes(let bytes):
            wanted = bytes
        case .seconds(let seconds):
            guard let duration = file.duration, let size = file.size, size > 0 else {
                return .failure(.invalid("seconds need the main file's duration and size from the catalog; ask for bytes instead"))
            }
            if seconds >= duration { return .success(nil) }
            wanted = Int64((Double(size) * seconds / duration).rounded(.up))
        }
        if let size = file.size, wanted >= size { return .success(nil) }
        return .success(max(1, wanted))
    }
}
