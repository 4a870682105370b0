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
public final class HTTPFetcher: Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: Data
    }

    public enum Failure: Error, Equatable, CustomStringConvertible, Sendable {
        case timedOut(String)
        case unreachable(String)
        case invalidURL(String)

        public var description: String {
            switch self {
            case .timedOut(let url): return "no answer from \(url) before the deadline"
            case .unreachable(let why): return why
            case .invalidURL(let url): return "'\(url)' is not an http(s) URL"
            }
        }
    }

    /// The process's one client (never shut down: it lives as long as the process). A refused
    /// connection fails at once instead of being retried until the deadline, and a connection
    /// attempt may take at most 10 s, so an absent collector costs milliseconds, not post_timeout.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()

    /// The largest response body read (a bundle is fetched in Range chunks far below it).
    public static let maxBodyBytes = 256 << 20

    public init() {}

    public func fetch(
        _ method: String, _ url: String, headers: [String: String] = [:], body: Data? = nil,
        timeoutSeconds: Double
    ) -> Result<Response, Failure> {
        guard let target = URL(string: url), let scheme = target.scheme?.lowercased(), ["http", "https"].contains(scheme), target.host != nil else {
            return .failure(.invalidURL(url))
        }
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            return .failure(
                .unreachable("\(url): a blocking HTTP request was made on an event loop (a hubhost bug: it must run on the BlockingPool)"))
        }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(
                url: url, method: HTTPMethod(rawValue: method.uppercased()),
                headers: HTTPHeaders(headers.map { ($0.key, $0.value) }),
                body: body.map { .bytes($0) })
        } catch {
            return .failure(.invalidURL(url))
        }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(SafeTime.durationNs(max(0.001, timeoutSeconds))))
        do {
            let response = try Self.client.execute(request: request, deadline: deadline).wait()
            var fields: [String: String] = [:]
            for (name, value) in response.headers { fields[name.lowercased()] = fields[name.lowercased()].map { $0 + ", " + value } ?? value }
            var buffer = response.body ?? ByteBuffer()
            guard buffer.readableBytes <= Self.maxBodyBytes else {
                return .failure(.unreachable("\(url): the answer is larger than \(Self.maxBodyBytes) bytes"))
            }
            return .success(
                Response(status: Int(response.status.code), headers: fields, body: Data(buffer.readBytes(length: buffer.readableBytes) ?? [])))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failure(.timedOut(url))
        } catch {
            return .failure(.unreachable("\(url): \(Self.describe(error))"))
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
