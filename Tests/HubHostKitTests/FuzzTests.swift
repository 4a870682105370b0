import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// Seeded fuzzing of the readers that take input from outside (issue 16): the manifest reader, the
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

/// (a) plugins.yaml and plugin.yaml, through HostManifest.load and PluginManifest.load: a manifest
/// or diagnostics, never a trap.
final class ManifestFuzz: FuzzTarget {
    let hostSeeds: [[UInt8]]
    let pluginSeeds: [[UInt8]]
    static let dictionary = [
        ": ", ":", "- ", "-", "{", "}", "[", "]", ", ", "\"", "'", "#", "&a ", "*a", "<<: *a", "!!binary ", "!!int ", "!!float ", "!!map ",
        "!!str ", "!!null ", "? ", "|", ">", "%YAML 1.2\n", "---\n", "...\n", "\t", "\n", "\n  ", "~", "null", "true", "no", "0x1F", "0o17",
        "1e300", "-1e300", ".inf", "-.inf", ".nan", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "18446744073709551616", "1_000", "0.0000001", "-0", "1e-400", "1 week 3 days", "200000 weeks", "inf", "nan", "1e300 sec",
        "99999999999999999999 ms", "\u{FEFF}", "\u{0}", "é", "\\u0000", "plugins:", "data_dir:", "events:", "server:", "hub:", "campaigns:",
        "deep_links:", "routes:", "config:", "use:", "id:", "exports:", "kind:", "type:", "default:", "isolation: process",
        "[[[[[[[[[[[[[[[[[[[[", "{a: {a: {a: {a: {a: {a: {a:", "port: 70000", "port: -1", "cache_size: -5", "memory_limit: 1e300",
        "regex: \"(\"", "abi: \"99.0\"", "library: /dev/null", "use: /", "use: ..", "enabled: maybe"
    ]

    override init(name: String, work: String) throws {
        hostSeeds = try Self.seeds("manifests", ending: ".yaml") { $0 != "plugin.yaml" }
        pluginSeeds = try Self.seeds("manifests", ending: ".yaml") { $0 == "plugin.yaml" }
        try super.init(name: name, work: work)
        // The seeds themselves are valid: the mutations start from real manifests.
        for (i, seed) in hostSeeds.enumerated() {
            XCTAssertTrue(FileManager.default.createFile(atPath: work + "/seed\(i).yaml", contents: Data(seed)))
            let manifest = try HostManifest.load(path: work + "/seed\(i).yaml")
            precondition(manifest.isValid, "fuzz seed \(i) is not a valid manifest: \(manifest.diagnostics)")
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: work + "/seed-plugin.yaml", contents: Data(pluginSeeds[0])))
        precondition(PluginManifest.load(path: work + "/seed-plugin.yaml").diagnostics.isEmpty, "the plugin.yaml seed is valid")
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        let plugin = index % 5 == 4
        let seeds = plugin ? pluginSeeds : hostSeeds
        var bytes = Mutator.mutate(random.pick(seeds), &random, dictionary: Self.dictionary, others: hostSeeds + pluginSeeds, most: 6)
        if random.chance(3) {
            // Deep nesting, in flow and block style.
            let depth = random.pick([100, 1000, 5000])
            bytes += Array(
                (random.chance(50)
                    ? "\nx: " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                    : "\n" + (0..<min(depth, 1000)).map { String(repeating: " ", count: $0) + "k\($0):" }.joined(separator: "\n")).utf8)
        }
        return Data((plugin ? "P" : "H").utf8) + Data(bytes)
    }

    override func check(_ input: Data, index: Int) -> String? {
        let plugin = input.first == UInt8(ascii: "P")
        let path = work + (plugin ? "/plugin.yaml" : "/plugins.yaml")
        FuzzTarget.write(input.dropFirst(), to: path)
        if plugin {
            let (manifest, diagnostics) = PluginManifest.load(path: path)
            if manifest == nil && diagnostics.isEmpty { return "PluginManifest.load returned neither a manifest nor a diagnostic" }
            return nil
        }
        do {
            let manifest = try HostManifest.load(path: path)
            _ = ResolvedManifest(manifest)
            for diagnostic in manifest.diagnostics where diagnostic.line < 0 || diagnostic.message.isEmpty {
                return "a diagnostic without a place or message: \(diagnostic)"
            }
        } catch let error as ManifestError {
            if error.diagnostics.isEmpty { return "ManifestError without diagnostics" }
        } catch {
            return "HostManifest.load threw \(type(of: error)), not ManifestError: \(error)"
        }
        return nil
    }
}

/// (b) Event JSON (`POST /v1/events`, `track --stdin`) through EventInput.parse, with values at
/// every numeric boundary, wrong types, deep nesting and huge keys. What it accepts must pass the
/// limits and be storable: every 5th accepted input is tracked into a real store.
final class EventFuzz: FuzzTarget {
    let seeds: [[UInt8]]
    var host: HubHost?
    var accepted = 0, tracked = 0

