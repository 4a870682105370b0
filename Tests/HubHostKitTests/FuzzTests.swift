import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// Seeded fuzzing of the readers that take input from outside: the manifest reader, the
/// event JSON reader, the content bundle reader, the Markdown renderer and the regex operators.
/// Every case comes from a fixed seed and its index (SplitMix64), so every run sends the same
/// inputs and a failing case is reproduced by its target and index alone. Seeds: Tests/Fixtures/fuzz.
///
/// Each target runs in a child process (this test binary, re-run on FuzzChildProcess with the
/// target named in its environment), so a trap or a hang fails the target's test with the case
/// that caused it, the input and the child's stack, instead of ending the whole suite. The child
/// writes each case's index to a file before running it; when the child dies, the parent makes
/// that case's input again and keeps it in a file for the report.
final class FuzzTests: XCTestCase {
    // Cases per target: a few seconds each in a debug build.
    func testManifestReaderNeverTraps() throws { try FuzzParent.run("manifest", cases: 2000, test: self) }
    func testEventJSONReaderNeverTrapsAndOnlyAcceptsStorableEvents() throws { try FuzzParent.run("events", cases: 3000, test: self) }
    func testBundleReaderNeverTrapsOnDamagedFiles() throws { try FuzzParent.run("bundle-bytes", cases: 1500, test: self) }
    func testBundleReaderNeverTrapsOnRowsOfTheWrongType() throws { try FuzzParent.run("bundle-rows", cases: 300, test: self) }
    func testMarkdownRendererFinishesAndOnlyWritesItsOwnTags() throws { try FuzzParent.run("markdown", cases: 2500, test: self) }
    func testRegexOperatorsNeverTrapHangOrContradict() throws { try FuzzParent.run("regex", cases: 3000, test: self) }
    func testContentFolderBuildNeverTrapsAndItsPagesHoldNoScript() throws { try FuzzParent.run("content-folder", cases: 400, test: self) }
}

/// The child side: does nothing in a normal run; runs one target when HUBHOST_FUZZ_TARGET is set.
final class FuzzChildProcess: XCTestCase {
    func testRunTheFuzzTargetNamedInTheEnvironment() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let name = environment["HUBHOST_FUZZ_TARGET"], let work = environment["HUBHOST_FUZZ_WORK"],
            let count = environment["HUBHOST_FUZZ_CASES"].flatMap(Int.init)
        else { return }
        let first = environment["HUBHOST_FUZZ_FIRST"].flatMap(Int.init) ?? 0
        let target = try FuzzTarget.make(name, work: work)
        // The index file stays open: one pwrite per case (opening a file per case costs milliseconds here).
        let indexFile = open(work + "/current.index", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(indexFile) }
        // HUBHOST_FUZZ_TIMING=1 prints every case over 20 ms and the totals (to keep targets fast).
        let timing = environment["HUBHOST_FUZZ_TIMING"] != nil
        var slowest = (seconds: 0.0, index: -1)
        var totals = (making: 0.0, checking: 0.0)
        for index in first..<(first + count) {
            let made = Date()
            let input = target.input(index)
            let making = Date().timeIntervalSince(made)
            // The case's index is on disk before it runs: a trap leaves it behind, and the parent
            // makes the same input again from it. Fixed width: no truncation needed.
            let line = Array(String(format: "%12d\n", index).utf8)
            _ = line.withUnsafeBytes { pwrite(indexFile, $0.baseAddress, $0.count, 0) }
            let start = Date()
            if let failure = target.check(input, index: index) {
                XCTFail("\(name) case \(index): \(failure)\ninput: \(FuzzParent.preview(input))")
            }
            let seconds = Date().timeIntervalSince(start)
            totals.making += making
            totals.checking += seconds
            if seconds > slowest.seconds { slowest = (seconds, index) }
            if timing, seconds + making > 0.02 {
                print(
                    String(format: "fuzz timing: case %d took %.3f s (making it %.3f s), %d bytes ", index, seconds, making, input.count)
                        + FuzzParent.preview(input.prefix(80)))
            }
        }
        target.finish()
        if timing { print(String(format: "fuzz totals: making inputs %.1f s, checking them %.1f s", totals.making, totals.checking)) }
        print("fuzz \(name): \(count) cases; slowest case \(slowest.index) took \(String(format: "%.3f", slowest.seconds)) s")
    }
}

// MARK: - Parent

