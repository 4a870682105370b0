import Foundation
import HubHostKit

/// `hubhost bench prefetch`: the prefetch engine's download queue fetching `files` files of
/// `size` bytes from nginx on 127.0.0.1 (static files in a temporary root, a private config),
/// beside aria2c (Debian's aria2) downloading the same URLs with the same concurrency in the same
/// run (the yardstick). Figures: wall seconds, throughput (MiB/s) and CPU seconds per GiB of this
/// process (hubhost) or of the aria2c child, best of `rounds`. The items enter the queue through
/// addDownloadedItem (NewlyAdding), so no catalog service is involved: the queue, AsyncHTTPClient,
/// the disk writes and the size checks are what is measured.
public struct PrefetchDownloadBenchmark {
    public struct Figures: Codable, Sendable {
        public var seconds: Double
        public var mebibytesPerSecond: Double
        public var cpuSecondsPerGiB: Double
    }

    public struct Result: Codable, Sendable {
        public var files: Int
        public var size: Int
        public var concurrency: Int
        public var hubhost: Figures
        public var aria2c: Figures
        /// hubhost throughput / aria2c throughput.
        public var ratio: Double
    }

    public let files: Int
    public let size: Int
    public let concurrency: Int
    public let rounds: Int

    public init(files: Int, size: Int, concurrency: Int, rounds: Int) {
        self.files = files
        self.size = size
        self.concurrency = concurrency
        self.rounds = rounds
    }

    /// User and system CPU seconds of this process, or of its waited-for children.
    static func cpuSeconds(children: Bool) -> Double {
        var usage = rusage()
        getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec)
            / 1e6
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let nginx = try PageServingBenchmark.tool("nginx", in: ["/usr/sbin/nginx", "/usr/bin/nginx"])
        let aria2c = try PageServingBenchmark.tool("aria2c", in: ["/usr/bin/aria2c", "/usr/local/bin/aria2c"])
        let folder = NSTemporaryDirectory() + "hubhost-bench-prefetch-" + UUID().uuidString
        let root = folder + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        progress("writing \(files) files of \(size) bytes")
        // One pseudo-random block, each file made distinct by its first 8 bytes.
        var generator = SplitMix(seed: 42)
        var block = Data(count: size)
        block.withUnsafeMutableBytes { raw in
            for offset in stride(from: 0, to: size - size % 8, by: 8) { raw.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self) }
        }
        for index in 0..<files {
            if size >= 8 { block.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(index), toByteOffset: 0, as: UInt64.self) } }
            try block.write(to: URL(fileURLWithPath: root + "/f\(index).bin"))
        }
        let nginxServer = try LocalNginx.start(nginx, folder: folder, httpDirectives: "sendfile on;", serverDirectives: "root \(root);")
        defer { nginxServer.stop() }
        let server = nginxServer.process
        let base = nginxServer.baseURL
        try PageServingBenchmark.waitForPage(http: HTTPFetcher(), url: base + "/f0.bin", process: server)
        let urls = (0..<files).map { "\(base)/f\($0).bin" }

        var best: (hubhost: Figures?, aria2c: Figures?) = (nil, nil)
        for round in 1...rounds {
            progress("round \(round)/\(rounds): hubhost prefetch queue, \(concurrency) at once")
            let ours = try runHubhost(urls, folder: folder + "/hubhost-\(round)")
            progress("round \(round)/\(rounds): aria2c, \(concurrency) at once")
            let theirs = try runAria2c(aria2c, urls, folder: folder + "/aria2c-\(round)")
            if best.hubhost.map({ ours.seconds < $0.seconds }) ?? true { best.hubhost = ours }
            if best.aria2c.map({ theirs.seconds < $0.seconds }) ?? true { best.aria2c = theirs }
        }
        let hubhost = best.hubhost!
        let other = best.aria2c!
        return Result(
            files: files, size: size, concurrency: concurrency, hubhost: hubhost, aria2c: other,
            ratio: hubhost.mebibytesPerSecond / max(other.mebibytesPerSecond, 1e-9))
    }

    private func figures(seconds: Double, cpu: Double) -> Figures {
        let bytes = Double(files) * Double(size)
        return Figures(
            seconds: seconds, mebibytesPerSecond: bytes / 1_048_576 / max(seconds, 1e-9),
            cpuSecondsPerGiB: cpu / (bytes / 1_073_741_824))
    }

    private func runHubhost(_ urls: [String], folder: String) throws -> Figures {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try """
        data_dir: data
        logging: {severity: warning}
        prefetch: {enabled: true, item_download_behavior: none, max_concurrent_downloads: \(concurrency), enable_auto_purge: false, storage_low: 0}
        plugins: []
        """.write(toFile: folder + "/plugins.yaml", atomically: true, encoding: .utf8)
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        guard let engine = try host.prefetch() else { throw PageServingBenchmark.Failure.failed("prefetch did not open") }
        let cpuBefore = Self.cpuSeconds(children: false)
        let start = Clock.monotonicNs()
        for (index, url) in urls.enumerated() {
            try engine.addDownloadedItem(
                PrefetchImportMetadata(
                    contentId: "f\(index)", provider: "bench", downloadStatus: .newlyAdding,
                    size: Int64(size), contentUrl: url))
        }
        let deadline = start &+ 3_600_000_000_000
        while true {
            try engine.round()
            let status = try engine.status()
            let cached = status.items["cached"] ?? 0
            let failed = status.items["failed"] ?? 0
            if failed > 0 { throw PageServingBenchmark.Failure.failed("\(failed) downloads failed") }
            if cached == urls.count { break }
            guard Clock.monotonicNs() < deadline else { throw PageServingBenchmark.Failure.failed("the queue did not finish within an hour") }
            usleep(5_000)
        }
        let seconds = Double(Clock.monotonicNs() - start) / 1e9
        return figures(seconds: seconds, cpu: Self.cpuSeconds(children: false) - cpuBefore)
    }

    private func runAria2c(_ aria2c: String, _ urls: [String], folder: String) throws -> Figures {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try (urls.joined(separator: "\n") + "\n").write(toFile: folder + "/urls.txt", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: aria2c)
        process.arguments = [
            "-i", folder + "/urls.txt", "-d", folder + "/out", "-j", "\(concurrency)", "-x", "1", "-s", "1",
            "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false", "--quiet=true",
            "--check-certificate=false", "--max-tries=1"
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let cpuBefore = Self.cpuSeconds(children: true)
        let start = Clock.monotonicNs()
        try process.run()
        process.waitUntilExit()
        let seconds = Double(Clock.monotonicNs() - start) / 1e9
        guard process.terminationStatus == 0 else { throw PageServingBenchmark.Failure.failed("aria2c exited \(process.terminationStatus)") }
        return figures(seconds: seconds, cpu: Self.cpuSeconds(children: true) - cpuBefore)
    }
}
