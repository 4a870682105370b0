import Foundation
import XCTest

@testable import HubHostKit
@testable import HubHostTools

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// `hubhost plugins test` against plugins that misbehave on purpose (Tests/Fixtures/faulty_plugins.c):
/// each fault is reported as its own test's failure, with its cause, and the run goes on.
final class ValidatorTests: FolderTestCase {
    /// Builds the faulty fixture with `fault` (nil: well-behaved) and returns its plugin.yaml.
    private func fixture(_ fault: String?) throws -> String {
        try TestSupport.faultyFixture(fault, in: folder)
    }

    private func validate(_ path: String, _ extra: [String] = []) throws -> (status: Int32, report: PluginsTestReport, stderr: String) {
        try PluginsTestReport.run(path, extra)
    }

    func testAWellBehavedPluginPassesEveryTest() throws {
        let (status, report, _) = try validate(try fixture(nil))
        XCTAssertEqual(status, 0)
        XCTAssertEqual(report.failed, 0, "\(report.results.filter { $0.outcome == .failed })")
        XCTAssertEqual(report.passed, 2 + 2 * 4 + 5 + 2)  // library, lifecycle x2, augmentation, operator
    }

    func testCrashesHangsAndGarbageAreEachTheirTestsFailure() throws {
        let cases: [(fault: String, check: (ConformanceResult) -> Bool, describe: String)] = [
            ("SEGFAULT", { $0.signal == SIGSEGV && $0.message.hasPrefix("crashed: SIGSEGV (signal 11)") }, "SIGSEGV"),
            ("ABORT", { $0.signal == SIGABRT && $0.message.hasPrefix("crashed: SIGABRT (signal 6)") }, "SIGABRT"),
            ("OVERFLOW", { $0.signal != nil }, "a crash by signal"),
            ("HANG", { $0.timedOut && $0.message.contains("did not return within its 300 ms budget") }, "a budget overrun"),
            ("GARBAGE_STATUS", { $0.message.contains("returned status 12345, which the ABI does not define") }, "the garbage status")
        ]
        for (fault, check, describe) in cases {
            let (status, report, _) = try validate(
                try fixture(fault),
                [
                    "--call-budget", "300", "--filter", "augment-empty",
                    "--filter", "compare-every-type", "--filter", "library/"
                ])
            XCTAssertEqual(status, 1, fault)
            XCTAssertEqual(
                report.results.map(\.name),
                [
                    "library/load", "library/manifest-agrees", "faulty-augmentation/augment-empty",
                    "faulty-operator/compare-every-type"
                ], fault)
            // The library loads fine; the fault fires in the calls, and each call's test fails alone.
            XCTAssertEqual(report.result("library/load")?.outcome, .passed, fault)
            for name in ["faulty-augmentation/augment-empty", "faulty-operator/compare-every-type"] {
                let result = try XCTUnwrap(report.result(name), fault)
                XCTAssertEqual(result.outcome, .failed, "\(fault) \(name)")
                XCTAssertTrue(check(result), "\(fault) \(name): expected \(describe), got \(result)")
            }
        }
    }

    func testUnboundedAllocationHitsTheMemoryLimitAndFailsItsTest() throws {
        let (_, report, _) = try validate(try fixture("ALLOC"), ["--filter", "augment-empty", "--memory-limit", "1024", "--call-budget", "20000"])
        let result = try XCTUnwrap(report.result("faulty-augmentation/augment-empty"))
        XCTAssertEqual(result.outcome, .failed)
        XCTAssertNotNil(result.signal, "\(result)")
    }

    func testWrongABIIsReportedByTheLibraryTest() throws {
        let path = try fixture("WRONG_ABI")
        let (status, report, _) = try validate(path, ["--filter", "library/"])
        XCTAssertEqual(status, 1)
        let load = try XCTUnwrap(report.result("library/load"))
        XCTAssertEqual(load.outcome, .failed)
        XCTAssertTrue(load.message.contains("was built for plugin ABI 7.0.0, but this hubhost speaks ABI \(ABIVersion.host)"), load.message)
    }

    func testALibraryThatCrashesAsItLoadsFailsTheLoadTest() throws {
        let (status, report, _) = try validate(try fixture("CRASH_ON_LOAD"), ["--filter", "library/load"])
        XCTAssertEqual(status, 1)
        let load = try XCTUnwrap(report.result("library/load"))
        XCTAssertEqual(load.signal, SIGSEGV, "\(load)")
    }