enum FuzzParent {
    /// Runs `cases` cases of `target` in a child process; fails `test` with the case, input and
    /// stack when the child traps, and with the case when it has not finished in `bound` seconds.
    static func run(
        _ target: String, cases: Int, first: Int = 0, bound: TimeInterval = 240, test: XCTestCase,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let work = try TestSupport.temporaryFolder(test)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LibraryLocator.runningExecutablePath())
        process.arguments = ["HubHostKitTests.FuzzChildProcess/testRunTheFuzzTargetNamedInTheEnvironment"]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "HUBHOST_FUZZ_TARGET": target, "HUBHOST_FUZZ_WORK": work, "HUBHOST_FUZZ_CASES": "\(cases)", "HUBHOST_FUZZ_FIRST": "\(first)"
        ]) { _, new in new }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let start = Date()
        try process.run()
        final class Collected: @unchecked Sendable { var out = Data(), err = Data() }
        let collected = Collected()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            collected.out = out.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        group.enter()
        DispatchQueue.global().async {
            collected.err = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let hung = group.wait(timeout: .now() + bound) == .timedOut
        if hung { kill(process.processIdentifier, SIGKILL) }
        group.wait()
        process.waitUntilExit()
        let output = String(decoding: collected.out, as: UTF8.self)
        let errors = String(decoding: collected.err, as: UTF8.self)
        let index = (try? String(contentsOfFile: work + "/current.index", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        // The input of the last case, made again from its index (the generators are deterministic).
        let input =
            Int(index).flatMap { index in
                (try? TestSupport.temporaryFolder(test)).flatMap { folder in try? FuzzTarget.make(target, work: folder).input(index) }
            } ?? Data()
        if let summary = output.split(separator: "\n").last(where: { $0.hasPrefix("fuzz \(target):") }) {
            print("\(summary) (\(String(format: "%.1f", Date().timeIntervalSince(start))) s with the child's start)")
        }
        if hung || process.terminationReason == .uncaughtSignal {
            // Keep the input for the report: the temporary folder goes with the test.
            let kept = NSTemporaryDirectory() + "hubhost-fuzz-\(target)-case-\(index).input"
            try? input.write(to: URL(fileURLWithPath: kept))
            let what = hung ? "did not finish within \(Int(bound)) s (a hang)" : "trapped (signal \(process.terminationStatus))"
            XCTFail(
                """
                fuzz target '\(target)' \(what) on case \(index); input kept in \(kept)
                input: \(preview(input))
                the child's error and stack (hubhost frames):
                \(stack(errors))
                """, file: file, line: line)
        } else if process.terminationStatus != 0 {
            // The child's failures: its error lines, each followed by the input line.
            let failures = output.split(separator: "\n").filter { $0.contains(": error: ") || $0.hasPrefix("input: ") }
            XCTFail("fuzz target '\(target)' found failures:\n\(failures.prefix(40).joined(separator: "\n").suffix(20_000))", file: file, line: line)
        }
    }

    /// From a crashed child's stderr: the error lines and the stack frames in hubhost's own code.
    static func stack(_ errors: String) -> String {
        let lines = errors.split(separator: "\n")
        let kept = lines.filter {
            $0.contains("Fatal error") || $0.contains("crashed") || $0.contains("error:")
                || ($0.contains(" at /") && ($0.contains("/Host/") || $0.contains("/Plugins/") || $0.contains("/Tests/")))
        }
        return (kept.isEmpty ? lines.suffix(40) : kept.prefix(40)).joined(separator: "\n")
    }

    /// The input as text for a failure message: printable, cut to 1500 characters.
    static func preview(_ data: Data) -> String {
        let text = String(decoding: data, as: UTF8.self)
        let cut = text.count > 1500 ? String(text.prefix(1500)) + "… (\(data.count) bytes)" : text
        return cut.debugDescription
    }
}

// MARK: - Randomness and mutation

/// SplitMix64: small, seedable, the same sequence on every platform.
struct FuzzRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    /// The generator of one case: the target's seed mixed with the case index.
    init(target: String, index: Int) {
        var seed: UInt64 = 0xF0_22ED
        for byte in target.utf8 { seed = (seed &* 31) &+ UInt64(byte) }
        self.init(seed: seed &* 0x100_0000_01B3 &+ UInt64(index))
        _ = next()
    }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func chance(_ percent: Int) -> Bool { int(1...100) <= percent }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }
}

enum Mutator {
    static let interestingBytes: [UInt8] = [
        0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE, 0xC0, 0xE2, 0xF0, 0x0A, 0x0D, 0x09, 0x20,
        0x22, 0x27, 0x5C, 0x3A, 0x2D, 0x5B, 0x5D, 0x7B, 0x7D, 0x23, 0x26, 0x2A, 0x21
    ]

