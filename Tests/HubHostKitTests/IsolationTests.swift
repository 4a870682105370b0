import Foundation
import XCTest

@testable import HubHostKit
@testable import HubHostTools

/// `isolation: process`: plugins that crash, abort, hang, allocate without bound, return garbage or
/// claim a wrong ABI run in worker processes, and hubhost survives each while handling events.
final class IsolationTests: FolderTestCase {
    private func fixture(_ fault: String?) throws -> String {
        try TestSupport.faultyFixture(fault, in: folder)
    }

    /// A host with an isolated faulty instance and, beside it, an in-process and an isolated good plugin.
    private func host(_ fault: String?, timeout: String = "300ms", extra: String = "") throws -> (HubHost, LogCapture) {
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: info}
            plugins:
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                config: {location_id: here}
              - id: faulty
                use: \(try fixture(fault))
                isolation: process
                call_timeout: \(timeout)
                memory_limit: 512
                environment: [FAULTY_CRASH_MARKER, FAULTY_SLOW_MS]
            \(extra)
              - id: ads
                use: \(TestSupport.plugin("StaticAdvertiserID"))
                isolation: process
                config: {advertiser_id: ad-1}
            """, to: folder + "/plugins.yaml")
        let capture = LogCapture()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml", extraDestinations: [capture])
        addTeardownBlock { host.shutdown() }
        return (host, capture)
    }

    private func augmentation(_ host: HubHost) throws -> AugmentationPlugin {
        AugmentationPlugin(try XCTUnwrap(host.registry.plugins(of: .augmentation).first))
    }

    func testAWellBehavedIsolatedPluginWorksLikeAnInProcessOne() throws {
        let (host, capture) = try host(nil)
        let entry = try XCTUnwrap(host.registry.entry(id: "faulty"))
        XCTAssertEqual(entry.state, .loaded)
        guard case .running(let pid)? = entry.worker?.currentState else { return XCTFail("worker not running") }
        XCTAssertNotEqual(pid, getpid())
        let event = AugmentableEvent(id: "e1", typeCode: 17, name: "PLAYER LOADED", timeMs: 1, attributes: [("Level", .int(2))])
        let outcome = try augmentation(host).augment(event)
        XCTAssertEqual(outcome.status, 0)
        XCTAssertEqual(outcome.event[attribute: "Fixture"], .string("augmented"))
        XCTAssertEqual(outcome.event[attribute: "Level"], .int(2))
        let op = TriggerOperatorPlugin(try XCTUnwrap(host.registry.plugins(of: .triggerOperator).first))
        XCTAssertEqual(op.operatorName, "FAULTY_EQUALS")
        XCTAssertTrue(op.compare(event: .int(3), trigger: .int(3)).result)
        XCTAssertFalse(op.compare(event: .int(3), trigger: .int(4)).result)
        XCTAssertEqual(host.advertiserID().advertiserID, "ad-1", "an isolated advertiser-ID delegate answers")
        // What the plugin logged in its worker reached the host's pipeline, tagged with the instance id.
        XCTAssertTrue(capture.records.contains { $0.source == "faulty" && $0.message == "faulty fixture created" })
    }

    /// Drives augmentations until the worker is given up (bounded), checking every call fails safely.
    private func driveUntilGivenUp(_ host: HubHost, fault: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let plugin = try augmentation(host)
        let op = TriggerOperatorPlugin(try XCTUnwrap(host.registry.plugins(of: .triggerOperator).first))
        let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
        let event = AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1, attributes: [("Level", .int(2))])
        let start = Date()
        var calls = 0
        while Date().timeIntervalSince(start) < 60, calls < 400 {
            calls += 1
            let outcome = plugin.augment(event)
            XCTAssertNotEqual(outcome.status, 0, "\(fault): the faulty call cannot succeed", file: file, line: line)
            XCTAssertEqual(outcome.event, event, "\(fault): a failed augmentation leaves the event as it was", file: file, line: line)
            XCTAssertFalse(op.compare(event: .int(1), trigger: .int(1)).result, "\(fault): a failed operator answers false", file: file, line: line)
            // The host and its other plugins go on.
            XCTAssertEqual(host.location()?.location.locationID, "here", file: file, line: line)
            if case .gaveUp = worker.currentState { break }
            usleep(50_000)
        }
        guard case .gaveUp(let crashes, _) = worker.currentState else {
            return XCTFail("\(fault): the worker was not given up after \(calls) calls: \(worker.stateDescription)", file: file, line: line)
        }
        XCTAssertEqual(crashes, 5, file: file, line: line)
        XCTAssertTrue(worker.stateDescription.hasPrefix("given up after 5 crashes in 60 s"), worker.stateDescription, file: file, line: line)
        XCTAssertEqual(host.advertiserID().advertiserID, "ad-1", "another isolated plugin still answers", file: file, line: line)
    }

    func testTheHostSurvivesEveryCrashingFault() throws {
        // Unbounded allocation ends at the 512 MiB memory limit (SIGSEGV), or at the call deadline
        // when touching that much memory takes longer than 300 ms.
        let causes = [
            "SEGFAULT": ["crashed (SIGSEGV)"], "ABORT": ["crashed (SIGABRT)"], "HANG": ["hung past its 300 ms call deadline (killed)"],
            "ALLOC": ["crashed (SIGSEGV)", "hung past its 300 ms call deadline (killed)"], "OVERFLOW": ["crashed"]
        ]
        for fault in ["SEGFAULT", "ABORT", "HANG", "ALLOC", "OVERFLOW"] {
            let (host, capture) = try host(fault)
            try driveUntilGivenUp(host, fault: fault)
            let failures = capture.records.filter { $0.source == "hubhost.isolation" && $0.severity == .error }.map(\.message)
            // Logged once per crash, with the instance id and the cause.
            XCTAssertEqual(failures.count, 5, "\(fault): \(failures)")
            XCTAssertTrue(
                failures.allSatisfy { failure in causes[fault]!.contains { failure.hasPrefix("instance 'faulty': worker \($0)") } },
                "\(fault): \(failures)")
            XCTAssertTrue(failures.last?.contains("given up after 5 crashes in 60 s") ?? false, "\(fault): \(failures)")
            host.shutdown()
        }
    }

    func testGarbageStatusFailsTheCallWithoutRestartingTheWorker() throws {
        let (host, _) = try host("GARBAGE_STATUS")
        let event = AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1)
        let outcome = try augmentation(host).augment(event)
        XCTAssertEqual(outcome.status, 12345)
        XCTAssertEqual(outcome.event, event)
        guard case .running? = host.registry.entry(id: "faulty")?.worker?.currentState else { return XCTFail("the worker should still run") }
    }

    func testWrongABIDisablesOnlyThatInstance() throws {
        let (host, _) = try host("WRONG_ABI")
        guard case .failed(let error)? = host.registry.entry(id: "faulty")?.state else { return XCTFail("loaded a wrong-ABI plugin") }
        XCTAssertTrue(error.description.contains("was built for plugin ABI 7.0.0, but this hubhost speaks ABI \(ABIVersion.host)"), error.description)
        XCTAssertTrue(error.description.hasPrefix("instance 'faulty' disabled: its worker process (isolation: process) did not start"))
        XCTAssertEqual(host.advertiserID().advertiserID, "ad-1")
    }

    func testALibraryThatCrashesAsItLoadsDisablesOnlyItsInstance() throws {
        let (host, _) = try host("CRASH_ON_LOAD")
        guard case .failed(let error)? = host.registry.entry(id: "faulty")?.state else { return XCTFail("loaded a crashing library") }
        XCTAssertEqual(error.description, "instance 'faulty' disabled: its worker process (isolation: process) did not start: crashed (SIGSEGV)")
        XCTAssertEqual(host.location()?.location.locationID, "here")
        XCTAssertEqual(host.advertiserID().advertiserID, "ad-1")
    }

    func testAWorkerThatCrashesOnceIsRestartedAndServesAgain() throws {
        let marker = folder + "/crashed-once"
        setenv("FAULTY_CRASH_MARKER", marker, 1)
        defer { unsetenv("FAULTY_CRASH_MARKER") }
        let (host, capture) = try host("CRASH_ONCE")
        let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
        guard case .running(let firstPID) = worker.currentState else { return XCTFail("not running") }
        let plugin = try augmentation(host)
        let event = AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1)
        XCTAssertEqual(plugin.augment(event).status, 9 /* HH_ERR_UNAVAILABLE */, "the first call crashes the worker")
        guard case .restarting = worker.currentState else { return XCTFail("expected restarting, got \(worker.stateDescription)") }
        // During the backoff calls fail at once; after it the worker is started again.
        var answered: AugmentationOutcome?
        for _ in 0..<100 {
            let outcome = plugin.augment(event)
            if outcome.status == 0 {
                answered = outcome
                break
            }
            usleep(20_000)
        }
        XCTAssertEqual(answered?.event[attribute: "Fixture"], .string("augmented"))
        guard case .running(let secondPID) = worker.currentState else { return XCTFail("not running again") }
        XCTAssertNotEqual(firstPID, secondPID)
        XCTAssertEqual(worker.totalCrashes, 1)
        XCTAssertTrue(capture.messages.contains { $0.hasPrefix("instance 'faulty': worker restarted (pid \(secondPID))") }, "\(capture.messages)")
    }

    /// Retries `call` (a failed call during the restart backoff fails at once) until it succeeds.
    private func eventuallySucceeds(_ call: () -> AugmentationOutcome) -> AugmentationOutcome? {
        for _ in 0..<200 {
            let outcome = call()
            if outcome.status == 0 { return outcome }
            usleep(20_000)
        }
        return nil
    }

    /// A call holds the worker for its whole length; what health and the plugin list read (the
    /// state, crashes, the library's ABI) does not wait for it.
    func testTheWorkersStateIsReadWithoutWaitingForTheCallInFlight() throws {
        setenv("FAULTY_SLOW_MS", "2000", 1)
        defer { unsetenv("FAULTY_SLOW_MS") }
        let (host, _) = try host("SLOW", timeout: "5s")
        let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
        let plugin = try augmentation(host)
        let returned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = plugin.augment(AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1))
            returned.signal()
        }
        usleep(300_000)  // the call is in flight in the worker, which sleeps 2 s in it
        let start = Date()
        guard case .running = worker.currentState else { return XCTFail("not running: \(worker.currentState)") }
        XCTAssertEqual(worker.totalCrashes, 0)
        XCTAssertNotNil(worker.libraryABI)
        XCTAssertEqual(host.registry.failedWhileServing, [])
        XCTAssertEqual(HostHealth(host).status, "ok")
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.5, "read without waiting for the 2 s call")
        XCTAssertEqual(returned.wait(timeout: .now() + 10), .success)
    }

    func testKillingTheWorkerMidCallFailsOnlyThatCall() throws {
        setenv("FAULTY_SLOW_MS", "200", 1)
        defer { unsetenv("FAULTY_SLOW_MS") }
        let (host, capture) = try host("SLOW", timeout: "2s")
        let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
        XCTAssertTrue(worker.usesSharedSlot, "calls cross the shared slot")
        guard case .running(let pid) = worker.currentState else { return XCTFail("not running") }
        let plugin = try augmentation(host)
        let event = AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { kill(pid, SIGKILL) }
        let start = Date()
        let outcome = plugin.augment(event)
        XCTAssertEqual(outcome.status, 9 /* HH_ERR_UNAVAILABLE */)
        XCTAssertEqual(outcome.message, "crashed (SIGKILL)")
        XCTAssertEqual(outcome.event, event)
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.5, "the death ends the wait, not the 2 s deadline")
        XCTAssertEqual(
            capture.records.filter { $0.source == "hubhost.isolation" && $0.severity == .error }.count, 1, "logged once")
        let answered = eventuallySucceeds { plugin.augment(event) }
        XCTAssertEqual(answered?.event[attribute: "Fixture"], .string("augmented"), "the restarted worker answers")
        guard case .running(let secondPID) = worker.currentState else { return XCTFail("not running again") }
        XCTAssertNotEqual(pid, secondPID)
        XCTAssertTrue(worker.usesSharedSlot)
    }

    func testKillingTheWorkerAtAnyMomentNeverHangsACall() throws {
        let (host, _) = try host(nil, timeout: "5s")
        let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
        let plugin = try augmentation(host)
        let event = AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1, attributes: [("Level", .int(2))])
        // Four kills (a fifth crash within the window would give the worker up), each at a random
        // moment while calls run back to back; every call ends well before the 5 s deadline.
        for round in 0..<4 {
            XCTAssertNotNil(eventuallySucceeds { plugin.augment(event) }, "round \(round): the worker serves again")
            guard case .running(let pid) = worker.currentState else { return XCTFail("round \(round): not running") }
            DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int.random(in: 0..<3000))) { kill(pid, SIGKILL) }
            let start = Date()
            var failed = false
            while !failed, Date().timeIntervalSince(start) < 3 {
                let callStart = Date()
                let outcome = plugin.augment(event)
                XCTAssertLessThan(Date().timeIntervalSince(callStart), 1.5, "round \(round): a call waited for its deadline")
                if outcome.status != 0 {
                    XCTAssertEqual(outcome.message, "crashed (SIGKILL)", "round \(round)")
                    failed = true
                } else {
                    XCTAssertEqual(outcome.event[attribute: "Fixture"], .string("augmented"))
                }
            }
            XCTAssertTrue(failed, "round \(round): the kill was seen")
        }
        XCTAssertEqual(worker.totalCrashes, 4)
        XCTAssertEqual(eventuallySucceeds { plugin.augment(event) }?.event[attribute: "Fixture"], .string("augmented"))
    }

    func testAWorkerThatHangsOnceIsKilledAtTheDeadlineAndTheNextCallSucceeds() throws {
        let marker = folder + "/hung-once"
        setenv("FAULTY_CRASH_MARKER", marker, 1)
        defer { unsetenv("FAULTY_CRASH_MARKER") }
        let (host, _) = try host("HANG_ONCE")
        let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
        XCTAssertTrue(worker.usesSharedSlot)
        let plugin = try augmentation(host)
        let event = AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1)
        let start = Date()
        let outcome = plugin.augment(event)
        let waited = Date().timeIntervalSince(start)
        XCTAssertEqual(outcome.status, 9 /* HH_ERR_UNAVAILABLE */)
        XCTAssertEqual(outcome.message, "hung past its 300 ms call deadline (killed)")
        XCTAssertGreaterThanOrEqual(waited, 0.3)
        XCTAssertLessThan(waited, 2)
        let answered = eventuallySucceeds { plugin.augment(event) }
        XCTAssertEqual(answered?.event[attribute: "Fixture"], .string("augmented"))
        XCTAssertEqual(worker.totalCrashes, 1)
    }

    /// A worker gets only the few variables a program needs and those its instance names in
    /// `environment:`: serve's HUBHOST_TOKEN does not reach the plugin.
    func testAWorkerGetsOnlyTheVariablesItsInstanceNames() throws {
        setenv("HUBHOST_TOKEN", "serve-secret", 1)
        setenv("FAULTY_SLOW_MS", "named-in-plugins-yaml", 1)
        defer {
            unsetenv("HUBHOST_TOKEN")
            unsetenv("FAULTY_SLOW_MS")
        }
        let (host, _) = try host("REPORT_ENV")
        let answered = plugin(try augmentation(host))
        XCTAssertEqual(answered?.event[attribute: "Token"], .string("(unset)"))
        XCTAssertEqual(answered?.event[attribute: "Slow"], .string("named-in-plugins-yaml"))
    }

    /// A plugin that forks and then crashes: the host sees the crash at once (the forked child
    /// holding the worker's socket does not hide it until the deadline), and the child is killed
    /// with the worker's process group.
    func testAWorkersForkedChildNeitherHidesItsCrashNorOutlivesIt() throws {
        let marker = folder + "/forked-child"
        setenv("FAULTY_CRASH_MARKER", marker, 1)
        defer { unsetenv("FAULTY_CRASH_MARKER") }
        let (host, _) = try host("FORK_THEN_CRASH", timeout: "20s")
        let plugin = try augmentation(host)
        let start = Date()
        let outcome = plugin.augment(AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1))
        let waited = Date().timeIntervalSince(start)
        XCTAssertEqual(outcome.status, 9 /* HH_ERR_UNAVAILABLE */)
        XCTAssertEqual(outcome.message, "crashed (SIGSEGV)")
        XCTAssertLessThan(waited, 5, "seen when the worker died, not at the 20 s deadline")
        let child = try XCTUnwrap(Int32(try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        var gone = false
        for _ in 0..<200 {  // up to 2 s for the kill to land and the child to be reaped
            let state = (try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8))?.split(separator: " ").dropFirst(2).first
            if state == nil || state == "Z" {
                gone = true
                break
            }
            usleep(10_000)
        }
        XCTAssertTrue(gone, "the forked child \(child) outlived its worker")
    }

    /// The ABI shown for an instance is the one its library declares, isolated or not (a worker
    /// used to be shown as the host's own ABI).
    func testTheABIShownIsTheLibrarysInProcessAndIsolated() throws {
        _ = try TestSupport.compileFixture(into: folder + "/abi", name: "libfault.so")
        try TestSupport.write(TestSupport.fixtureManifest(library: "libfault.so"), to: folder + "/abi/plugin.yaml")
        try TestSupport.write(
            """
            data_dir: data
            plugins:
              - id: inside
                use: abi/plugin.yaml
              - id: isolated
                use: abi/plugin.yaml
                isolation: process
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        XCTAssertEqual(host.registry.entry(id: "inside")?.binaryABI, ABIVersion(major: 1, minor: 0, patch: 0))
        XCTAssertEqual(host.registry.entry(id: "isolated")?.binaryABI, ABIVersion(major: 1, minor: 0, patch: 0))
        XCTAssertNotEqual(ABIVersion.host, ABIVersion(major: 1, minor: 0, patch: 0), "the test tells the two apart")
    }

    /// A worker writes its own log frames: one claiming to be the host's loader, dated 2001, is
    /// logged under the instance's name with the host's time.
    func testAWorkerCannotForgeTheSourceOrTimeOfItsLogRecords() throws {
        let (host, capture) = try host("FORGE_LOG")
        let before = Clock.wallMs()
        _ = try augmentation(host).augment(AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1))
        let forged = try XCTUnwrap(capture.records.first { $0.message.hasSuffix("forged by the plugin") }, "\(capture.messages)")
        XCTAssertEqual(forged.source, "faulty")
        XCTAssertEqual(forged.message, "(says it is from hubhost.loader) forged by the plugin")
        XCTAssertGreaterThanOrEqual(forged.timeMs, before)
        XCTAssertFalse(capture.records.contains { $0.source == "hubhost.loader" && $0.message.contains("forged") })
    }

    private func plugin(_ plugin: AugmentationPlugin) -> AugmentationOutcome? {
        eventuallySucceeds { plugin.augment(AugmentableEvent(id: "e", typeCode: 17, name: "E", timeMs: 1)) }
    }

    func testRequestsAndAnswersLargerThanTheSharedSlotCrossTheSocket() throws {
        let (host, _) = try host(nil)
        let worker = try XCTUnwrap(host.registry.entry(id: "faulty")?.worker)
        XCTAssertTrue(worker.usesSharedSlot)
        let plugin = try augmentation(host)
        let big = String(repeating: "x", count: 4 * SharedCallSlot.defaultCapacity)
        let small = AugmentableEvent(id: "s", typeCode: 17, name: "E", timeMs: 1, attributes: [("Level", .int(2))])
        // Small, large both ways, small again: the slot and the socket stay in step.
        for (round, event) in [small, AugmentableEvent(id: "b", typeCode: 17, name: "E", timeMs: 1, attributes: [("Big", .string(big))]), small]
            .enumerated()
        {
            let outcome = plugin.augment(event)
            XCTAssertEqual(outcome.status, 0, "round \(round): \(outcome.message)")
            XCTAssertEqual(outcome.event[attribute: "Fixture"], .string("augmented"))
            XCTAssertEqual(outcome.event[attribute: "Big"], event[attribute: "Big"], "round \(round)")
        }
    }

    func testAnAnswerLargerThanTheSharedSlotToASmallRequest() throws {
        let (host, _) = try host("BIG_ANSWER")
        let plugin = try augmentation(host)
        for round in 0..<3 {
            let outcome = plugin.augment(AugmentableEvent(id: "e\(round)", typeCode: 17, name: "E", timeMs: 1))
            XCTAssertEqual(outcome.status, 0, outcome.message)
            XCTAssertEqual(outcome.event.id, "e\(round)")
            XCTAssertEqual(outcome.event[attribute: "Big"], .string(String(repeating: "b", count: 1 << 20)))
        }
        XCTAssertEqual(host.registry.entry(id: "faulty")?.worker?.totalCrashes, 0)
    }

    func testCallsFromManyThreadsToOneWorkerEachGetTheirOwnAnswer() throws {
        let (host, _) = try host(nil)
        let plugin = try augmentation(host)
        let mismatches = LockedCounter()
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for call in 0..<300 {
                let event = AugmentableEvent(
                    id: "t\(thread)-\(call)", typeCode: 17, name: "E", timeMs: 1, attributes: [("Call", .int(Int64(thread * 1000 + call)))])
                let outcome = plugin.augment(event)
                if outcome.status != 0 || outcome.event.id != event.id || outcome.event[attribute: "Call"] != event[attribute: "Call"]
                    || outcome.event[attribute: "Fixture"] != .string("augmented")
                {
                    mismatches.increment()
                }
            }
        }
        XCTAssertEqual(mismatches.value, 0)
    }

    func testPluginsListShowsIsolationAndWorkerState() throws {
        _ = try host(nil)
        let result = try TestSupport.hubhost(["plugins", "list", "--json", "--manifest", folder + "/plugins.yaml"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = try result.json(as: [[String: Any]].self)
        XCTAssertEqual(rows.compactMap { $0["isolation"] as? String }, ["in_process", "process", "process"])
        XCTAssertTrue((rows[1]["worker"] as? String)?.hasPrefix("running (pid ") ?? false, "\(rows[1])")
        XCTAssertNil(rows[0]["worker"] as? String)
    }

    func testIsolationSettingsAreChecked() throws {
        try TestSupport.write(
            """
            plugins:
              - id: geo
                use: \(TestSupport.plugin("FixedLocation"))
                isolation: proces
                call_timeout: soon
                memory_limit: 1
            """, to: folder + "/bad.yaml")
        let manifest = try HostManifest.load(path: folder + "/bad.yaml")
        XCTAssertEqual(manifest.diagnostics.map(\.key), ["plugins[0].isolation", "plugins[0].call_timeout", "plugins[0].memory_limit"])
        XCTAssertTrue(manifest.diagnostics[0].message.contains("did you mean 'process'?"))
    }

    /// Workers started from many threads at once each hold one socket, their own: a worker that
    /// inherited another's end of its socket would keep it open after that worker died, and the
    /// host would notice the death only at the call's deadline.
    func testWorkersStartedAtOnceHoldOnlyTheirOwnSocket() throws {
        let manifest = try fixture(nil)
        let library = try LibraryImage.read(path: (manifest as NSString).deletingLastPathComponent + "/libfaulty.so")
        let workers = (0..<8).map { n in
            PluginWorker(
                settings: PluginWorker.Settings(
                    instanceID: "w\(n)", manifestPath: manifest, library: library, dataDirectory: folder, config: [:],
                    logFilter: LogFilter(), executable: TestSupport.hubhostExecutable),
                pipeline: LogPipeline())
        }
        defer { workers.forEach { $0.stop() } }
        /// The socket each descriptor above 2 of `pid` is, by its link ("socket:[inode]").
        func sockets(of pid: Int32) throws -> [Int32: String] {
            var found: [Int32: String] = [:]
            for fd in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap(Int32.init) where fd > 2 {
                let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) ?? ""
                if link.hasPrefix("socket:") { found[fd] = link }
            }
            return found
        }
        for round in 0..<3 {
            DispatchQueue.concurrentPerform(iterations: workers.count) { n in _ = try? workers[n].start() }
            var held: [(id: String, own: String, others: Set<String>)] = []
            for worker in workers {
                guard case .running(let pid) = worker.currentState else { return XCTFail("round \(round): \(worker.stateDescription)") }
                var found = try sockets(of: pid)
                let own = try XCTUnwrap(found.removeValue(forKey: 3), "round \(round), \(worker.instanceID): no socket at fd 3")
                held.append((worker.instanceID, own, Set(found.values)))
            }
            for worker in held {
                for other in held where other.id != worker.id {
                    XCTAssertFalse(worker.others.contains(other.own), "round \(round): \(worker.id) holds \(other.id)'s end of its socket")
                }
            }
            workers.forEach { $0.stop() }
        }
    }

    /// A kind's calls are written in one place, and none can be left out: every wire op has a
    /// server in the worker's table and belongs to exactly one kind, every kind serves at least one
    /// op and has conformance tests, and the WebAssembly guest adapter branches on every op of each
    /// kind it says it serves (and on none of the kinds it says it does not), so a new op cannot be
    /// forgotten there.
    func testEveryWireOpHasOneKindAServerAndItsBranchInTheWasmGuest() throws {
        let ops = IsolatedCalls.ops
        XCTAssertEqual(Set(ops.keys), Set(PluginKind.allCases), "IsolatedCalls.serversByKind lists every kind once")
        for kind in PluginKind.allCases {
            XCTAssertFalse(ops[kind, default: []].isEmpty, "\(kind) serves no WorkerOp")
            XCTAssertFalse(ConformanceSuite.kindTests("p", kind).isEmpty, "the conformance suite has no test for \(kind)")
        }
        let listed = ops.values.flatMap { $0 }
        XCTAssertEqual(listed.count, WorkerOp.allCases.count, "each op is served by exactly one kind")
        XCTAssertEqual(Set(listed), Set(WorkerOp.allCases))
        for op in WorkerOp.allCases { XCTAssertNotNil(IsolatedCalls.servers[op], "no server for WorkerOp.\(op)") }
        XCTAssertEqual(IsolatedCalls.servers.count, WorkerOp.allCases.count)

        let header = try String(contentsOfFile: "\(TestSupport.repository)/Protocols/include/hubhost/hubhost_wire_ops.h", encoding: .utf8)
        let guest = try String(contentsOfFile: "\(TestSupport.repository)/Protocols/wasm/hubhost_wasm_guest.c", encoding: .utf8)
        var names: [UInt8: String] = [:]
        for match in header.matches(of: /(HH_WIRE_OP_[A-Z0-9_]+) = ([0-9]+)/) { names[UInt8(match.2)!] = String(match.1) }
        XCTAssertEqual(Set(names.keys), Set(WorkerOp.allCases.map(\.rawValue)), "the header's ops are WorkerOp's")
        // The guest's header comment names the kinds it serves; the others answer every call -1.
        let served = try XCTUnwrap(guest.firstMatch(of: /Kinds served:([^.]*)\./), "the guest's \"Kinds served\" comment")
        let servedKinds = Set(served.1.split(whereSeparator: { !$0.isLetter && $0 != "_" }).compactMap { PluginKind(rawValue: String($0)) })
        XCTAssertFalse(servedKinds.isEmpty)
        for (kind, kindOps) in ops {
            for op in kindOps {
                let name = try XCTUnwrap(names[op.rawValue], "WorkerOp.\(op) has no HH_WIRE_OP_* constant")
                let branch = "kind == HH_KIND_\(kind.rawValue.uppercased()) && op == \(name))"
                if servedKinds.contains(kind) {
                    XCTAssertTrue(guest.contains(branch), "the Wasm guest serves \(kind) but has no `\(branch)` in hh_wasm_call")
                } else {
                    XCTAssertFalse(guest.contains("op == \(name)"), "the Wasm guest branches on \(name) but does not list \(kind) as served")
                }
            }
        }
    }
}

/// A count several threads add to.
private final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
