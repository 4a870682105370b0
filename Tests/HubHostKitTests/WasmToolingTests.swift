import Foundation
import HubHostTools
import PluginTestKit
import XCTest

/// The author's tools on WebAssembly builds: `hubhost plugins test` runs the conformance suite on a
/// `.wasm` plugin (each test in its own process) with the same tests and verdicts as on the `.so`
/// built from the same source, and PluginTestKit's harness drives a `.wasm` as it drives a `.so`.
final class WasmToolingTests: FolderTestCase {
    /// Builds Tests/Fixtures/`source` as a `.wasm` (with `defines`) beside a copy of the plugin.yaml
    /// at `nativeManifest` whose library is the `.wasm`: the same exports, config and test_config.
    private func wasmTwin(of nativeManifest: String, source: String, defines: [String] = [], name: String) throws -> String {
        let dir = "\(folder)/\(name)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let built = try TestSupport.run(
            "\(TestSupport.repository)/scripts/build-wasm-plugin",
            ["\(dir)/\(name).wasm", "\(TestSupport.repository)/Tests/Fixtures/\(source)", "--", "-Wall", "-Wextra", "-Werror", "-pedantic"]
                + defines.map { "-D" + $0 })
        XCTAssertEqual(built.status, 0, built.stderr)
        let yaml = try String(contentsOfFile: nativeManifest, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("library:") ? "library: \(name).wasm" : String($0) }.joined(separator: "\n")
        try TestSupport.write(yaml, to: dir + "/plugin.yaml")
        return dir + "/plugin.yaml"
    }

    /// `plugins test --json` with a call budget of 20 s: the tests run a debug build, whose
    /// WasmKit interprets many times slower than a release build, two at a time on 2 cores; a
    /// budget overrun here would be the build's speed, not the plugin's.
    private func pluginsTest(_ manifest: String, _ extra: [String] = []) throws -> (status: Int32, report: PluginsTestReport) {
        let (status, report, _) = try PluginsTestReport.run(manifest, ["--call-budget", "20000"] + extra)
        return (status, report)
    }

    func testPluginsTestRunsTheSameSuiteOnAWasmBuildWithTheSameVerdicts() throws {
        let native = try TestSupport.faultyFixture(nil, in: folder)
        let wasm = try wasmTwin(of: native, source: "faulty_plugins.c", name: "faulty-wasm")
        let (nativeStatus, nativeReport) = try pluginsTest(native)
        let (wasmStatus, wasmReport) = try pluginsTest(wasm)
        XCTAssertEqual(nativeStatus, 0, "\(nativeReport.results.filter { $0.outcome == .failed })")
        XCTAssertEqual(wasmStatus, 0, "\(wasmReport.results.filter { $0.outcome == .failed })")
        XCTAssertEqual(wasmReport.results.map(\.name), nativeReport.results.map(\.name), "the same tests, in the same order")
        XCTAssertEqual(wasmReport.failed, 0)
        for name in [
            "library/load", "library/manifest-agrees", "faulty-augmentation/augment-non-utf8", "faulty-augmentation/augment-concurrent",
            "faulty-augmentation/create-destroy-repeated", "faulty-operator/compare-every-type"
        ] {
            XCTAssertEqual(wasmReport.result(name)?.outcome, .passed, name)
        }

        // A plugin that breaks the ABI fails the same test both ways, with the same cause.
        let garbageNative = try TestSupport.faultyFixture("GARBAGE_STATUS", in: folder)
        let garbageWasm = try wasmTwin(of: garbageNative, source: "faulty_plugins.c", defines: ["FAULT_GARBAGE_STATUS"], name: "garbage-wasm")
        let filter = ["--filter", "augment-empty"]
        let (badNativeStatus, badNative) = try pluginsTest(garbageNative, filter)
        let (badWasmStatus, badWasm) = try pluginsTest(garbageWasm, filter)
        XCTAssertEqual(badNativeStatus, 1)
        XCTAssertEqual(badWasmStatus, 1)
        let nativeFailure = try XCTUnwrap(badNative.result("faulty-augmentation/augment-empty"))
        let wasmFailure = try XCTUnwrap(badWasm.result("faulty-augmentation/augment-empty"))
        XCTAssertEqual(wasmFailure.outcome, .failed)
        XCTAssertEqual(wasmFailure.message, nativeFailure.message)
        XCTAssertTrue(wasmFailure.message.contains("12345"), wasmFailure.message)
    }

    func testPluginsTestOnAWasmSinkAndItsFaults() throws {
        let native = try EventSinkTests.sinkFixture(in: folder)
        let wasm = try wasmTwin(of: native, source: "test_sink.c", name: "sink-wasm")
        let (status, report) = try pluginsTest(wasm)
        XCTAssertEqual(status, 0, "\(report.results.filter { $0.outcome == .failed })")
        XCTAssertEqual(report.passed, 2 + 4 + 3, "library, lifecycle, the sink's own")

        // Garbage outcomes fail the batch test with the same cause as the .so; a sink that loops
        // runs out of fuel: its events are retries, so the suite's deadline is never reached.
        let garbage = try EventSinkTests.sinkFixture(in: folder, mode: "garbage")
        let garbageWasm = try wasmTwin(of: garbage, source: "test_sink.c", name: "sink-garbage-wasm")
        let (garbageStatus, garbageReport) = try pluginsTest(garbageWasm, ["--filter", "deliver-batch"])
        XCTAssertEqual(garbageStatus, 1)
        XCTAssertTrue(
            garbageReport.result("test-sink/deliver-batch")?.message.contains("answered outcome 12345, which the ABI does not define") ?? false,
            "\(garbageReport.results)")

        let leaks = try TestSupport.hubhost(["plugins", "test", wasm, "--leaks", "--filter", "create-destroy", "--json"], timeout: 120)
        XCTAssertEqual(leaks.status, 1, "--leaks refuses a .wasm rather than pass it unchecked")
        XCTAssertTrue(leaks.stdout.contains("--leaks checks a native library"), leaks.stdout)
    }

    func testPluginHarnessDrivesAWasmBuildAsItDrivesTheSharedLibrary() throws {
        let nativeManifest = try TestSupport.faultyFixture(nil, in: folder)
        let wasmManifest = try wasmTwin(of: nativeManifest, source: "faulty_plugins.c", name: "faulty-wasm")
        let native = try PluginHarness(manifest: nativeManifest)
        defer { native.destroy() }
        let guest = try PluginHarness(manifest: wasmManifest)
        defer { guest.destroy() }
        XCTAssertFalse(native.library.isWasm)
        XCTAssertTrue(guest.library.isWasm)
        XCTAssertEqual(guest.plugins.map(\.pluginID), native.plugins.map(\.pluginID))
        let event = PluginHarness.event(name: "PLAYER LOADED", attributes: [("Level", .int(3))])
        let a = native.augment(event)
        let b = guest.augment(event)
        XCTAssertEqual(a, b)
        XCTAssertEqual(b.event[attribute: "Fixture"], .string("augmented"))
        for (event, trigger) in [(PluginValue.string("x"), PluginValue.string("x")), (.int(1), .int(2)), (.null, .string(""))] {
            XCTAssertEqual(guest.compare(event, trigger), native.compare(event, trigger), "\(event) \(trigger)")
        }
    }
}