    /// 1 to `most` byte-level mutations: bit flips, interesting bytes, deletions, duplications,
    /// dictionary tokens, splices from `others`, truncation.
    static func mutate(_ input: [UInt8], _ random: inout FuzzRandom, dictionary: [String], others: [[UInt8]] = [], most: Int = 4) -> [UInt8] {
        var bytes = input
        for _ in 0..<random.int(1...most) {
            let position = bytes.isEmpty ? 0 : random.int(0...(bytes.count - 1))
            switch random.int(0...8) {
            case 0 where !bytes.isEmpty: bytes[position] ^= UInt8(1) << UInt8(random.int(0...7))
            case 1 where !bytes.isEmpty: bytes[position] = random.pick(interestingBytes)
            case 2 where !bytes.isEmpty: bytes.removeSubrange(position..<min(bytes.count, position + random.int(1...32)))
            case 3 where !bytes.isEmpty:
                let slice = Array(bytes[position..<min(bytes.count, position + random.int(1...64))])
                bytes.insert(contentsOf: random.chance(20) ? Array(repeating: slice, count: random.int(2...200)).flatMap { $0 } : slice, at: position)
            case 4, 5: bytes.insert(contentsOf: Array(random.pick(dictionary).utf8), at: position)
            case 6 where !others.isEmpty:
                let other = random.pick(others)
                guard !other.isEmpty else { continue }
                let from = random.int(0...(other.count - 1))
                let piece = other[from..<min(other.count, from + random.int(1...200))]
                bytes.replaceSubrange(position..<min(bytes.count, position + random.int(0...100)), with: piece)
            case 7 where random.chance(30): bytes = Array(bytes.prefix(position))
            default:
                // A line-level change: delete, duplicate or move a line, or change its indentation.
                var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
                guard !lines.isEmpty else { continue }
                let line = random.int(0...(lines.count - 1))
                switch random.int(0...3) {
                case 0: lines.remove(at: line)
                case 1: lines.insert(lines[line], at: line)
                case 2: lines.swapAt(line, random.int(0...(lines.count - 1)))
                default:
                    lines[line] =
                        random.chance(50) ? Array(repeating: 0x20, count: random.int(1...8)) + lines[line] : Array(lines[line].drop { $0 == 0x20 })
                }
                bytes = Array(lines.joined(separator: [0x0A]))
            }
        }
        return bytes
    }
}

// MARK: - Targets

class FuzzTarget {
    let name: String
    let work: String
    init(name: String, work: String) throws {
        self.name = name
        self.work = work
    }

    static func make(_ name: String, work: String) throws -> FuzzTarget {
        switch name {
        case "manifest": return try ManifestFuzz(name: name, work: work)
        case "events": return try EventFuzz(name: name, work: work)
        case "bundle-bytes", "bundle-rows": return try BundleFuzz(name: name, work: work)
        case "markdown": return try MarkdownFuzz(name: name, work: work)
        case "regex": return try RegexFuzz(name: name, work: work)
        case "content-folder": return try ContentFolderFuzz(name: name, work: work)
        case "huge-words": return try HugeWords(name: name, work: work)  // FuzzFindingsTests
        default: throw NSError(domain: "fuzz", code: 1, userInfo: [NSLocalizedDescriptionKey: "no fuzz target \(name)"])
        }
    }

    static let corpus = TestSupport.repository + "/Tests/Fixtures/fuzz"

    /// The seed files of `folder` whose names end with `ending`, sorted by name; `${REPO}` replaced.
    static func seeds(_ folder: String, ending: String, where keep: (String) -> Bool = { _ in true }) throws -> [[UInt8]] {
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus + "/" + folder).filter { $0.hasSuffix(ending) && keep($0) }.sorted()
        return try names.map { name in
            Array(
                try String(contentsOfFile: corpus + "/\(folder)/\(name)", encoding: .utf8)
                    .replacingOccurrences(of: "${REPO}", with: TestSupport.repository).utf8)
        }
    }

    /// Writes `data` to `path` in place: no temporary file, no sync, and no O_TRUNC (ext4 flushes a
    /// file truncated to zero and written again when it is closed: milliseconds per case).
    static func write(_ data: Data, to path: String) {
        let fd = open(path, O_WRONLY | O_CREAT, 0o600)
        guard fd >= 0 else { return }
        defer {
            ftruncate(fd, off_t(data.count))
            close(fd)
        }
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }

    func input(_ index: Int) -> Data { fatalError("override") }
    /// Runs one case: nil when it behaved, else what went wrong (a trap ends the process instead).
    func check(_ input: Data, index: Int) -> String? { fatalError("override") }
    func finish() {}
}