    static let numbers = [
        "0", "-0", "1", "-1", "0.5", "1.5", "-0.0", "1E5", "1e+300", "1e300", "-1e300", "1e308", "-1e308",
        "1.7976931348623157e308", "2e308", "-2e308", "4.9e-324", "1e-400", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
        "99999999999999999999999999999", "253402300799999", "253402300800000", "253402300799999.5", "9007199254740993",
        "1402358400000", "-1402358400000", "1e15", "2147483647", "2147483648", "-2147483649", "0.1e1", "1.0"
    ]
    static let strings = [
        "", "NaN", "nan", "Infinity", "-Infinity", "inf", "1e300", "-9223372036854775808", "9223372036854775808",
        "2014-06-10T00:00:00Z", "2014-06-10T00:00:00.000Z", "10000-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z",
        "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:60Z", "2014-13-45T99:99:99Z",
        "\\u0000", "\\ud800", "\\udfff\\ud800", "🎉", "e\\u0301", "é", "USD", "usd", "XXX", "$", "app_start", "17",
        "named_event", "purchase_successful", "time", "int", "double", "bool", "null", "string", "type", "value"
    ]
    static let fieldNames = [
        "type", "name", "timestamp", "attributes", "id", "purchase", "events", "value", "amount", "currency_code",
        "item_list", "number_of_items", "Typ", "", "Session Duration", "CurrentCampaign", "CampaignEndTimeStamp"
    ]
    static let types = [
        "named_event", "app_start", "login_successful", "purchase_successful", "custom", "installed", "session_started",
        "session_ended", "goal_abandoned", "goal_completed", "notification_received", "notification_opened",
        "12", "13", "14", "17", "48", "49", "0", "-1", "APP_START", "app_strat"
    ]

    override init(name: String, work: String) throws {
        seeds = try Self.seeds("events", ending: ".json")
        try super.init(name: name, work: work)
        for seed in seeds { _ = try EventInput.parse(Data(seed)) }  // the seeds are valid
        try TestSupport.write("data_dir: data\nevents: {cache_size: 100000}\nplugins: []\n", to: work + "/plugins.yaml")
        host = try HubHost(manifestPath: work + "/plugins.yaml")
    }

    override func finish() {
        host?.shutdown()
        print("fuzz events: \(accepted) inputs accepted, \(tracked) of them tracked into the store")
    }

    func value(_ random: inout FuzzRandom, depth: Int = 0) -> String {
        switch random.int(0...11) {
        case 0, 1: return random.pick(Self.numbers)
        case 2, 3: return "\"" + random.pick(Self.strings) + "\""
        case 4: return random.pick(["true", "false", "null", "[]", "{}"])
        case 5:
            return
                #"{"type": "\#(random.pick(["time", "int", "double", "bool", "string", "null", "list", ""]))", "value": \#(value(&random, depth: depth + 1))}"#
        case 6 where depth < 3: return "[" + (0..<random.int(0...3)).map { _ in value(&random, depth: depth + 1) }.joined(separator: ",") + "]"
        case 7 where depth < 3:
            return "{"
                + (0..<random.int(0...3)).map { _ in "\"\(random.pick(Self.fieldNames))\": \(value(&random, depth: depth + 1))" }.joined(
                    separator: ",") + "}"
        case 8:
            let depth = random.chance(95) ? random.pick([10, 100, 1000]) : random.pick([10_000, 100_000])
            return random.chance(50)
                ? String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                : String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        case 9:
            return "\""
                + String(
                    repeating: random.pick(["a", "é", "🎉", "\\\"", "\\u0000"]),
                    count: random.chance(95) ? random.pick([127, 128, 129, 1024, 1025]) : 70_000) + "\""
        default: return "\"" + random.pick(Self.strings) + "\""
        }
    }

    /// Boundary values that should be accepted: what a tame event is made of.
    static let tameNumbers = [
        "0", "-0", "1", "-1", "0.5", "1e300", "-1e300", "1.7976931348623157e308", "4.9e-324", "9223372036854775807",
        "-9223372036854775808", "9007199254740993", "253402300799999", "1402358400000", "1e15", "-0.0"
    ]
    static let tameTimestamps = [
        "0", "1", "253402300799999", "1402358400000", "253402300799999.0", "\"2014-06-10T00:00:00Z\"",
        "\"9999-12-31T23:59:59.999Z\"", "\"1970-01-01T00:00:00Z\"", "\"253402300799999\""
    ]

    func tameValue(_ random: inout FuzzRandom) -> String {
        switch random.int(0...6) {
        case 0: return random.pick(Self.tameNumbers)
        case 1: return "\"" + random.pick(Self.strings) + "\""
        case 2: return random.pick(["true", "false", "null"])
        case 3: return #"{"type": "time", "value": \#(random.pick(Self.tameTimestamps))}"#
        case 4: return #"{"type": "int", "value": \#(random.pick(["0", "-9223372036854775808", "9223372036854775807", "9007199254740993", "1e18"]))}"#
        case 5: return #"{"type": "double", "value": \#(random.pick(Self.tameNumbers))}"#
        default: return "\"" + String(repeating: random.pick(["a", "é", "🎉"]), count: random.int(0...300)) + "\""
        }
    }

