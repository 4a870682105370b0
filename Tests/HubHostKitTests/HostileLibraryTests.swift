import Foundation
import XCTest

@testable import HubHostKit

/// Library files as an attacker or a botched deployment leaves them: cut short, junk, a device, a
/// FIFO, or swapped after the host checked them. Each is refused with a clear reason before
/// dlopen, a reload that meets one keeps the working instance serving, and a library is loaded
/// only from the content that was checked, at start and when an isolated worker restarts.
final class HostileLibraryTests: FolderTestCase {
    var library: String { folder + "/app-version/libapp-version.so" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try ReloadTests.buildAppVersion(in: folder, attribute: "App Version")
    }

    private func writeManifest(sha256: String? = nil, isolated: Bool = false) throws {
        var text = "data_dir: data\nlogging: {severity: warning}\nplugins:\n"
        text += "  - id: app\n    use: app-version/plugin.yaml\n    config: {version: \"1.0\"}\n"
        if let sha256 { text += "    sha256: \(sha256)\n" }
        if isolated { text += "    isolation: process\n    call_timeout: 5s\n" }
        try TestSupport.write(text, to: folder + "/plugins.yaml")
    }

    private func openHost() throws -> HubHost {
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return host
    }

    /// Puts `bytes` at the library's path as a new file (rename), as a deployment would.
    private func replaceLibrary(with bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: library + ".new"))
        XCTAssertEqual(rename(library + ".new", library), 0)
    }

    private func libraryBytes() throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: library))) }

    func testALibraryCutShortIsRefusedBeforeDlopenWhereverItIsOpened() throws {
        let whole = try libraryBytes()
        for length in [0, 63, 64, 4000, whole.count / 2, whole.count - 1] {
            let cut = folder + "/cut-\(length).so"
            try Data(whole.prefix(length)).write(to: URL(fileURLWithPath: cut))
            XCTAssertNotNil(ELFCheck.problem(Array(whole.prefix(length))), "\(length) bytes")
            XCTAssertThrowsError(try PluginLibrary.open(path: cut), "\(length) bytes") { error in
                XCTAssertTrue("\(error)".contains("cut short") || "\(error)".contains("not an ELF"), "\(error)")
            }
        }
        XCTAssertNil(ELFCheck.problem(whole))
        // Headers whose offsets point past the end, or wrap around, are refused the same way.
        var lying = whole
        lying[32..<40] = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][...]
        XCTAssertEqual(ELFCheck.problem(lying), "its program headers lie outside its \(whole.count) bytes (cut short?)")
        var executable = whole
        executable[16] = 2
        XCTAssertEqual(ELFCheck.problem(executable), "it is an executable, not a shared library (link it with -shared)")
        var foreign = whole
        foreign[18] = 183 == ELFCheck.hostMachine ? 62 : 183
        XCTAssertTrue(ELFCheck.problem(foreign)?.hasPrefix("it was built for ELF machine") == true)
    }

    /// A non-atomic deploy (`head -c 4000 lib.so > t && mv t lib.so`) and a reload: refused, and
    /// the instance that works keeps serving events.
    func testAReloadMeetingACutShortLibraryIsRefusedAndTheOldInstanceKeepsServing() throws {
        try writeManifest()
        let host = try openHost()
        let engine = try host.events()
        try replaceLibrary(with: Array(try libraryBytes().prefix(4000)))
        let report = host.reload()
        XCTAssertEqual(report.outcome, .refused, "\(report)")
        XCTAssertEqual(report.problems.count, 1, "\(report)")
        XCTAssertTrue(report.problems[0].contains("instance 'app' does not load") && report.problems[0].contains("cut short"), "\(report)")
        XCTAssertEqual(host.registry.entry(id: "app")?.state, .loaded)
        XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "A"))[attribute: "App Version"], .string("1.0"))
    }

    /// `echo junk > lib.so` and a reload: refused (not "applied" with the working instance retired).
    func testAReloadMeetingJunkIsRefusedAndTheOldInstanceKeepsServing() throws {
        try writeManifest()
        let host = try openHost()
        let engine = try host.events()
        let generation = host.registry.generation
        try replaceLibrary(with: Array("junk\n".utf8))
        let report = host.reload()
        XCTAssertEqual(report.outcome, .refused, "\(report)")
        XCTAssertEqual(
            report.problems,
            [
                "plugins: instance 'app' does not load: \(library) is not a loadable shared object: it is 5 bytes, shorter than an ELF header (cut short?)"
            ])
        XCTAssertEqual(host.registry.generation, generation)
        XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "A"))[attribute: "App Version"], .string("1.0"))
        // Fixed, the next reload applies the new build.
        try ReloadTests.buildAppVersion(in: folder, attribute: "Build B")
        XCTAssertEqual(host.reload().outcome, .applied)
        XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "B"))[attribute: "Build B"], .string("1.0"))
    }

    /// `library: /dev/zero` or a FIFO: refused at once as not a regular file, not hashed forever.
    func testADeviceOrAFIFOIsRefusedWithoutReadingIt() throws {
        XCTAssertEqual(mkfifo(folder + "/fifo.so", 0o600), 0)
        for special in ["/dev/zero", folder + "/fifo.so", folder] {
            try TestSupport.write(
                TestSupport.fixtureManifest(library: special, id: "fault-fixture"), to: folder + "/special/plugin.yaml")
            try TestSupport.write(
                "data_dir: data\nplugins:\n  - id: special\n    use: special/plugin.yaml\n", to: folder + "/plugins.yaml")
            let manifest = folder + "/plugins.yaml"
            let state = TestSupport.within(20, "loading \(special)") { () -> String in
                guard let host = try? HubHost(manifestPath: manifest) else { return "no host" }
                defer { host.shutdown() }
                return host.registry.entry(id: "special").map { "\($0.state)" } ?? "no entry"
            }
            XCTAssertEqual(state, "failed(\(special) cannot be read as a plugin library: not a regular file)")
            XCTAssertNil(LibraryFile.sha256(path: special))
        }
    }

    /// With a pin and `isolation: process`: build B renamed over the file, then the worker killed.
    /// The restarted worker runs build A, the content that was checked against the pin, and the
    /// hash the host shows is A's.
    func testARestartedWorkerRunsTheCheckedContentNotTheFileSwappedBehindThePin() throws {
        let pinned = SHA256.hex(of: Data(try libraryBytes()))
        try writeManifest(sha256: pinned, isolated: true)
        let host = try openHost()
        let engine = try host.events()
        let worker = try XCTUnwrap(host.registry.entry(id: "app")?.worker)
        guard case .running(let first) = worker.currentState else { return XCTFail(worker.stateDescription) }
        try ReloadTests.buildAppVersion(in: folder, attribute: "Build B")
        XCTAssertNotEqual(SHA256.hex(of: Data(try libraryBytes())), pinned)
        kill(first, SIGKILL)
        var tracked: Event?
        for _ in 0..<100 {  // the crash, then the backoff, then the restart: at most 10 s
            let event = try engine.track(Event(type: .namedEvent, name: "AFTER"))
            if case .running(let pid) = worker.currentState, pid != first,
                event[attribute: "App Version"] != nil || event[attribute: "Build B"] != nil
            {
                tracked = event
                break
            }
            usleep(100_000)
        }
        let event = try XCTUnwrap(tracked, "the worker did not restart: \(worker.stateDescription)")
        XCTAssertEqual(event[attribute: "App Version"], .string("1.0"), "the checked build A")
        XCTAssertNil(event[attribute: "Build B"], "the swapped file was never opened")
        XCTAssertEqual(host.registry.entry(id: "app")?.libraryHash, pinned)
    }

    /// A reload adding an in-process library that crashes as it loads (or in its create): the new
    /// content is tried in a worker first, so the crash refuses the reload instead of killing the
    /// host, and the running instance keeps serving.
    func testANewInProcessLibraryThatCrashesIsTriedInAWorkerAndRefused() throws {
        try writeManifest()
        let host = try openHost()
        let engine = try host.events()
        let crashing = try TestSupport.faultyFixture("CRASH_ON_LOAD", in: folder)
        var text = try String(contentsOfFile: folder + "/plugins.yaml", encoding: .utf8)
        text += "  - id: crashing\n    use: \(crashing)\n"
        try TestSupport.write(text, to: folder + "/plugins.yaml")
        let report = host.reload()
        XCTAssertEqual(report.outcome, .refused, "\(report)")
        XCTAssertEqual(
            report.problems,
            [
                "plugins: instance 'crashing' does not load: instance 'crashing' not loaded: its library was tried in a worker process first, as a new library in a running hubhost is, and failed there: crashed (SIGSEGV); it was not opened in hubhost itself"
            ])
        XCTAssertNil(host.registry.entry(id: "crashing"))
        XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "A"))[attribute: "App Version"], .string("1.0"))
        // A library this process already runs is not tried again: the same content under a new id loads at once.
        text = try String(contentsOfFile: folder + "/plugins.yaml", encoding: .utf8).replacingOccurrences(
            of: "  - id: crashing\n    use: \(crashing)\n", with: "  - id: app2\n    use: app-version/plugin.yaml\n    config: {version: \"2.0\"}\n")
        try TestSupport.write(text, to: folder + "/plugins.yaml")
        XCTAssertEqual(host.reload().added, ["app2"])
    }

    /// Opened in process, the library is mapped from its checked copy: the file cut short in place
    /// afterwards (a deploy that truncates, then writes) cannot fault the running plugin.
    func testAFileTruncatedInPlaceAfterLoadingDoesNotReachTheMappedLibrary() throws {
        try writeManifest()
        let host = try openHost()
        let engine = try host.events()
        XCTAssertEqual(truncate(library, 0), 0)
        for n in 0..<20 {
            XCTAssertEqual(try engine.track(Event(type: .namedEvent, name: "E\(n)"))[attribute: "App Version"], .string("1.0"))
        }
    }
}
