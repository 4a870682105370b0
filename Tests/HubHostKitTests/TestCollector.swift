import Foundation
import HubHostTools

/// A real HTTP server on 127.0.0.1 (plain sockets, one connection at a time) that plays an event
/// collector and an OAuth token endpoint, with faults on demand: an HTTP status, a hang, a closed
/// connection. It records every request it read.
final class TestCollector: @unchecked Sendable {
    enum Behavior: Equatable {
        case status(Int)
        /// Read the request, then never answer (until the server stops).
        case hang
        /// Read the request, then close the connection without an answer.
        case close
    }

    typealias Request = LoopbackHTTPServer.Request

    private let lock = NSLock()
    private let server: LoopbackHTTPServer
    private var script: [Behavior] = []
    private var fallback: Behavior = .status(200)
    private var received: [Request] = []
    private var tokenCount = 0

    /// The address it listens on (a loopback address such as 127.0.0.1 or 127.0.0.2).
    var address: String { server.address }
    var port: UInt16 { server.port }

    /// Starts listening on `address` (default 127.0.0.1) on a free port.
    init(address: String = "127.0.0.1") throws {
        server = try LoopbackHTTPServer(address: address)
        server.start(answeringWith: self) { service, fd, request in service.handle(fd, request) }
    }

    var url: String { "http://127.0.0.1:\(port)/collect" }
    /// An Open-Meteo-like forecast endpoint.
    var forecastURL: String { "http://127.0.0.1:\(port)/v1/forecast" }
    /// What the forecast endpoint answers (status, body).
    var forecast: (status: Int, body: String) {
        get { lock.withLock { forecastAnswer } }
        set { lock.withLock { forecastAnswer = newValue } }
    }
    private var forecastAnswer = (
        status: 200,
        body:
            #"{"latitude":47.61,"current_units":{"temperature_2m":"°C"},"current":{"time":"2026-11-22T08:00","temperature_2m":11.5,"weather_code":3}}"#
    )
    /// Fixed answers for other paths (e.g. a campaign config or ping endpoint): path -> (status, body).
    var routes: [String: (status: Int, body: String)] {
        get { lock.withLock { fixedRoutes } }
        set { lock.withLock { fixedRoutes = newValue } }
    }
    private var fixedRoutes: [String: (status: Int, body: String)] = [:]
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }
    /// The path (with its query) of every request recorded, in order.
    var paths: [String] { lock.withLock { received.map(\.path) } }
    /// How many requests each fixed route got.
    func hits(_ path: String) -> Int { lock.withLock { received.filter { $0.path == path }.count } }

    /// The paths (with queries) of the forecast requests received.
    var forecastRequests: [String] { lock.withLock { received.filter { $0.path.hasPrefix("/v1/forecast") }.map(\.path) } }
    var tokenURL: String { "http://127.0.0.1:\(port)/token" }

    /// The next requests to /collect get these behaviors in order, then `then` for the rest.
    func script(_ behaviors: [Behavior], then: Behavior = .status(200)) {
        lock.withLock {
            script = behaviors
            fallback = then
        }
    }

    var requests: [Request] { lock.withLock { received.filter { $0.path == "/collect" } } }
    var tokenRequests: Int { lock.withLock { tokenCount } }

    /// The idempotency keys of the events in every batch the collector accepted (answered 2xx).
    var acceptedKeys: [String] { lock.withLock { accepted } }
    private var accepted: [String] = []

    func stop() { server.stop() }

    deinit { stop() }

    private func handle(_ fd: Int32, _ request: Request) {
        if request.path == "/token" {
            lock.withLock { tokenCount += 1 }
            let token = "token-\(lock.withLock { tokenCount })"
            respond(fd, 200, "{\"access_token\":\"\(token)\",\"expires_in\":3600,\"token_type\":\"bearer\"}")
            return
        }
        if let fixed = lock.withLock({ () -> (status: Int, body: String)? in
            guard let answer = fixedRoutes[request.path] else { return nil }
            received.append(request)
            return answer
        }) {
            respond(fd, fixed.status, fixed.body)
            return
        }
        if request.path.hasPrefix("/v1/forecast") {
            let answer = lock.withLock { () -> (status: Int, body: String) in
                received.append(request)
                return forecastAnswer
            }
            respond(fd, answer.status, answer.body)
            return
        }
        let behavior: Behavior = lock.withLock {
            received.append(request)
            return script.isEmpty ? fallback : script.removeFirst()
        }
        switch behavior {
        case .status(let code):
            if (200..<300).contains(code), let json = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
                let events = json["events"] as? [[String: Any]]
            {
                lock.withLock { accepted += events.compactMap { $0["idempotencyKey"] as? String } }
            }
            respond(fd, code, "{}")
        case .hang:
            server.keepOpen(fd)  // closed by stop()
        case .close:
            close(fd)
        }
    }

    private func respond(_ fd: Int32, _ code: Int, _ body: String) {
        LoopbackHTTPServer.respond(fd, code, headers: ["Content-Type": "application/json"], Data(body.utf8))
    }
}

extension LoopbackHTTPServer {
    /// Serves with `owner`'s handler, holding `owner` weakly: once the test's service is gone, a
    /// request that still arrives is closed unanswered.
    func start<Owner: AnyObject & Sendable>(answeringWith owner: Owner, _ handle: @escaping @Sendable (Owner, Int32, Request) -> Void) {
        start { [weak owner] fd, request in
            guard let owner else {
                close(fd)
                return
            }
            handle(owner, fd, request)
        }
    }
}