    func event(_ random: inout FuzzRandom) -> String {
        var fields: [String] = []
        // Half the events are tame (boundary values that should pass), so that much is accepted and stored.
        let tame = random.chance(50)
        if random.chance(60) {
            fields.append(
                #""type": \#(random.chance(tame ? 100 : 80) ? "\"" + random.pick(Array(Self.types.prefix(tame ? 18 : 100))) + "\"" : value(&random))"#
            )
        }
        if random.chance(70) { fields.append(#""name": \#(random.chance(tame ? 100 : 80) ? "\"E\(random.int(0...9))\"" : value(&random))"#) }
        if random.chance(60) {
            fields.append(
                #""timestamp": \#(tame ? random.pick(Self.tameTimestamps) : random.chance(70) ? random.pick(Self.numbers) : value(&random))"#)
        }
        if random.chance(40) {
            let id =
                random.chance(tame ? 100 : 80)
                ? "\"fz-\(random.next())\""
                : (random.chance(50) ? "\"" + String(repeating: "i", count: random.pick([128, 129])) + "\"" : value(&random))
            fields.append(#""id": \#(id)"#)
        }
        if random.chance(70) {
            let count = random.chance(5) ? random.pick([999, 1000, 1001]) : random.int(0...8)
            var names = Set<String>()
            let attributes = (0..<count).compactMap { i -> String? in
                let name: String
                switch tame ? 9 : random.int(0...39) {
                case 0: name = ""
                case 1: name = String(repeating: "k", count: count > 100 ? 1025 : random.pick([1024, 1025, 100_000]))
                case 2: name = "Session Duration"
                case 3: name = "é\(i)"
                default: name = "a\(i)"
                }
                guard names.insert(name).inserted else { return nil }
                return "\"\(name)\": \(count > 100 ? random.pick(Self.numbers) : tame ? tameValue(&random) : value(&random))"
            }
            fields.append(#""attributes": {\#(attributes.joined(separator: ","))}"#)
        }
        if tame { return "{" + fields.joined(separator: ", ") + "}" }
        if random.chance(15) {
            fields.append(
                #""purchase": {"amount": \#(random.pick(Self.numbers)), "currency_code": \#(value(&random)), "item_list": \#(random.chance(50) ? #"["a","b"]"# : value(&random))\#(random.chance(40) ? #", "number_of_items": \#(random.pick(Self.numbers))"# : "")}"#
            )
        }
        if random.chance(5) { fields.append("\"\(random.pick(Self.fieldNames))\": \(value(&random))") }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        if index % 1000 == 3 {
            // The events-per-input limit (10,000 and one more) on a few fixed cases only: each takes a while.
            return Data(("[" + Array(repeating: #"{"name":"n"}"#, count: 10_000 + index / 1000 % 2).joined(separator: ",") + "]").utf8)
        }
        switch random.int(0...9) {
        case 0, 1, 2:
            return Data(
                Mutator.mutate(
                    random.pick(seeds), &random,
                    dictionary: Self.numbers + Self.strings.map { "\"\($0)\"" } + [",", ":", "[", "]", "{", "}", "\"", "\\"], others: seeds))
        case 3:
            let count = random.int(0...20)
            return Data((random.chance(50) ? "[" : #"{"events": ["#).utf8)
                + Data((0..<count).map { _ in count > 100 ? "{}" : event(&random) }.joined(separator: ",").utf8)
                + Data((random.chance(50) ? "]" : "]}").utf8)
        case 4: return Data(value(&random).utf8)
        default: return Data(event(&random).utf8)
        }
    }

    /// Every plain JSON number given as an attribute is stored as that number (an integer that no
    /// longer fits in 64 bits may become a double, but never another integer, e.g. negative).
    static func numbersKept(_ input: Data, _ events: [Event]) -> String? {
        guard let json = try? JSONSerialization.jsonObject(with: input, options: [.fragmentsAllowed]) else { return nil }
        let objects: [Any] = (json as? [Any]) ?? ((json as? [String: Any])?["events"] as? [Any]) ?? [json]
        for (object, event) in zip(objects, events) {
            guard let attributes = (object as? [String: Any])?["attributes"] as? [String: Any] else { continue }
            for (name, raw) in attributes {
                guard let number = raw as? NSNumber, String(cString: number.objCType) != "c",
                    let stored = event.attributes.first(where: { $0.name == name })?.value
                else { continue }
                let sent = number.doubleValue
                let kept: Double
                switch stored {
                case .int(let value): kept = Double(value)
                case .double(let value): kept = value
                default: return "attribute '\(name)': the number \(number) was stored as \(stored)"
                }
                if abs(kept - sent) > abs(sent) * 1e-9 + 1 { return "attribute '\(name)': the number \(number) was stored as \(stored)" }
            }
        }
        return nil
    }

    override func check(_ input: Data, index: Int) -> String? {
        let events: [Event]
        do { events = try EventInput.parse(input) } catch is EventInput.Problem { return nil } catch {
            return "EventInput.parse threw \(type(of: error)), not EventInput.Problem: \(error)"
        }
        accepted += 1
        if let problem = Self.numbersKept(input, events) { return problem }
        for (number, event) in events.enumerated() {
            do { try EventLimits.check(event) } catch { return "parse accepted an event the limits refuse: \(error)" }
            guard SafeTime.validMs.contains(event.timestampMs) else { return "parse accepted timestamp \(event.timestampMs)" }
            for attribute in event.attributes {
                switch attribute.value {
                case .double(let d) where !d.isFinite: return "parse accepted a non-finite double in '\(attribute.name)'"
                case .timeMs(let t) where !SafeTime.validMs.contains(t): return "parse accepted time \(t) in '\(attribute.name)'"
                default: break
                }
            }
            if number < 20, (try? JSONEncoder().encode(EventView(event))) == nil { return "the accepted event cannot be answered as JSON" }
        }
        if accepted % 3 == 0, let engine = try? host?.events() {
            do {
                _ = try engine.trackBatch(events)
                tracked += 1
            } catch is EventEngine.DuplicateEventID {
            } catch {
                return "parse accepted \(events.count) events that trackBatch refused: \(error)"
            }
        }
        return nil
    }
}

/// (c) Content bundles: a valid bundle, damaged at the byte level (`bundle-bytes`: bit flips, bytes,
/// truncation, zeroed or swapped pages) or at the SQL level (`bundle-rows`: a table rebuilt without
/// its constraints, holding a value of the wrong type), opened with ContentBundle and read through
/// every accessor: an OpenError or a bundle, never a trap.
final class BundleFuzz: FuzzTarget {
    let base: [UInt8]
    static let pageSize = 4096

    override init(name: String, work: String) throws {
        let path = work + "/base.sqlite3"
        try TestBundle.write(
            to: path, version: "fuzz-1",
            hubs: [
                .init(
                    "news", tags: ["news", "daily"],
                    channels: [
                        .init(
                            "sports", tags: ["sport"],
                            articles: [
                                .init("final", tags: ["football"], sourceURL: "https://example.com/final"),
                                .init("derby", tags: [])
                            ]),
                        .init("tech", articles: [.init("chips", tags: ["hw"], body: "<p>chips</p>")])
                    ]),
                .init("cooking", channels: [.init("soup", articles: [.init("onion", tags: ["veg"])])])
            ],
            resources: [
                (path: "resources/site.css", mimeType: "text/css", data: Data("body{}".utf8)),
                (path: "resources/dot.svg", mimeType: "image/svg+xml", data: Data("<svg/>".utf8))
            ],
            notifications: [.init(id: "n1", fireAtMs: 1_402_358_400_000, message: "hello", actionURI: "zbimdb://article/news/sports/final")])
        base = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        try super.init(name: name, work: work)
        _ = try ContentBundle(path: path)  // the base is a bundle
    }

    static let wrongValues = [
        "NULL", "'x'", "X'FF00FE'", "1e300", "-1e300", "9223372036854775807", "-9223372036854775808", "0.5", "''",
        "'[1, 2]'", "'{}'", "'[\"a\", null]'", "'not json'", "zeroblob(10)", "'\u{FFFD}'"
    ]
    static let columns: [(table: String, columns: [String])] = [
        ("metadata", ["key", "value"]), ("hubs", ["id", "title", "tags", "position"]),
        ("channels", ["id", "hub_id", "title", "tags", "position"]),
        ("articles", ["id", "channel_id", "title", "tags", "position", "body_html", "source_url"]),
        ("resources", ["path", "mime_type", "data"]), ("notifications", ["id", "fire_at_ms", "message", "action_uri"])
    ]

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        if name == "bundle-rows" {
            // SQL-level: "S" + the statements to run on a copy of the base.
            let table = random.pick(Self.columns)
            var sql = [
                "PRAGMA foreign_keys = OFF", "CREATE TABLE t AS SELECT * FROM \(table.table)", "DROP TABLE \(table.table)",
                "ALTER TABLE t RENAME TO \(table.table)"
            ]
            for _ in 0..<random.int(1...2) {
                sql.append(
                    "UPDATE \(table.table) SET \(random.pick(table.columns)) = \(random.pick(Self.wrongValues))"
                        + (random.chance(50) ? " WHERE rowid = (SELECT min(rowid) FROM \(table.table))" : ""))
            }
            return Data(("S" + sql.joined(separator: ";\n")).utf8)
        }
        var bytes = base
        for _ in 0..<random.int(1...3) {
            let pages = bytes.count / Self.pageSize  // per mutation: an earlier one may have cut the file
            switch random.int(0...9) {
            case 0: bytes = Array(bytes.prefix(random.int(0...bytes.count)))
            case 1 where pages > 1:
                let page = random.int(1...(pages - 1)) * Self.pageSize
                for i in page..<min(bytes.count, page + Self.pageSize) { bytes[i] = 0 }
            case 2 where pages > 2:
                let a = random.int(1...(pages - 1)) * Self.pageSize
                let b = random.int(1...(pages - 1)) * Self.pageSize
                guard b + Self.pageSize <= bytes.count, a + Self.pageSize <= bytes.count else { continue }
                let pageA = Array(bytes[a..<a + Self.pageSize])
                bytes.replaceSubrange(a..<a + Self.pageSize, with: bytes[b..<b + Self.pageSize])
                bytes.replaceSubrange(b..<b + Self.pageSize, with: pageA)
            case 3, 4:
                // A page header or cell pointer (the first bytes of a page), or the file header.
                let page = random.int(0...max(0, pages - 1)) * Self.pageSize + (random.chance(20) ? 0 : 100)
                let offset = min(bytes.count - 1, page + random.int(0...23))
                if offset >= 0 {
                    bytes[offset] = random.chance(50) ? random.pick(Mutator.interestingBytes) : UInt8(truncatingIfNeeded: random.next())
                }
            default:
                guard !bytes.isEmpty else { continue }
                for _ in 0..<random.int(1...8) {
                    let offset = random.int(0...(bytes.count - 1))
                    bytes[offset] ^= UInt8(1) << UInt8(random.int(0...7))
                }
            }
        }
        return Data("B".utf8) + Data(bytes)
    }

    override func check(_ input: Data, index: Int) -> String? {
        let path = work + "/case.sqlite3"
        try? FileManager.default.removeItem(atPath: path)
        if input.first == UInt8(ascii: "S") {
            FuzzTarget.write(Data(base), to: path)
            do {
                let queue = try DatabaseQueue(path: path)
                try queue.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY")  // a scratch file: no syncs
                    try db.execute(sql: String(decoding: input.dropFirst(), as: UTF8.self))
                }
                try queue.close()
            } catch {
                return "the SQL-level damage could not be written: \(error)"
            }
        } else {
            FuzzTarget.write(input.dropFirst(), to: path)
        }
        let bundle: ContentBundle
        do { bundle = try ContentBundle(path: path) } catch is ContentBundle.OpenError { return nil } catch {
            return "ContentBundle threw \(type(of: error)), not OpenError: \(error)"
        }
        // Opened: every accessor answers (or says nil) without trapping.
        for hub in bundle.hubs {
            _ = bundle.hub(hub.id)
            for channel in hub.channels {
                _ = bundle.channel(channel.id)
                for article in channel.articles {
                    _ = bundle.article(article.id)
                    _ = bundle.body(ofArticle: article.id)
                    if let url = article.sourceURL { _ = bundle.article(sourceURL: url) }
                }
            }
        }
        _ = bundle.article(sourceURL: "https://example.com/final")
        for resource in bundle.resourcePaths() { _ = bundle.resource(resource) }
        _ = bundle.resource("resources/site.css")
        _ = bundle.notifications.map(\.fireAtMs)
        return nil
    }
}

/// (d) The Markdown renderer with hostile input: long runs of `*`, `_`, `[`, backticks, deep
/// quote and list nesting, mutated articles. It finishes, and its output holds only the tags it
/// documents (so never a raw `<script`), with only its own attributes.
final class MarkdownFuzz: FuzzTarget {
    let seeds: [[UInt8]]
    static let tokens = [
        "*", "**", "***", "_", "__", "`", "``", "```", "~~~", "[", "]", "(", ")", "![", "](", "<", ">", "> ", "- ", "* ",
        "+ ", "1. ", "1) ", "    ", "\t", "\n", "\n\n", "#", "###### ", "---", "***\n", "\\", "  \n", "http://x.example",
        "<https://a.example>", "javascript:alert(1)", "JaVaScRiPt:", "data:text/html,", "vbscript:", "<script>",
        "</script>", "<SCRIPT", "<scr<script>ipt>", "\"", "'", "&", "&lt;", "a", "word ", "é", "\u{0}", "\r", "\u{2028}",
        " \"title\"", "onerror=", "<img src=x onerror=alert(1)>", "<!--", "-->", "<![CDATA["
    ]
    /// The tags a Markdown article may produce: CommonMark's, and GitHub's tables, strikethrough and
    /// task-list checkboxes.
    static let allowedTags: Set<String> = [
        "h1", "h2", "h3", "h4", "h5", "h6", "p", "em", "strong", "code", "pre", "a", "img", "ul", "ol",
        "li", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "del", "input"
    ]
    static let allowedAttributes: Set<String> = ["href", "src", "alt", "title", "class", "start", "align", "type", "checked", "disabled"]

    override init(name: String, work: String) throws {
        seeds = try Self.seeds("markdown", ending: ".md")
        try super.init(name: name, work: work)
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        switch random.int(0...9) {
        case 0, 1, 2:
            return Data(Mutator.mutate(random.pick(seeds), &random, dictionary: Self.tokens, others: seeds, most: 8))
        case 3:
            // A long run of one token (or two alternating), possibly inside text.
            let run = random.chance(90) ? random.pick([100, 1000, 5000]) : 30_000
            let token = random.pick([
                "*", "_", "[", "`", "![", "](", "<", "\\", "[x](", "**a", "*a", "> ", "- ", "    - ", "1. ", "#", "(", "&", "|", "~"
            ])
            let other = random.chance(30) ? random.pick(Self.tokens) : ""
            return Data(("x " + String(repeating: token + other, count: run / max(1, token.count)) + " y").utf8)
        case 4:
            // Deep nesting: quotes, lists by indentation, brackets, emphasis.
            let depth = random.chance(90) ? random.pick([50, 500, 2000]) : 20_000
            let lines = min(depth, 400)
            switch random.int(0...4) {
            case 0: return Data((String(repeating: "> ", count: depth) + "deep").utf8)
            case 1: return Data((0..<lines).map { String(repeating: " ", count: 2 * $0) + "- item \($0)" }.joined(separator: "\n").utf8)
            case 2: return Data((String(repeating: "[", count: depth) + "x" + String(repeating: "](u)", count: depth)).utf8)
            case 3: return Data((String(repeating: "*", count: depth) + "x" + String(repeating: "*", count: depth)).utf8)
            default:
                return Data(
                    (0..<lines).map { String(repeating: "> ", count: $0 % 50) + String(repeating: "  ", count: $0 % 30) + "1. x" }.joined(
                        separator: "\n"
                    ).utf8)
            }
        default:
            return Data((0..<random.int(1...200)).map { _ in random.pick(Self.tokens) }.joined().utf8)
        }
    }

    override func check(_ input: Data, index: Int) -> String? {
        let html = MarkdownRenderer.render(String(decoding: input, as: UTF8.self))
        return Self.unsafeMarkup(in: html)
    }

    /// What in `html` a Markdown article must not produce, or nil: every `<` opens one of the
    /// allowed tags with only allowed attributes, each quoted, and no URL that can run script.
    static func unsafeMarkup(in html: String) -> String? {
        let bytes = Array(html.utf8)
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range.clamped(to: 0..<bytes.count)], as: UTF8.self) }
        var i = 0
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "<") else {
                i += 1
                continue
            }
            guard let close = bytes[i...].firstIndex(of: UInt8(ascii: ">")) else { return "an unclosed '<' in the output: \(text(i..<i + 200))" }
            let tag = text(i + 1..<close)
            defer { i = close + 1 }
            if tag == "!-- raw HTML omitted --" { continue }  // cmark's safe mode leaves this comment where raw HTML was
            let body = tag.hasPrefix("/") ? tag.dropFirst() : Substring(tag)
            let name = body.prefix { $0.isLetter || $0.isNumber }.lowercased()
            guard allowedTags.contains(name) else { return "the output has a <\(tag.prefix(300))> tag" }
            if name == "input", !tag.contains(#"type="checkbox""#) { return "the output has an input that is not a checkbox: <\(tag.prefix(200))>" }
            // Attributes: name="value" pairs (a value holds no raw quote: it is escaped).
            var attributes = body.dropFirst(name.count)
            while let equals = attributes.firstIndex(of: "=") {
                let attribute = attributes[..<equals].trimmingCharacters(in: .whitespaces)
                guard allowedAttributes.contains(attribute) else { return "the output has attribute '\(attribute)' in <\(tag.prefix(200))>" }
                let value = attributes[attributes.index(after: equals)...]
                guard value.first == "\"", let end = value.dropFirst().firstIndex(of: "\"") else {
                    return "an unquoted attribute in <\(tag.prefix(200))>"
                }
                if attribute == "href" || attribute == "src" {
                    let url = browserScheme(String(value[value.index(after: value.startIndex)..<end]))
                    if url.hasPrefix("javascript:") || url.hasPrefix("vbscript:")
                        || (url.hasPrefix("data:") && !(attribute == "src" && url.hasPrefix("data:image/")))
                    {
                        return "the output has a script URL in <\(tag.prefix(300))>"
                    }
                }
                attributes = attributes[attributes.index(after: end)...]
            }
        }
        if html.range(of: "<script", options: .caseInsensitive) != nil { return "the output has a raw <script" }
        return nil
    }

    /// An attribute's URL as a browser reads its scheme: character references decoded, tabs and
    /// line breaks removed, leading controls and spaces dropped, lowercased.
    static func browserScheme(_ attribute: String) -> String {
        var decoded = ""
        var rest = Substring(attribute)
        while let amp = rest.firstIndex(of: "&") {
            decoded += rest[..<amp]
            let after = rest[rest.index(after: amp)...]
            guard let semicolon = after.prefix(12).firstIndex(of: ";") else {
                decoded += "&"
                rest = after
                continue
            }
            let entity = after[..<semicolon]
            let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "Tab": "\t", "NewLine": "\n", "colon": ":"]
            if let text = named[String(entity)] {
                decoded += text
            } else if entity.hasPrefix("#x") || entity.hasPrefix("#X"), let code = UInt32(entity.dropFirst(2), radix: 16),
                let scalar = Unicode.Scalar(code)
            {
                decoded.unicodeScalars.append(scalar)
            } else if entity.hasPrefix("#"), let code = UInt32(entity.dropFirst()), let scalar = Unicode.Scalar(code) {
                decoded.unicodeScalars.append(scalar)
            } else {
                decoded += "&" + entity + ";"
            }
            rest = after[after.index(after: semicolon)...]
        }
        decoded += rest
        let scalars = decoded.unicodeScalars.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" }.drop { $0.value <= 0x20 }
        return String(String.UnicodeScalarView(scalars)).lowercased()
    }
}

/// (e) MATCHES_REGEX and DOES_NOT_MATCH_REGEX of the StandardOperators plugin through
/// PluginHarness, with random patterns and subjects: no trap, no hang (the plugin's step budget),
/// and never "true" from both.
final class RegexFuzz: FuzzTarget {
    let harness: PluginHarness
    let matches: TriggerOperatorPlugin
    let doesNotMatch: TriggerOperatorPlugin
    static let tokens = [
        "a", "b", "ab", "é", "🎉", ".", "*", "+", "?", "*?", "+?", "??", "*+", "++", "{2}", "{2,5}", "{0,}", "{1000}",
        "{0,1000}", "{1001}", "{99999999999}", "{2,1}", "{", "}", "(", ")", "(?:", "(?i)", "(?m)", "(?s)", "(?x)", "(?-i)",
        "(?i:", "(?<n>", "(?<n>a)\\k<n>", "(?=", "(?!", "(?<=", "(?<!", "(?>", "[", "]", "[^", "[a-z]", "[z-a]", "[[:alpha:]]",
        "[\\w-]", "[a&&b]", "-", "\\", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "\\A", "\\z", "\\Z", "\\R",
        "\\1", "\\9", "\\p{L}", "\\P{Lu}", "\\x{41}", "\\x{110000}", "\\x41", "\\u0041", "\\uD800", "\\N{LATIN SMALL LETTER A}",
        "\\Q", "\\E", "\\Qa.b\\E", "\\n", "\\t", "\\0", "\\cA", "\\e", "|", "||", "^", "$", "\\$", "\\.", "\u{0}", "\n",
        "#", " ", "\\G", "\\X", "(a|aa)*", "(a*)*", "((a+)+)+", "(a{1000}){1000}", "((a{100}){100}){100}"
    ]
    static let subjectPieces = [
        "a", "aa", "b", "ab", "é", "e\u{301}", "🎉", "\n", "\r\n", " ", "A", "1", "_", "-", ".", "]", "ß", "ẞ", "σ", "ς", "\u{0}"
    ]
    var compared = 0, differential = 0, icuValid = 0, unsupported = 0
    var mismatches: [String] = []

    override init(name: String, work: String) throws {
        harness = try PluginHarness(manifest: TestSupport.plugin("StandardOperators"), config: ["regex_step_budget": .int(200_000)])
        matches = TriggerOperatorPlugin(harness.plugin("matches-regex", kind: .triggerOperator)!)
        doesNotMatch = TriggerOperatorPlugin(harness.plugin("does-not-match-regex", kind: .triggerOperator)!)
        try super.init(name: name, work: work)
    }

    override func finish() {
        harness.destroy()
        print(
            "fuzz regex: \(compared) comparisons, \(unsupported) refused as unsupported or over the budget, \(differential) checked against NSRegularExpression (\(icuValid) patterns it accepts), \(mismatches.count) disagreements"
        )
        for mismatch in mismatches.prefix(30) { print("fuzz regex disagreement: \(mismatch)") }
    }

    /// A pattern ICU accepts (mostly): atoms, classes, groups and quantifiers, nested.
    func wellFormed(_ random: inout FuzzRandom, depth: Int = 0) -> String {
        var pattern = ""
        for _ in 0..<random.int(1...4) {
            var atom: String
            switch random.int(0...9) {
            case 0, 1, 2: atom = random.pick(["a", "b", "é", "ß", "σ", "🎉", "\\.", "-", "_", " ", "1", "A"])
            case 3:
                atom = random.pick([
                    ".", "\\d", "\\w", "\\s", "\\W", "\\S", "\\D", "[ab]", "[^a]", "[a-cé]", "[\\w-]", "[.]", "\\x{E9}", "\\u00DF", "\\n", "\\R"
                ])
            case 4: atom = random.pick(["^", "$", "\\b", "\\B", "\\A", "\\z", "\\Z"])
            case 5 where depth < 3: atom = "(" + wellFormed(&random, depth: depth + 1) + ")"
            case 6 where depth < 3: atom = "(?:" + wellFormed(&random, depth: depth + 1) + "|" + wellFormed(&random, depth: depth + 1) + ")"
            case 7 where depth < 3:
                atom = random.pick(["(?i)", "(?i:", "(?s:", "(?m:", "(?<g>"]) + wellFormed(&random, depth: depth + 1) + (random.chance(20) ? "" : ")")
            default: atom = random.pick(["a", "b", "ab"])
            }
            if atom.hasPrefix("(?i)") || atom.hasPrefix("(?") && !atom.hasSuffix(")") { atom += ")" }
            if random.chance(40), !["^", "$", "\\b", "\\B", "\\A", "\\z", "\\Z"].contains(atom) {
                atom += random.pick(["*", "+", "?", "*?", "+?", "{2}", "{0,3}", "{1,}", "{3,5}?"])
            }
            pattern += atom
        }
        return random.chance(10) ? pattern + "|" + wellFormed(&random, depth: depth + 1) : pattern
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        let pattern = random.chance(50) ? wellFormed(&random) : (0..<random.int(1...12)).map { _ in random.pick(Self.tokens) }.joined()
        let length = random.chance(5) ? random.pick([1000, 10_000]) : random.int(0...16)
        let subject = (0..<length).map { _ in random.pick(Self.subjectPieces) }.joined()
        return try! JSONSerialization.data(withJSONObject: [pattern, subject])
    }

    override func check(_ input: Data, index: Int) -> String? {
        guard let pair = try? JSONSerialization.jsonObject(with: input) as? [String], pair.count == 2 else { return "bad case" }
        let (pattern, subject) = (pair[0], pair[1])
        let yes = matches.compare(event: .string(subject), trigger: .string(pattern))
        let no = doesNotMatch.compare(event: .string(subject), trigger: .string(pattern))
        compared += 1
        if yes.result && no.result { return "both MATCHES_REGEX and DOES_NOT_MATCH_REGEX are true for /\(pattern)/ on \(subject.debugDescription)" }
        if yes.status != 0 || no.status != 0 {
            unsupported += 1
            if yes.result || no.result {
                return "a refused pattern answered true: /\(pattern)/ (\(yes.status) \(yes.reason); \(no.status) \(no.reason))"
            }
            return nil
        }
        // Both answered: they are each other's negation, and agree with ICU on short subjects.
        if yes.result == no.result {
            return "MATCHES_REGEX and DOES_NOT_MATCH_REGEX both \(yes.result) for /\(pattern)/ on \(subject.debugDescription)"
        }
        if subject.count <= 16, pattern.count <= 60 {
            differential += 1
            let compiled = try? NSRegularExpression(pattern: pattern)
            if compiled != nil { icuValid += 1 }
            let icu = compiled.map { $0.firstMatch(in: subject, range: NSRange(subject.startIndex..., in: subject)) != nil } ?? false
            if icu != yes.result {
                mismatches.append("/\(pattern)/ on \(subject.debugDescription): hubhost \(yes.result), NSRegularExpression \(icu)")
            }
        }
        return nil
    }
}

/// (d, the public build path) A content folder (Tests/Fixtures/content) with one of its text files
/// mutated: front matter, `_index.yaml`, `bundle.yaml`, `notifications.yaml`, Markdown and HTML
/// articles, through BundleBuilder.build. It builds or throws, never traps; a bundle it builds
/// opens, and no article page holds a script, an event-handler attribute or a script URL (Markdown
/// goes through the renderer, HTML through the sanitizer).
final class ContentFolderFuzz: FuzzTarget {
    let folder: String
    let files: [(path: String, bytes: [UInt8])]
    var built = 0, refused = 0
    static let dictionary = [
        "---\n", "\n---\n", "title: ", "tags: [", "]", "order: ", "1e300", "-9223372036854775808", "9223372036854775808",
        "source_url: ", "javascript:alert(1)", "at: ", "\"10000-01-01T00:00:00Z\"", "\"-1\"", "action_uri: ", "version: ",
        "content_source: ", "id: ", "- ", ": ", "{", "}", "[", "&a ", "*a", "!!binary ", "~", "null", "\t", "\u{FEFF}",
        "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<a href=\"javascript:alert(1)\">x</a>",
        "<svg onload=alert(1)>", "<iframe src=//evil.example>", "<style>", "<!--", "-->", "<![CDATA[", "<scr<script>ipt>",
        "<a href=\"jav&#x09;ascript:alert(1)\">", "<form action=javascript:x>", "<object data=x>", "<base href=//evil>",
        "<meta http-equiv=refresh content=0;url=javascript:x>", "[x](javascript:alert(1))", "![i](vbscript:x)", "**", "`", "```"
    ]

    override init(name: String, work: String) throws {
        folder = work + "/content"
        let source = TestSupport.repository + "/Tests/Fixtures/content"
        try FileManager.default.copyItem(atPath: source, toPath: folder)
        let enumerator = FileManager.default.enumerator(atPath: folder)
        var files: [(String, [UInt8])] = []
        while let path = enumerator?.nextObject() as? String {
            guard [".md", ".yaml", ".html"].contains(where: path.hasSuffix) else { continue }
            files.append((path, Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + path)))))
        }
        self.files = files.sorted { $0.0 < $1.0 }
        try super.init(name: name, work: work)
        _ = try BundleBuilder.build(from: folder, to: work + "/base.sqlite3")  // the fixture builds
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        let file = random.int(0...(files.count - 1))
        let bytes = Mutator.mutate(files[file].bytes, &random, dictionary: Self.dictionary, others: files.map(\.bytes), most: 5)
        return Data("\(file)\n".utf8) + Data(bytes)
    }

