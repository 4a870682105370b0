import Foundation
import Logging
import Synchronization

/// Why an isolated call failed, in the words that go into the log and into the call's failure.
package enum WorkerFailure: Error, Equatable, CustomStringConvertible, Sendable {
    case crashed(String)
    case restarting(String)
    case gaveUp(String)
    /// The call ran past its budget (a WebAssembly guest out of fuel): a timeout.
    case timedOut(String)

    /// How a call refused during the worker's restart backoff begins: it never reached the plugin
    /// (the crash before it is what failed), which PluginEjection tells apart by it.
    static let restartingPrefix = "worker restarting after: "

    package var description: String {
        switch self {
        case .timedOut(let cause): return cause
        case .crashed(let cause): return cause
        case .restarting(let cause): return Self.restartingPrefix + cause
        case .gaveUp(let cause): return "worker given up: \(cause)"
        }
    }
}

/// The host side of one `isolation: process` plugin instance: a worker child process (`hubhost
/// worker`) that loads the library and runs its plugins, and the calls sent to it.
///
/// When the worker crashes, hangs past the call deadline or exits, the call in flight fails (each
/// kind adapter turns that into its kind's failure), the failure is logged once with the instance
/// id and the cause, and the worker is restarted on a later call after a backoff (100 ms, doubling,
/// at most 10 s). After `maxCrashes` crashes within `crashWindow` it is given up: calls fail at once.
/// hubhost itself never dies with it. Calls to one worker are serialized.
/// @unchecked: it owns OS handles (the child process, its socket and shared call slot) and state that
/// `lock` guards across a whole call (up to call_timeout), which a Mutex's closure cannot express;
/// every mutable field is read and written under `lock`.
package final class PluginWorker: @unchecked Sendable {
    package struct Settings: Sendable {
        package var instanceID: String
        package var manifestPath: String
        /// The library as the host read and checked it: the worker loads this content, handed over
        /// as a sealed descriptor at every start and restart, never the file at its path again.
        package var library: LibraryImage
        /// The file the library was read from.
        package var libraryPath: String { library.path }
        package var dataDirectory: String
        package var config: [String: PluginValue]
        package var logFilter: LogFilter
        /// Deadline of one call; a worker past it is killed (SIGKILL).
        package var callTimeoutMs: Int = 5000
        /// Address-space limit of the worker (RLIMIT_AS), so unbounded allocation ends the worker.
        package var memoryLimitMB: Int = 4096
        /// The HTTP policy of the plugin's instance, applied in the worker.
        package var http = HostEnvironment.HTTPPolicy()
        /// The variables of the host's environment the worker gets beside `passedEnvironment`.
        package var environment: [String] = []
        package var maxCrashes: Int = 5
        package var crashWindowSeconds: Int = 60
        package var initialBackoffMs: Int = 100
        package var maxBackoffMs: Int = 10_000
        /// The hubhost executable that runs `hubhost worker`.
        package var executable: String
        /// Calls cross a shared call slot; false sends them on the socket alone, as before the slot
        /// (`hubhost bench isolation` measures both).
        package var sharedSlot = true

        package init(
            instanceID: String, manifestPath: String, library: LibraryImage, dataDirectory: String,
            config: [String: PluginValue], logFilter: LogFilter, executable: String
        ) {
            self.instanceID = instanceID
            self.manifestPath = manifestPath
            self.library = library
            self.dataDirectory = dataDirectory
            self.config = config
            self.logFilter = logFilter
            self.executable = executable
        }
    }

    package enum State: Equatable, Sendable {
        case notStarted
        case running(pid: Int32)
        case restarting(cause: String)
        case gaveUp(crashes: Int, cause: String)
    }

    package let settings: Settings
    package var instanceID: String { settings.instanceID }
    private let pipeline: LogPipeline
    private let logger: Logger
    /// Serializes the calls to the worker and guards the fields below. An NSLock, not a Mutex: `call` holds it
    /// over a whole call (up to call_timeout), through lock()/unlock().
    private let lock = NSLock()
    private var pid: pid_t = 0
    /// A pidfd of the worker (-1 when the system has none): its exit is seen even when a process
    /// it forked still holds its socket.
    private var pidfd: Int32 = -1
    private var fd: Int32 = -1
    private var reader: FrameReader?
    /// The worker's shared call slot; nil when the system refused one (calls then go on the socket).
    private var slot: SharedCallSlot?
    /// The worker's count of log frames when the host last read them (SharedCallSlot.Word.logFrames).
    private var seenLogFrames: UInt32 = 0
    /// Under `lock`, which a call holds for its whole length (up to call_timeout); each change is
    /// also published to `published`, which health and the plugin list read without waiting for
    /// the call in flight.
    private var state: State = .notStarted {
        didSet { published.withLock { $0.state = state } }
    }
    /// What the readers outside the calls see: the state, the crashes and the library's ABI, each
    /// a copy of the field under `lock` as it last changed.
    private struct Published {
        var state: State = .notStarted
        var crashes = 0
        var libraryABI: ABIVersion?
    }
    private let published = Mutex(Published())
    private var crashTimes: [UInt64] = []
    private var restartAtNs: UInt64 = 0
    private var backoffMs: Int
    private var nextRequest: UInt32 = 0
    private var crashCount = 0 {  // under lock
        didSet { published.withLock { $0.crashes = crashCount } }
    }
    /// Crashes since start, for `plugins list`. Never waits for a call in flight.
    package var totalCrashes: Int { published.withLock { $0.crashes } }

    package init(settings: Settings, pipeline: LogPipeline) {
        self.settings = settings
        self.pipeline = pipeline
        self.backoffMs = settings.initialBackoffMs
        self.logger = Logger(label: "hubhost.isolation", pipeline: pipeline)
    }

    /// The state now. Never waits for a call in flight (health asks it on every request).
    package var currentState: State { published.withLock { $0.state } }

    /// Whether calls go through a shared call slot (else on the socket alone).
    var usesSharedSlot: Bool { lock.withLock { slot != nil } }

    /// For `plugins list`: running (pid), restarting, or given up after N crashes in the window.
    package var stateDescription: String {
        switch currentState {
        case .notStarted: return "not started"
        case .running(let pid): return "running (pid \(pid))"
        case .restarting(let cause): return "restarting (after: \(cause))"
        case .gaveUp(let crashes, let cause):
            return "given up after \(crashes) crashes in \(settings.crashWindowSeconds) s (last: \(cause))"
        }
    }

    /// Starts the worker and loads the plugins in it. A failure here (the library does not load, a
    /// create fails, the worker dies at start) is final for this instance, like an in-process one.
    package func start() throws -> [(id: String, kind: PluginKind)] {
        try lock.withLock {
            switch spawn() {
            case .success(let exports): return exports
            case .failure(let failure):
                state = .gaveUp(crashes: 0, cause: failure.reason)
                throw PluginLoadError.workerFailed(instance: instanceID, reason: failure.reason)
            }
        }
    }

    private var exports: [(id: String, kind: PluginKind)] = []
    private var libraryABIVersion: ABIVersion? {  // under lock
        didSet { published.withLock { $0.libraryABI = libraryABIVersion } }
    }
    /// The ABI version the library declares, as the worker read it (nil before a start).
    package var libraryABI: ABIVersion? { published.withLock { $0.libraryABI } }

    /// Sends one call and waits for its answer (feeding the worker's log records to the pipeline).
    func call(_ index: Int, _ op: WorkerOp, _ arguments: (inout WireWriter) -> Void) -> Result<WireReader, WorkerFailure> {
        var request = WireWriter()
        request.u8(FrameType.call.rawValue)
        lock.lock()
        defer { lock.unlock() }
        switch state {
        case .gaveUp(_, let cause): return .failure(.gaveUp(cause))
        case .restarting(let cause):
            if Clock.monotonicNs() < restartAtNs { return .failure(.restarting(cause)) }
            if case .failure(let failure) = spawn() { return .failure(recordCrash(failure.reason, during: "restart")) }
            logger.notice("instance '\(instanceID)': worker restarted (pid \(pid))")
            RuntimeMetrics.workerRestarted(instance: instanceID)
        case .notStarted: return .failure(.crashed("worker not started"))
        case .running: break
        }
        nextRequest &+= 1
        let id = nextRequest
        request.u32(id)
        request.u32(UInt32(index))
        request.u8(op.rawValue)
        arguments(&request)
        let answer = slot.map { slotCall($0, request.bytes, id: id, op: op) } ?? socketCall(request.bytes, id: id, op: op)
        switch answer {
        case .success(let bytes): return result(bytes, id: id, op: op)
        case .failure(let failure): return .failure(failure)
        }
    }

    /// Decodes a result frame's payload (from the slot or the socket) into the op's answer.
    private func result(_ bytes: [UInt8], id: UInt32, op: WorkerOp) -> Result<WireReader, WorkerFailure> {
        var reader = WireReader(bytes)
        guard (try? reader.u8()) == FrameType.result.rawValue, let answerID = try? reader.u32(), answerID == id,
            let ok = try? reader.bool()
        else {
            return .failure(recordCrash("broke the protocol (unexpected frame)", during: "\(op)"))
        }
        if !ok { return .failure(.crashed((try? reader.string()) ?? "the worker refused the call")) }
        backoffMs = settings.initialBackoffMs  // a good answer resets the backoff
        return .success(reader)
    }

    /// A call over the shared slot: the request is published there (or, too large, sent on the socket),
    /// the worker woken only when it sleeps; then the answer is awaited spinning on the slot for a short
    /// while, and after that asleep in poll on the socket, where the worker's wake frame, its log
    /// records, its death (the socket closes) and the call deadline all end the sleep.
    private func slotCall(_ slot: SharedCallSlot, _ request: [UInt8], id: UInt32, op: WorkerOp) -> Result<[UInt8], WorkerFailure> {
        let deadline = Clock.monotonicNs() + UInt64(settings.callTimeoutMs) * 1_000_000
        let fits = slot.postRequest(request, seq: id)
        if slot.takeSleeper(.workerWaiting), !FrameIO.write(fd, Self.wakeFrame, deadlineNs: deadline) {
            return .failure(writeFailed(op, deadline: deadline))
        }
        if !fits, !FrameIO.write(fd, request, deadlineNs: deadline) { return .failure(writeFailed(op, deadline: deadline)) }
        let answered = { slot.loadSeq(.answerSeq) == id }
        // Spin briefly first: a plugin call usually answers within microseconds.
        if !SharedCallSlot.spin(for: 50_000, until: answered) {
            while true {
                slot.announceSleep(.hostWaiting)
                if answered() {
                    // The worker may have taken the word first: then its wake frame is coming; read it
                    // now so wake frames never pile up in the socket.
                    if !slot.cancelSleep(.hostWaiting), case .failure(let failure) = awaitFrame(.wake, deadline: deadline, op: op) {
                        return .failure(failure)
                    }
                    break
                }
                switch awaitFrame(.wake, deadline: deadline, op: op) {
                case .success: continue
                case .failure(let failure): return .failure(failure)
                }
            }
        }
        let answer: [UInt8]
        switch slot.takeAnswer() {
        case .bytes(let bytes): answer = bytes
        case .onSocket:
            switch awaitFrame(.result, deadline: deadline, op: op) {
            case .success(let bytes): answer = bytes
            case .failure(let failure): return .failure(failure)
            }
        case .bad(let length):
            return .failure(recordCrash("broke the protocol (an answer of \(length) bytes in a \(slot.capacity) byte slot)", during: "\(op)"))
        }
        // Log records the plugin wrote during the call are on the socket: forward them before the call returns.
        let logFrames = slot.load(.logFrames)
        if logFrames != seenLogFrames {
            seenLogFrames = logFrames
            while let reader, case .frame(let bytes) = reader.next(deadlineNs: 0) {
                var frame = WireReader(bytes)
                if (try? frame.u8()) == FrameType.log.rawValue { forwardLog(&frame) }
            }
        }
        return .success(answer)
    }

    private static let wakeFrame = [FrameType.wake.rawValue]

    /// Reads frames until one of `type` (its payload), forwarding log records; fails the call as the
    /// worker's crash when it dies, breaks the protocol, or hangs past `deadline`.
    private func awaitFrame(_ type: FrameType, deadline: UInt64, op: WorkerOp) -> Result<[UInt8], WorkerFailure> {
        while true {
            switch reader!.next(deadlineNs: deadline) {
            case .frame(let bytes):
                var frame = WireReader(bytes)
                switch (try? frame.u8()).flatMap(FrameType.init(rawValue:)) {
                case .log?: forwardLog(&frame)
                case type?: return .success(bytes)
                case .wake?: continue  // a wake-up not needed any more: the answer is already there
                default: return .failure(recordCrash("broke the protocol (unexpected frame)", during: "\(op)"))
                }
            case .timedOut: return .failure(hung(op))
            case .closed: return .failure(recordCrash(exitCause(), during: "\(op)"))
            case .failed(let why):
                killWorker()
                reap()
                return .failure(recordCrash("socket failed: \(why)", during: "\(op)"))
            }
        }
    }

    /// A request that could not be written: the worker died, or stopped reading until the deadline.
    private func writeFailed(_ op: WorkerOp, deadline: UInt64) -> WorkerFailure {
        Clock.monotonicNs() >= deadline ? hung(op) : recordCrash(exitCause(), during: "\(op)")
    }

    private func hung(_ op: WorkerOp) -> WorkerFailure {
        killWorker()
        reap()
        return recordCrash("hung past its \(settings.callTimeoutMs) ms call deadline (killed)", during: "\(op)")
    }

    /// A call on the socket alone, for a worker without a shared slot (the system refused the memfd).
    private func socketCall(_ request: [UInt8], id: UInt32, op: WorkerOp) -> Result<[UInt8], WorkerFailure> {
        let deadline = Clock.monotonicNs() + UInt64(settings.callTimeoutMs) * 1_000_000
        guard FrameIO.write(fd, request, deadlineNs: deadline) else { return .failure(writeFailed(op, deadline: deadline)) }
        while true {
            // Spin briefly first: a plugin call usually answers within microseconds.
            switch reader!.next(deadlineNs: deadline, spinNs: 50_000) {
            case .frame(let bytes):
                var reader = WireReader(bytes)
                guard let type = try? reader.u8() else { return .failure(recordCrash("sent an empty frame", during: "\(op)")) }
                if type == FrameType.log.rawValue {
                    forwardLog(&reader)
                    continue
                }
                return .success(bytes)
            case .timedOut: return .failure(hung(op))
            case .closed:
                return .failure(recordCrash(exitCause(), during: "\(op)"))
            case .failed(let why):
                killWorker()
                reap()
                return .failure(recordCrash("socket failed: \(why)", during: "\(op)"))
            }
        }
    }

    /// Passes on a record the worker wrote. The worker writes its own frames, so what it says of
    /// itself is not trusted: the host names the instance as the source and stamps the time, and a
    /// record claiming another source keeps that claim only as text.
    private func forwardLog(_ reader: inout WireReader) {
        guard var record = try? reader.logRecord() else { return }
        if record.source != instanceID {
            record.message = "(says it is from \(Suggestion.clip(record.source))) " + record.message
        }
        record.source = instanceID
        record.timeMs = Clock.wallMs()
        pipeline.log(record)
    }

    /// Records a crash, logs it once, schedules the restart or gives up. Caller holds the lock.
    private func recordCrash(_ cause: String, during op: String) -> WorkerFailure {
        closeChannel()
        crashCount += 1
        RuntimeMetrics.pluginCallError(instance: instanceID, kind: "crash")
        let now = Clock.monotonicNs()
        let window = UInt64(settings.crashWindowSeconds) * 1_000_000_000
        crashTimes = crashTimes.filter { now - $0 < window } + [now]
        if crashTimes.count >= settings.maxCrashes {
            state = .gaveUp(crashes: crashTimes.count, cause: cause)
            logger.error(
                "instance '\(instanceID)': worker \(cause) during \(op); given up after \(crashTimes.count) crashes in \(settings.crashWindowSeconds) s, its calls fail until hubhost restarts"
            )
            return .gaveUp(cause)
        }
        state = .restarting(cause: cause)
        restartAtNs = now + UInt64(backoffMs) * 1_000_000
        logger.error(
            "instance '\(instanceID)': worker \(cause) during \(op); restarting in \(backoffMs) ms (crash \(crashTimes.count) of \(settings.maxCrashes) allowed in \(settings.crashWindowSeconds) s)"
        )
        backoffMs = min(backoffMs * 2, settings.maxBackoffMs)
        return .crashed(cause)
    }

    // MARK: The child process

    /// Starts a worker and performs the hello/ready handshake. Caller holds the lock. Long: the
    /// socket pair, the sealed library, the child's limits and environment, the spawn and the
    /// handshake share the descriptors that every failure on the way must close.
    private func spawn() -> Result<[(id: String, kind: PluginKind)], StartFailure> {
        var pair: [Int32] = [-1, -1]
        // Both ends close-on-exec from their creation: a worker another thread spawns at this
        // moment must not inherit them (holding this worker's end open, it would hide this
        // worker's death until the call's deadline). The child gets its end as fd 3 through dup2,
        // which clears the flag on the copy.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            return .failure(StartFailure(reason: "socketpair failed: \(String(cString: strerror(errno)))"))
        }
        // A descriptor that already is 3 or 4 is moved above them first: dup2 onto itself would
        // leave close-on-exec set, and the first dup2 would close one the second still needs.
        func aboveChildDescriptors(_ fd: Int32) -> Int32 {
            guard fd == 3 || fd == 4 else { return fd }
            let moved = fcntl(fd, F_DUPFD_CLOEXEC, 5)
            close(fd)
            return moved
        }
        pair[1] = aboveChildDescriptors(pair[1])
        guard pair[1] >= 0 else {
            close(pair[0])
            return .failure(StartFailure(reason: "cannot move the worker's socket: \(String(cString: strerror(errno)))"))
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pair[1], 3)
        // The shared call slot, the worker's fd 4.
        var shared = settings.sharedSlot ? SharedCallSlot.create() : nil
        if let created = shared {
            let moved = aboveChildDescriptors(created.fd)
            shared = moved >= 0 ? (created.0, moved) : nil
        }
        defer { if let memfd = shared?.fd { close(memfd) } }
        if let memfd = shared?.fd { posix_spawn_file_actions_adddup2(&actions, memfd, 4) }
        // The library's sealed content, the worker's fd 5.
        let image = aboveChildDescriptors(fcntl(settings.library.fd, F_DUPFD_CLOEXEC, 0))
        guard image >= 0 else {
            close(pair[0])
            close(pair[1])
            return .failure(StartFailure(reason: "cannot hand the library to the worker: \(String(cString: strerror(errno)))"))
        }
        defer { close(image) }
        posix_spawn_file_actions_adddup2(&actions, image, 5)
        let arguments = [settings.executable, "worker", "--fd", "3", "--instance", instanceID, "--memory-limit", String(settings.memoryLimitMB)]
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = Self.workerEnvironment(passing: settings.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // A process group of its own: whatever the plugin forks is killed with the worker.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        var child: pid_t = 0
        let spawned = posix_spawn(&child, settings.executable, &actions, &attributes, argv, envp)
        close(pair[1])
        guard spawned == 0 else {
            close(pair[0])
            return .failure(StartFailure(reason: "cannot start the worker \(settings.executable): \(String(cString: strerror(spawned)))"))
        }
        pid = child
        pidfd = Self.pidfdOpen.map { $0(child, 0) } ?? -1
        if pidfd >= 0 { _ = fcntl(pidfd, F_SETFD, FD_CLOEXEC) }
        fd = pair[0]
        reader = FrameReader(fd: fd, peerExit: pidfd)
        slot = shared?.0
        state = .running(pid: child)

        var hello = WireWriter()
        hello.u8(FrameType.hello.rawValue)
        hello.string(instanceID)
        hello.string(settings.manifestPath)
        hello.string(settings.libraryPath)
        hello.string(settings.library.sha256)
        hello.string(settings.dataDirectory)
        hello.i32(settings.logFilter.severity.rawValue)
        hello.i32(settings.logFilter.verbosity.rawValue)
        hello.u32(UInt32(settings.config.count))
        for (key, value) in settings.config.sorted(by: { $0.key < $1.key }) {
            hello.string(key)
            hello.value(value)
        }
        hello.u32(UInt32(settings.http.allowedHosts.count))
        for allowed in settings.http.allowedHosts { hello.string(allowed) }
        hello.f64(settings.http.timeoutSeconds)
        hello.u32(UInt32(slot?.capacity ?? 0))
        let deadline = Clock.monotonicNs() + UInt64(max(settings.callTimeoutMs, 10_000)) * 1_000_000
        guard FrameIO.write(fd, hello.bytes, deadlineNs: deadline) else { return .failure(StartFailure(reason: failStart(exitCause()))) }
        while true {
            switch reader!.next(deadlineNs: deadline) {
            case .frame(let bytes):
                var reader = WireReader(bytes)
                let type = try? reader.u8()
                if type == FrameType.log.rawValue {
                    forwardLog(&reader)
                    continue
                }
                guard type == FrameType.ready.rawValue, let ok = try? reader.bool() else {
                    return .failure(StartFailure(reason: failStart("broke the protocol at start")))
                }
                guard ok else {
                    let reason = (try? reader.string()) ?? "loading failed"
                    return .failure(StartFailure(reason: failStart(reason, kill: true)))
                }
                var loaded: [(id: String, kind: PluginKind)] = []
                let count = (try? reader.u32()) ?? 0
                for _ in 0..<count {
                    guard let id = try? reader.string(), let code = try? reader.i32(), let kind = PluginKind(code: code) else {
                        return .failure(StartFailure(reason: failStart("sent a bad plugin list")))
                    }
                    loaded.append((id, kind))
                }
                // A worker that could not map the slot says so; its calls then go on the socket.
                if (try? reader.bool()) != true { slot = nil }
                if let major = try? reader.u32(), let minor = try? reader.u32(), let patch = try? reader.u32() {
                    libraryABIVersion = ABIVersion(major: major, minor: minor, patch: patch)
                }
                seenLogFrames = slot?.load(.logFrames) ?? 0
                exports = loaded
                return .success(loaded)
            case .timedOut:
                return .failure(StartFailure(reason: failStart("did not start within the deadline", kill: true)))
            case .closed:
                return .failure(StartFailure(reason: failStart(exitCause())))
            case .failed(let why):
                return .failure(StartFailure(reason: failStart("socket failed at start: \(why)", kill: true)))
            }
        }
    }

    struct StartFailure: Error {
        var reason: String
    }

    private func failStart(_ reason: String, kill shouldKill: Bool = false) -> String {
        if shouldKill, pid > 0 {
            killWorker()
            reap()
        }
        closeChannel()
        return reason
    }

    /// Why the worker went away: its signal or exit status (waiting briefly for it to finish dying).
    private func exitCause() -> String {
        guard pid > 0 else { return "worker is gone" }
        var status: Int32 = 0
        var waited: pid_t = 0
        for _ in 0..<200 {  // up to 1 s
            waited = waitpid(pid, &status, WNOHANG)
            if waited != 0 { break }
            usleep(5000)
        }
        if waited == 0 {
            killWorker()
            waitpid(pid, &status, 0)
            pid = 0
            return "closed its socket and was killed"
        }
        kill(-pid, SIGKILL)  // what it forked goes with it (the group outlives its leader's exit)
        pid = 0
        let signal = status & 0x7f
        if signal != 0 { return "crashed (\(SignalName.of(signal)))" }
        return "exited with status \((status >> 8) & 0xff)"
    }

    private func reap() {
        guard pid > 0 else { return }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        kill(-pid, SIGKILL)
        pid = 0
    }

    /// Kills the worker and every process of its group (what its plugin forked), at once.
    private func killWorker() {
        guard pid > 0 else { return }
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
    }

    /// The environment a worker starts with: only what a program needs to run (PATH, HOME, the
    /// locale, TZ, TMPDIR, LD_LIBRARY_PATH), the variables its instance names (`environment:` in
    /// plugins.yaml), and SWIFT_BACKTRACE off (its crash is reported here, in one line). Nothing
    /// else of serve's environment reaches a plugin: not HUBHOST_TOKEN, not a cloud credential.
    static func workerEnvironment(
        passing names: [String], from environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String: String] {
        var passed = environment.filter { passedEnvironment.contains($0.key) || names.contains($0.key) }
        passed["SWIFT_BACKTRACE"] = "enable=no"
        return passed
    }

    /// The variables of serve's environment a worker inherits (docs/security.md).
    static let passedEnvironment: Set<String> = ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LD_LIBRARY_PATH"]

    private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    /// pidfd_open (glibc 2.36), when the system has it.
    private static let pidfdOpen: PidfdOpen? = {
        guard let symbol = dlsym(nil, "pidfd_open") else { return nil }
        return unsafeBitCast(symbol, to: PidfdOpen.self)
    }()

    private func closeChannel() {
        if fd >= 0 { close(fd) }
        fd = -1
        closePidfd()
        reader = nil
        slot = nil
        if pid > 0 {
            killWorker()
            reap()
        }
    }

    private func closePidfd() {
        if pidfd >= 0 { close(pidfd) }
        pidfd = -1
    }

    /// Asks the worker to destroy its plugins and exit; kills it if it does not within a second.
    package func stop() {
        lock.withLock {
            guard fd >= 0, pid > 0 else { return }
            var bye = WireWriter()
            bye.u8(FrameType.shutdown.rawValue)
            if FrameIO.write(fd, bye.bytes) {
                // Drain its last log records until it closes the socket.
                let deadline = Clock.monotonicNs() + 1_000_000_000
                while let reader, case .frame(let bytes) = reader.next(deadlineNs: deadline) {
                    var reader = WireReader(bytes)
                    if (try? reader.u8()) == FrameType.log.rawValue { forwardLog(&reader) }
                }
            }
            close(fd)
            fd = -1
            reader = nil
            slot = nil
            closePidfd()
            var status: Int32 = 0
            var reaped = false
            for _ in 0..<100 {
                if waitpid(pid, &status, WNOHANG) != 0 {
                    reaped = true
                    break
                }
                usleep(10_000)
            }
            if !reaped {
                killWorker()
                waitpid(pid, &status, 0)
            }
            kill(-pid, SIGKILL)  // what its plugin forked and left behind
            pid = 0
            state = .notStarted
        }
    }

    deinit { stop() }
}
