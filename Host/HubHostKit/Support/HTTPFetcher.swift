import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Blocking HTTP requests with a deadline, for event delivery, OAuth, campaign pings, the web hub's
/// whitelisted fetches and the plugins' HTTP service extension (whose C callers block by contract).
/// Built on AsyncHTTPClient (connection pooling, whole-request deadlines) and one process-wide
/// client. Call it from a thread that may block (the BlockingPool, a plugin's call, a CLI command),
/// never from an event loop: there it refuses the request instead of deadlocking the loop.
package final class HTTPFetcher: Sendable {
    package struct Response: Sendable {
        package var status: Int
        package var headers: [String: String]
        package var body: Data
    }

    package enum Failure: Error, Equatable, CustomStringConvertible, Sendable {
        case timedOut(String)
        case unreachable(String)
        case invalidURL(String)
        /// A redirect was not followed: its target is outside what the caller allows, not http(s),
        /// or one hop too many. Nothing was sent to the target.
        case redirectRefused(String)

        package var description: String {
            switch self {
            case .timedOut(let url): return "no answer from \(url) before the deadline"
            case .unreachable(let why): return why
            case .invalidURL(let url): return "'\(url)' is not an http(s) URL"
            case .redirectRefused(let why): return why
            }
        }
    }

    /// Which redirects a request follows. Each hop is checked before anything is sent to it; at
    /// most `maxRedirects` are followed.
    package enum Redirects: Sendable {
        /// Hops that stay on the host of the URL asked for (any port, http or https): what the
        /// host's own requests (collector, XMLAPI, OAuth, campaign endpoints, whitelisted pages) follow.
        case sameHost
        /// Hops to a host in the list (lower case): a plugin instance's `http_allow`, named in the
        /// refusal as `owner`.
        case allowedHosts([String], owner: String)
        /// None: a 3xx is the answer.
        case none
    }

    /// The most redirects one request follows.
    package static let maxRedirects = 5

    /// Why `target`, a redirect from `from` (the URL asked for first), may not be followed; nil when it may.
    static func refusal(of target: URL, from first: URL, _ redirects: Redirects) -> String? {
        guard let scheme = target.scheme?.lowercased(), ["http", "https"].contains(scheme), let host = target.host?.lowercased() else {
            return "a redirect to '\(target.absoluteString)' was refused: not an http(s) URL"
        }
        switch redirects {
        case .none:
            return nil
        case .sameHost:
            let origin = first.host?.lowercased() ?? ""
            return host == origin ? nil : "a redirect to \(host) was refused: only redirects on \(origin) are followed"
        case .allowedHosts(let allowed, let owner):
            return allowed.contains(host)
                ? nil
                : "a redirect to \(host) was refused: not in http_allow of instance '\(owner)' (allowed: \(allowed.isEmpty ? "none" : allowed.joined(separator: ", ")))"
        }
    }

    /// Where a 3xx answer points, resolved against the URL that answered; nil when it is not a
    /// redirect (no Location, or a status other than 301, 302, 303, 307, 308).
    static func redirectTarget(status: Int, location: String?, from url: URL) -> URL? {
        guard [301, 302, 303, 307, 308].contains(status), let location, !location.isEmpty else { return nil }
        return URL(string: location, relativeTo: url)?.absoluteURL
    }

    /// The process's one client (never shut down: it lives as long as the process). A refused
    /// connection fails at once instead of being retried until the deadline, and a connection
    /// attempt may take at most 10 s, so an absent collector costs milliseconds, not post_timeout.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow  // followed by `fetch`, hop by hop, after its check
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()

    /// The largest response body a plugin's request reads (a bundle is fetched in Range chunks far
    /// below it); the host's own requests name smaller limits.
    package static let maxBodyBytes = 256 << 20
    /// The limit of the host's own requests whose answer is a status and a small document (the
    /// collector's answer, an OAuth token, an XMLAPI envelope, campaign endpoints).
    package static let maxSmallAnswerBytes = 16 << 20

    package init() {}

    /// Sends one request and waits for the whole answer, at most `timeoutSeconds` for all of it,
    /// redirects included. Redirects are followed as `redirects` allows (after a 303, and a 301 or
    /// 302 to a POST, as a GET without a body; 307 and 308 keep the method and body); the
    /// Authorization header is not sent to another host. The answer's body is read as it arrives
    /// and the request ends as soon as it passes `maxBodyBytes` (a declared Content-Length past it
    /// ends it before any of the body is read): an answer past the limit never costs more memory than
    /// the limit.
    package func fetch(
        _ method: String, _ url: String, headers: [String: String] = [:], body: Data? = nil,
        timeoutSeconds: Double, redirects: Redirects = .sameHost, maxBodyBytes: Int = HTTPFetcher.maxBodyBytes
    ) -> Result<Response, Failure> {
        guard let first = URL(string: url), let scheme = first.scheme?.lowercased(), ["http", "https"].contains(scheme), first.host != nil else {
            return .failure(.invalidURL(url))
        }
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            return .failure(
                .unreachable("\(url): a blocking HTTP request was made on an event loop (a hubhost bug: it must run on the BlockingPool)"))
        }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(SafeTime.durationNs(max(0.001, timeoutSeconds))))
        var current = first
        var method = method.uppercased()
        var headers = headers
        var body = body
        for hop in 0...Self.maxRedirects {  // bounded: at most maxRedirects hops
            let answer = send(method, current, headers: headers, body: body, deadline: deadline, maxBodyBytes: maxBodyBytes)
            if case .none = redirects { return answer }
            guard case .success(let response) = answer,
                let target = Self.redirectTarget(status: response.status, location: response.headers["location"], from: current)
            else { return answer }
            if hop == Self.maxRedirects {
                return .failure(.redirectRefused("\(url): more than \(Self.maxRedirects) redirects"))
            }
            if let refusal = Self.refusal(of: target, from: first, redirects) {
                return .failure(.redirectRefused("\(current.absoluteString): \(refusal)"))
            }
            if response.status == 303 || ([301, 302].contains(response.status) && method == "POST") {
                method = "GET"
                body = nil
                headers = headers.filter { !["content-type", "content-length"].contains($0.key.lowercased()) }
            }
            if target.host?.lowercased() != current.host?.lowercased() {
                headers = headers.filter { !["authorization", "cookie"].contains($0.key.lowercased()) }
            }
            current = target
        }
        return .failure(.redirectRefused("\(url): more than \(Self.maxRedirects) redirects"))  // not reached: the last hop returns
    }

    /// One request, no redirect followed.
    private func send(
        _ method: String, _ url: URL, headers: [String: String], body: Data?, deadline: NIODeadline, maxBodyBytes: Int
    ) -> Result<Response, Failure> {
        let text = url.absoluteString
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(
                url: text, method: HTTPMethod(rawValue: method),
                headers: HTTPHeaders(headers.map { ($0.key, $0.value) }),
                body: body.map { .bytes($0) })
        } catch {
            return .failure(.invalidURL(text))
        }
        do {
            // The accumulator counts the body as it arrives and ends the request past the limit.
            let limit = max(0, min(maxBodyBytes, Self.maxBodyBytes))
            let accumulator = ResponseAccumulator(request: request, maxBodySize: limit)
            let response = try Self.client.execute(request: request, delegate: accumulator, deadline: deadline).wait()
            var fields: [String: String] = [:]
            for (name, value) in response.headers { fields[name.lowercased()] = fields[name.lowercased()].map { $0 + ", " + value } ?? value }
            var buffer = response.body ?? ByteBuffer()
            return .success(
                Response(status: Int(response.status.code), headers: fields, body: Data(buffer.readBytes(length: buffer.readableBytes) ?? [])))
        } catch let error as ResponseAccumulator.ResponseTooBigError {
            return .failure(
                .unreachable("\(text): the answer is larger than \(ByteCount.text(error.maxBodySize)), the most hubhost reads of it"))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failure(.timedOut(text))
        } catch {
            return .failure(.unreachable("\(text): \(Self.describe(error))"))
        }
    }

    static func describe(_ error: Error) -> String {
        if let channel = error as? NIOConnectionError, let first = channel.connectionErrors.first {
            return "cannot connect (\(first.error))"
        }
        if let io = error as? IOError { return io.description }
        return "\(error)"
    }
}