    override func check(_ input: Data, index: Int) -> String? {
        guard let newline = input.firstIndex(of: 0x0A), let file = Int(String(decoding: input[..<newline], as: UTF8.self)) else { return "bad case" }
        let path = folder + "/" + files[file].path
        FuzzTarget.write(input[(newline + 1)...], to: path)
        defer { FuzzTarget.write(Data(files[file].bytes), to: path) }
        let output = work + "/case.sqlite3"
        try? FileManager.default.removeItem(atPath: output)
        do { _ = try BundleBuilder.build(from: folder, to: output) } catch {
            refused += 1
            return nil
        }
        built += 1
        let bundle: ContentBundle
        do { bundle = try ContentBundle(path: output) } catch { return "a bundle BundleBuilder built does not open: \(error)" }
        for hub in bundle.hubs {
            for channel in hub.channels {
                for article in channel.articles {
                    guard let body = bundle.body(ofArticle: article.id) else { return "article \(article.id) has no body" }
                    if let problem = Self.scriptIn(body) { return "article \(article.id) (\(files[file].path) mutated): \(problem)" }
                }
            }
        }
        return nil
    }

    override func finish() {
        print("fuzz content-folder: \(built) built, \(refused) refused with a reason")
        // The check itself finds what it looks for.
        for page in ["<p onclick=\"x\">", "<a href=\"jav&#x09;ascript:x\">", "<SCRIPT>", "<img src='javascript:x'>"] {
            precondition(Self.scriptIn(page) != nil, "scriptIn misses \(page)")
        }
        precondition(Self.scriptIn("<p class=\"lead\">online</p><a href=\"https://x/on=1\">") == nil)
    }

