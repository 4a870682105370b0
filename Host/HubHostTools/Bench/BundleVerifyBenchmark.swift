import Foundation
import HubHostKit

/// `hubhost bench all`'s bundle verification figure: the host's checks on a downloaded bundle
/// (BundleVerifier.verify: size, SHA-256 against the metadata, the signature with the public key)
/// on a file of `megabytes` MB, beside `openssl dgst -sha256` on the same file (the yardstick: one
/// pass of the same hash, by the tool people would use), best of `rounds` each. The key is a new
/// P-256 key made with the openssl command for the run.
public struct BundleVerifyBenchmark {
    public struct Result: Encodable, Sendable {
        public var megabytes: Int
        public var rounds: Int
        public var verifyMBPerSecond: Double
        public var opensslMBPerSecond: Double
        /// verify / openssl.
        public var ratio: Double
    }

    public var megabytes: Int
    public var rounds: Int

    public init(megabytes: Int = 256, rounds: Int = 3) {
        self.megabytes = megabytes
        self.rounds = rounds
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        let openssl = try PageServingBenchmark.tool("openssl", in: ["/usr/bin/openssl", "/usr/local/bin/openssl"])
        let folder = NSTemporaryDirectory() + "hubhost-bench-verify-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/bundle.sqlite3"
        let privateKey = folder + "/key.pem"
        let publicKey = folder + "/pubkey.der"

        progress("writing a \(megabytes) MB file and a P-256 key")
        var generator = SplitMix(seed: 7)
        var bytes = [UInt8](repeating: 0, count: megabytes << 20)
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in words.indices { words[i] = generator.next() }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        bytes = []
        _ = try BenchTool.run(openssl, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", privateKey])
        _ = try BenchTool.run(openssl, ["pkey", "-in", privateKey, "-pubout", "-outform", "DER", "-out", publicKey])
        let data = try Data(contentsOf: URL(fileURLWithPath: file), options: .mappedIfSafe)
        let metadata = BundleMetadata.describing(
            data, version: "bench", created: "2026-01-01T00:00:00Z",
            signature: try BundleSignature.sign(data, privateKeyAt: privateKey))

        progress("verifying (hubhost) and hashing (openssl dgst -sha256), best of \(rounds)")
        var verifySeconds = Double.infinity
        var opensslSeconds = Double.infinity
        for _ in 0..<rounds {
            var start = Clock.monotonicNs()
            let mapped = try Data(contentsOf: URL(fileURLWithPath: file), options: .mappedIfSafe)
            try BundleVerifier.verify(mapped, metadata: metadata, publicKeyPath: publicKey)
            verifySeconds = min(verifySeconds, Double(Clock.monotonicNs() - start) / 1e9)
            start = Clock.monotonicNs()
            let printed = try BenchTool.run(openssl, ["dgst", "-sha256", file])
            opensslSeconds = min(opensslSeconds, Double(Clock.monotonicNs() - start) / 1e9)
            guard printed.contains(metadata.sha256) else { throw PageServingBenchmark.Failure.failed("openssl's digest differs: \(printed)") }
        }
        let verifyRate = Double(megabytes) / verifySeconds
        let opensslRate = Double(megabytes) / opensslSeconds
        return Result(
            megabytes: megabytes, rounds: rounds, verifyMBPerSecond: verifyRate, opensslMBPerSecond: opensslRate,
            ratio: verifyRate / opensslRate)
    }
}
