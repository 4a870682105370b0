import ArgumentParser
import Foundation
import HubHostKit
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `hubhost hub watch`: prints the notification stream of a running `hubhost serve`
/// (GET /v1/notifications, server-sent events), one line per notification.
struct HubWatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the notifications of a running hubhost serve (hub state, download progress, content shown, app actions).",
        discussion: """
            Connects to GET /v1/notifications of the server at --url (default: server: in plugins.yaml) \
            and prints each notification as it comes: its time, name and values, or with --json its JSON \
            ({"name": ..., "payload": {...}, "timestampMs": ...}). Stops after --count notifications \
            (of the --name'd kinds, when given) or after --timeout seconds; with --count, running out of \
            time first is an error (exit status 1).
            """)

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    @Option(help: "The server, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).")
    var url: String?

    @Option(parsing: .unconditional, help: "Stop after this many notifications.")
    var count: Int?

    @Option(parsing: .unconditional, help: "Stop after this many seconds.")
    var timeout: Double?

    @Option(help: "Only these notification names (repeatable), e.g. --name AppAction.")
    var name: [String] = []

    @Flag(help: "First print the server's recent notifications (up to 64).")
    var replay = false

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let timeout, timeout <= 0 { throw ValidationError("--timeout must be more than 0 seconds") }
    }

    func run() throws {
        let server = try manifestOption.server(url)
        let base = server.url
        guard
            let streamURL = URL(
                string: base.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/v1/notifications" + (replay ? "?replay=1" : ""))
        else {
            throw ValidationError("'\(base)' is not a URL; expected e.g. http://127.0.0.1:8420")
        }
        let reader = ServerSentEventReader(names: Set(name), limit: count, json: output.json)
        let outcome = reader.run(streamURL, token: server.token, timeout: timeout)
        switch outcome {
        case .done: return
        case .timedOut:
            if let count {
                Output.error("hub watch: \(reader.printed) of \(count) notifications within \(timeout ?? 0) s")
                throw ExitCode.failed
            }
        case .failed(let message):
            Output.error("hub watch: \(streamURL.absoluteString): \(message) (is hubhost serve running there?)")
            throw ExitCode.failed
        }
    }
}

/// Reads a server-sent-event stream and prints its events until a count, a deadline or the end.
/// Sendable: the bytes not yet parsed, the outcome and the count printed live in a Mutex; the rest
/// are `let`s of Sendable types.
final class ServerSentEventReader: NSObject, URLSessionDataDelegate, Sendable {
    enum Outcome { case done, timedOut, failed(String) }

    private let names: Set<String>
    private let limit: Int?
    private let json: Bool
    /// How an event prints as text (event name, data); nil: as a HostNotification.
    private let format: (@Sendable (String, String) -> String)?
    private struct State {
        var buffer = Data()
        var finished: Outcome?
        var printed = 0
    }
    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)
    /// How many events were printed.
    var printed: Int { state.withLock { $0.printed } }

    init(names: Set<String>, limit: Int?, json: Bool, format: (@Sendable (String, String) -> String)? = nil) {
        self.names = names
        self.limit = limit
        self.json = json
        self.format = format
    }

    /// Follows the stream at `url`, sending `token` as the bearer token when the server has one.
    func run(_ url: URL, token: String? = nil, timeout: Double?) -> Outcome {
        var request = URLRequest(url: url)
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.timeoutInterval = 30  // idle time; the server sends a keep-alive comment every 2 s
        let session = URLSession(configuration: .default, delegate: self, delegateQueue: nil)
        let task = session.dataTask(with: request)
        task.resume()
        let waited =
            timeout.map { done.wait(timeout: .now() + $0) }
            ?? {
                done.wait()
                return .success
            }()
        if waited == .timedOut { finish(.timedOut) }  // before cancelling, which ends the task as "done"
        task.cancel()
        session.invalidateAndCancel()
        return state.withLock { $0.finished } ?? .done
    }

    private func finish(_ outcome: Outcome) {
        let first: Bool = state.withLock { state in
            guard state.finished == nil else { return false }
            state.finished = outcome
            return true
        }
        if first { done.signal() }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        if let http = response as? HTTPURLResponse, http.statusCode != 200 {
            finish(.failed("HTTP \(http.statusCode)"))
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let blocks: [String] = state.withLock { state in
            state.buffer.append(data)
            var blocks: [String] = []
            while let end = state.buffer.range(of: Data("\n\n".utf8)) {
                blocks.append(String(decoding: state.buffer[state.buffer.startIndex..<end.lowerBound], as: UTF8.self))
                state.buffer.removeSubrange(state.buffer.startIndex..<end.upperBound)
            }
            return blocks
        }
        for block in blocks { handle(block) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        if let error, (error as NSError).code != NSURLErrorCancelled {
            finish(.failed(error.localizedDescription))
        } else {
            finish(.done)
        }
    }

    private func handle(_ block: String) {
        var event = ""
        var data = ""
        for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix(":") { continue }  // a comment (keep-alive)
            if line.hasPrefix("event:") { event = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("data:") { data += line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
        }
        guard !event.isEmpty, names.isEmpty || names.contains(event) else { return }
        let reached: Bool = state.withLock { state in
            guard state.finished == nil, limit.map({ state.printed < $0 }) ?? true else { return false }
            state.printed += 1
            if json {
                print(data)
            } else if let format {
                print(format(event, data))
            } else {
                let notification = try? JSONDecoder().decode(HostNotification.self, from: Data(data.utf8))
                let time = notification.map { ServerSentEventReader.time($0.timestampMs) } ?? ""
                let values = (notification?.payload ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.plainText)" }.joined(
                    separator: " ")
                print([time, event, values].filter { !$0.isEmpty }.joined(separator: " "))
            }
            fflush(nil)
            return limit.map { state.printed >= $0 } ?? false
        }
        if reached { finish(.done) }
    }

    static func time(_ ms: Int64) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss.SSS"
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
