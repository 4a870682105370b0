/// A byte count as messages say it: "16 MiB", "1 KiB", "100 bytes" (whole units only, so a limit
/// reads as it was set).
enum ByteCount {
    static func text(_ bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
