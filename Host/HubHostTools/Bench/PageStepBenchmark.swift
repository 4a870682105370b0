import Foundation
import HubHostKit

/// `hubhost bench hub`, the page's own work measured in process, beside the wrk runs (and before
/// them, so that the two never share the cores): what serving a hub page from memory costs
/// hubhost itself, without the HTTP framework, the sockets or wrk.
///
/// On its own scratch folder (a plugins.yaml with `hub.preloaded_bundle` set to the bundle, no
/// plugins, no logging), it opens the host, the hub and the event engine as `hubhost serve` does,
/// makes a reader active (so that the recorder's learning runs, as it does for an app's user),
/// presents the hub (WebContentHub.present) and renders every presented page once (`show`: the
/// hub, its channels, their articles; the pages `bench hub` sends wrk to). Then:
/// - the page step: `views` calls of `pageFromMemory` over the pages in rotation on the calling
///   thread, what a server's event loop runs for a cached page: the session's history, the
///   ContentTypeChanged notification, the view handed to the page-view recorder, and the page's
///   bytes (session id and chrome spliced in) copied into the buffer that is sent. The calling
///   thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and the wall time, per view. A view refused
///   because the recorder's queue is full goes through `show` (which waits for room), as the
///   server sends it to the blocking pool; those are counted.
/// - the recorder: its background work per view (the views' metrics written to events.sqlite,
///   the reads' learning in users.sqlite), the process's CPU time (getrusage, every thread) over
///   the loop and the drain that follows, less the loop thread's own, per view.
/// - the middlewares, when `middlewareStep` is set (the CLI sets it: this module cannot reach
///   the server's): serve's middlewares alone for one page request, per request. Measured after
///   the rest, outside the CPU figures above. The security headers have no per-request part: the
///   server converts `WebContentHub.pageHeaders` to HTTP fields once.
public struct PageStepBenchmark {
    public struct Result: Encodable, Sendable {
        /// Views measured (page step calls).
        public var views: Int
        /// Pages in rotation (the hub, its channels, their articles).
        public var pages: Int
        /// The loop thread's CPU time per view: the page step as served from memory.
        public var pageStepMicroseconds: Double
        /// The loop's wall time per view.
        public var pageStepWallMicroseconds: Double
        /// The process's other threads' CPU time per view over the loop and the recorder's drain:
        /// the view recorder's background work (metrics, learning).
        public var recorderMicrosecondsPerView: Double
        /// Views that `pageFromMemory` refused (the recorder's queue was full), shown with `show`.
        public var fellBackToShow: Int
        /// Seconds the recorder took to drain after the loop.
        public var drainSeconds: Double
        /// Serve's middlewares alone, wall time per request (nil: not measured).
        public var middlewareMicroseconds: Double?
        /// The page step, the recorder and the middlewares (when measured), per page view.
        public var totalMicroseconds: Double
    }

    /// The content bundle (a file or content folder) the hub presents.
    public var bundlePath: String
    /// Page views measured.
    public var views: Int
    /// Runs N page requests through `hubhost serve`'s middlewares alone (no route work, no
    /// socket) and returns the microseconds per request; nil: not measured.
    public var middlewareStep: ((Int) throws -> Double)?

    public init(bundlePath: String, views: Int = 20_000) {
        self.bundlePath = bundlePath
        self.views = views
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        guard views > 0 else { throw PageServingBenchmark.Failure.failed("the page step needs at least one view") }
        let folder = NSTemporaryDirectory() + "hubhost-bench-page-step-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let manifest = folder + "/plugins.yaml"
        try """
        data_dir: data
        logging: {severity: none}
        hub:
          preloaded_bundle: \(bundlePath)
        plugins: []
        """.write(toFile: manifest, atomically: true, encoding: .utf8)

        progress("page step: opening the hub on the bundle")
        let host = try HubHost(manifestPath: manifest)
        defer { host.shutdown() }
        guard let engine = try host.hub() else { throw PageServingBenchmark.Failure.failed("page step: the hub is disabled") }
        let web = WebContentHub(engine: engine, events: try host.events())
        // A reader, as an app has: each article read teaches its tags (the recorder's learning).
        try engine.users.createUser(id: "bench-reader")
        try engine.users.activate("bench-reader")

        let presented = web.present()
        guard presented.status == 200, let presentation = web.currentSession?.presentation else {
            throw PageServingBenchmark.Failure.failed("page step: presenting the hub answered \(presented.status)")
        }
        // The order of `bench hub`'s wrk paths: the hub, its channels, then every channel's articles.
        var locations: [HubPageLocation] = [.hub]
        for channel in presentation.channels { locations.append(.channel(channel.id)) }
        for channel in presentation.channels {
            for article in channel.articles { locations.append(.article(article.id)) }
        }
        progress("page step: rendering \(locations.count) pages")
        for location in locations {
            let shown = web.show(location)
            guard shown.status == 200 else { throw PageServingBenchmark.Failure.failed("page step: \(location.path) answered \(shown.status)") }
        }
        // One round from memory (warm), then nothing pending before the measured loop starts.
        for location in locations {
            if web.pageFromMemory(location) == nil { _ = web.show(location) }
        }
        engine.viewRecorder.waitUntilDrained()
        try host.events().waitForBackgroundWrites()

        progress("page step: \(views) views from memory over \(locations.count) pages")
        var fellBack = 0
        let processStart = PrefetchDownloadBenchmark.cpuSeconds(children: false)
        let threadStart = Self.threadCPUSeconds()
        let wallStart = Clock.monotonicNs()
        for index in 0..<views {
            let location = locations[index % locations.count]
            if web.pageFromMemory(location) == nil {
                fellBack += 1
                _ = web.show(location)
            }
        }
        let wallNs = Clock.monotonicNs() - wallStart
        let threadSeconds = Self.threadCPUSeconds() - threadStart
        let drainStart = Clock.monotonicNs()
        guard engine.viewRecorder.waitUntilDrained(timeoutSeconds: 300) else {
            throw PageServingBenchmark.Failure.failed("page step: the view recorder did not drain within 300 s")
        }
        try host.events().waitForBackgroundWrites()
        let drainNs = Clock.monotonicNs() - drainStart
        let processSeconds = PrefetchDownloadBenchmark.cpuSeconds(children: false) - processStart

        var middleware: Double?
        if let middlewareStep {
            progress("page step: \(views) requests through serve's middlewares")
            middleware = try middlewareStep(views)
        }
        let perView = 1e6 / Double(views)
        let pageStep = threadSeconds * perView
        let recorder = max(0, processSeconds - threadSeconds) * perView
        return Result(
            views: views, pages: locations.count, pageStepMicroseconds: pageStep, pageStepWallMicroseconds: Double(wallNs) / 1e3 / Double(views),
            recorderMicrosecondsPerView: recorder, fellBackToShow: fellBack, drainSeconds: Double(drainNs) / 1e9,
            middlewareMicroseconds: middleware, totalMicroseconds: pageStep + recorder + (middleware ?? 0))
    }

    /// The calling thread's CPU time (user and system) in seconds.
    static func threadCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