    /// A script element, an event-handler attribute or a script URL in a page's HTML, or nil.
    static func scriptIn(_ html: String) -> String? {
        let lowered = html.lowercased()
        if lowered.contains("<script") { return "a <script> element: \(html.prefix(600))" }
        var rest = Substring(lowered)
        while let open = rest.firstIndex(of: "<") {
            let afterOpen = rest[rest.index(after: open)...]
            let close = afterOpen.firstIndex(of: ">") ?? afterOpen.endIndex
            let tag = afterOpen[..<close]
            // Attribute names: a space, then letters, then '='.
            var scan = tag
            while let space = scan.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "/" }) {
                let attribute = scan[scan.index(after: space)...].prefix { $0.isLetter || $0 == "-" }
                if attribute.hasPrefix("on"), attribute.count > 2 { return "an event handler in <\(tag.prefix(300))>" }
                if ["href", "src", "action", "formaction", "data", "xlink:href"].contains(String(attribute)) {
                    var value = scan[scan.index(after: space)...].dropFirst(attribute.count).drop { $0 == " " }
                    if value.first == "=" {
                        value = value.dropFirst().drop { $0 == " " }
                        let quote = value.first == "\"" || value.first == "'" ? value.first : nil
                        let raw = quote.map { q in value.dropFirst().prefix { $0 != q } } ?? value.prefix { $0 != " " }
                        let scheme = MarkdownFuzz.browserScheme(String(raw))
                        if scheme.hasPrefix("javascript:") || scheme.hasPrefix("vbscript:") || scheme.hasPrefix("data:text") {
                            return "a script URL in <\(tag.prefix(300))>"
                        }
                    }
                }
                scan = scan[scan.index(after: space)...]
            }
            rest = close == afterOpen.endIndex ? "" : afterOpen[afterOpen.index(after: close)...]
        }
        return nil
    }
}