    func testListFilterAndJUnit() throws {
        let path = try fixture(nil)
        let list = try TestSupport.hubhost(["plugins", "test", path, "--list", "--json"])
        let names = try list.json(as: [[String: String]].self).compactMap { $0["name"] }
        XCTAssertEqual(names.count, 17)
        XCTAssertTrue(names.contains("faulty-operator/compare-concurrent"))

        let junit = folder + "/results.xml"
        let segv = try fixture("SEGFAULT")
        let run = try TestSupport.hubhost([
            "plugins", "test", segv, "--filter", "augment-empty", "--filter", "library/load",
            "--junit", junit
        ])
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stdout.contains("1 passed, 1 failed"), run.stdout)
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        XCTAssertTrue(xml.contains("<testsuites name=\"hubhost plugins test\" tests=\"2\" failures=\"1\""), xml)
        XCTAssertTrue(xml.contains("<testcase classname=\"faulty-augmentation\" name=\"augment-empty\""), xml)
        XCTAssertTrue(xml.contains("<failure type=\"crash\" message=\"crashed: SIGSEGV (signal 11)"), xml)
        // The XML is well formed.
        XCTAssertTrue(XMLParser(data: Data(xml.utf8)).parse(), "the JUnit XML does not parse")
    }

    func testInProcessModeRunsTheSameSuite() throws {
        let (status, report, _) = try validate(try fixture(nil), ["--in-process", "--filter", "faulty-operator/"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(
            report.results.map(\.name),
            [
                "faulty-operator/create-destroy", "faulty-operator/create-destroy-repeated",
                "faulty-operator/create-missing-config", "faulty-operator/create-wrong-config",
                "faulty-operator/compare-every-type", "faulty-operator/compare-concurrent"
            ])
    }

    func testEveryBundledPluginPassesTheSuite() throws {
        for name in [
            "ConsoleLogger", "JSONLinesLogger", "StaticAdvertiserID", "FixedLocation", "Noop", "LocationAugmentation", "WeatherAugmentation",
            "StandardOperators", "ExtraOperators", "HTTPContentProvider", "LocalContentProvider",
            "LinuxDeviceConditions", "FixedDeviceConditions", "DownloadRequestHeader"
        ] {
            let (status, report, _) = try validate(TestSupport.plugin(name))
            XCTAssertEqual(status, 0, "\(name): \(report.results.filter { $0.outcome == .failed })")
            XCTAssertGreaterThanOrEqual(report.passed, 7, name)
        }
    }

    /// The ABI 1.1 kinds' tests report an out-of-range answer, a header that smuggles a line, and a
    /// crash, each as that test's failure with its cause.
    func testGarbageAndCrashesOfTheABI11KindsAreReported() throws {
        let cases: [(mode: String, test: String, check: (ConformanceResult) -> Bool)] = [
            (
                "battery-1.5", "fixture-conditions/read-conditions",
                { $0.message.contains("gave an invalid answer: battery_level 1.5 is outside 0...1") }
            ),
            ("network-7", "fixture-conditions/read-conditions-concurrent", { $0.message.contains("network code 7 is not one of") }),
            ("crlf-header", "fixture-request/convert-plain", { $0.message.contains("header 'X-Evil' has a value holding CR, LF or NUL") }),
            (
                "ftp-url", "fixture-request/convert-awkward",
                { $0.message.contains("'ftp://example.com/file' is not an absolute http:// or https:// URL") }
            ),
            ("crash", "fixture-request/convert-plain", { $0.signal == SIGSEGV }),
            ("crash", "fixture-conditions/read-conditions", { $0.signal == SIGSEGV })
        ]
        for (mode, test, check) in cases {
            let manifest = try TestSupport.prefetchKindsFixture(in: folder + "/" + mode, testMode: mode)
            let (status, report, _) = try validate(manifest, ["--filter", test])
            XCTAssertEqual(status, 1, mode)
            let result = try XCTUnwrap(report.result(test), "\(mode): \(report.results.map(\.name))")
            XCTAssertEqual(result.outcome, .failed, mode)
            XCTAssertTrue(check(result), "\(mode): \(result.message)")
        }
        // Well-behaved, the fixture passes every test of both kinds.
        let (status, report, _) = try validate(try TestSupport.prefetchKindsFixture(in: folder + "/good"))
        XCTAssertEqual(status, 0, "\(report.results.filter { $0.outcome == .failed })")
        XCTAssertEqual(report.passed, 2 + 2 * (4 + 3))
    }

    /// The validator's child runner reads output as it arrives: a child killed at its deadline
    /// while a grandchild (here `sleep`) still holds its pipes returns what it wrote, read after the
    /// bounded wait on the readers gave up (they are still running: the buffer is under a lock),
    /// and at once: the child's end is seen by waitid, not by Process, which waits for the grandchild.
    func testAChildKilledAtItsDeadlineKeepsItsOutputWhileAGrandchildHoldsThePipes() throws {
        let started = Date()
        let result = try ChildProcess.run(
            ["/bin/sh", "-c", "echo before; echo oops >&2; sleep 5; echo never"], timeoutMs: 500, readerGraceMs: 300)
        XCTAssertEqual(result.termination, .timedOut)
        XCTAssertEqual(result.stdout, "before\n")
        XCTAssertEqual(result.stderr, "oops\n")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2.5, "neither the wait for the child nor the readers' is held by the grandchild")
    }

    /// The same for a child that exits by itself and leaves a grandchild holding its pipes.
    func testAChildThatExitsKeepsItsOutputWhileAGrandchildHoldsThePipes() throws {
        let started = Date()
        let result = try ChildProcess.run(["/bin/sh", "-c", "echo done; sleep 5 & exit 7"], timeoutMs: 5000, readerGraceMs: 300)
        XCTAssertEqual(result.termination, .exited(7))
        XCTAssertEqual(result.stdout, "done\n")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2.5, "not held until the grandchild ends")
    }

    func testLeaksFindsTheLeakingPluginAndPassesTheCleanOne() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind"), "valgrind is needed (.ci/run installs it)")
        let (status, report, _) = try validate(try fixture("LEAK"), ["--leaks", "--filter", "faulty-operator/create-destroy-repeated"])
        XCTAssertEqual(status, 1)
        let leak = try XCTUnwrap(report.results.first)
        XCTAssertTrue(leak.message.hasPrefix("memcheck: 1 definite leak in libfaulty.so:"), leak.message)
        XCTAssertTrue(leak.message.contains("fixture_create"), leak.message)
        let (cleanStatus, clean, _) = try validate(try fixture(nil), ["--leaks", "--filter", "faulty-operator/create-destroy-repeated"])
        XCTAssertEqual(cleanStatus, 0, "\(clean.results)")
    }
}
