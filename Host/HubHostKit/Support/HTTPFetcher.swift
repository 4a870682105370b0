import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Blocking HTTP requests with a deadline, for the event delivery, OAuth and the plugins' HTTP
/// service extension. Uses Foundation's URLSession (libcurl on Linux): no extra dependency.
public final class HTTPFetcher: @unchecked Sendable {
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

    private let session: URLSession

    public init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 4
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    public func fetch(_ method: String, _ url: String, headers: [String: String] = [:], body: Data? = nil,
                      timeoutSeconds: Double) -> Result<Response, Failure> {
        guard let target = URL(string: url), let scheme = target.scheme?.lowercased(), ["http", "https"].contains(scheme), target.host != nil else {
            return .failure(.invalidURL(url))
        }
        var request = URLRequest(url: target, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeoutSeconds)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        final class Box: @unchecked Sendable { var result: Result<Response, Failure>? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            if let error = error as? URLError {
                box.result = .failure(error.code == .timedOut ? .timedOut(url) : .unreachable("\(url): \(error.localizedDescription)"))
            } else if let error {
                box.result = .failure(.unreachable("\(url): \(error.localizedDescription)"))
            } else if let http = response as? HTTPURLResponse {
                var headers: [String: String] = [:]
                for (key, value) in http.allHeaderFields { headers["\(key)".lowercased()] = "\(value)" }
                box.result = .success(Response(status: http.statusCode, headers: headers, body: data ?? Data()))
            } else {
                box.result = .failure(.unreachable("\(url): no HTTP response"))
            }
            done.signal()
        }
        task.resume()
        // URLSession enforces timeoutInterval between bytes; this bounds the whole request too.
        if done.wait(timeout: .now() + timeoutSeconds + 1) == .timedOut {
            task.cancel()
            return .failure(.timedOut(url))
        }
        return box.result ?? .failure(.unreachable("\(url): no result"))
    }
}
