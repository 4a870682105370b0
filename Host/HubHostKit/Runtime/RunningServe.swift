import Foundation

/// The `hubhost serve` that runs a given plugins.yaml, found at its address and asked over its
/// HTTP API. The commands that show what is running (`plugins list`, `status`) ask it instead of
/// starting a host of their own, whose workers, reloads and logging would not be serve's.
public struct RunningServe: Sendable {
    /// Where serve answers, e.g. `http://127.0.0.1:8420` (no trailing slash).
    public let url: String
    /// The bearer token sent with every request (nil when none is configured).
    public let token: String?
    /// Its answer to `GET /v1/plugins` when it was found.
    package let plugins: PluginInstanceList

    /// Why no serve of the manifest was found, or why it did not answer a request.
    public enum Failure: Error, CustomStringConvertible, Sendable {
        /// Nothing answered at the address, or not as serve does.
        case noAnswer(url: String, reason: String)
        /// A serve answers there, but of another plugins.yaml (on the same port).
        case otherManifest(url: String, runs: String, asked: String)

        public var description: String {
            switch self {
            case .noAnswer(let url, let reason): return "no hubhost serve answers at \(url): \(reason)"
            case .otherManifest(let url, let runs, let asked): return "the hubhost serve at \(url) runs \(runs), not \(asked)"
            }
        }
    }

    /// The serve at `url` when it answers `GET /v1/plugins` within `timeoutSeconds` and runs
    /// `manifest` (an absolute path, `HostManifest.absolute`).
    public static func find(url: String, token: String?, manifest: String, timeoutSeconds: Double = 5) -> Result<RunningServe, Failure> {
        let base = url.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        switch get(PluginInstanceList.self, "/v1/plugins", base: base, token: token, timeoutSeconds: timeoutSeconds) {
        case .failure(let failure): return .failure(failure)
        case .success(let list):
            // A serve that does not say which manifest it runs is taken at its word: it is the one asked.
            if let runs = list.manifest, runs != manifest { return .failure(.otherManifest(url: base, runs: runs, asked: manifest)) }
            return .success(RunningServe(url: base, token: token, plugins: list))
        }
    }

    /// `GET path` of this serve, decoded as `T`. Blocking (at most `timeoutSeconds`): call it from
    /// a CLI command or the BlockingPool.
    public func get<T: Decodable>(_ type: T.Type, _ path: String, timeoutSeconds: Double = 5) -> Result<T, Failure> {
        Self.get(type, path, base: url, token: token, timeoutSeconds: timeoutSeconds)
    }

    private static func get<T: Decodable>(_ type: T.Type, _ path: String, base: String, token: String?, timeoutSeconds: Double) -> Result<T, Failure>
    {
        var headers: [String: String] = [:]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        switch HTTPFetcher().fetch("GET", base + path, headers: headers, timeoutSeconds: timeoutSeconds) {
        case .failure(let failure): return .failure(.noAnswer(url: base, reason: "\(failure)"))
        case .success(let response):
            guard response.status == 200 else { return .failure(.noAnswer(url: base, reason: "GET \(path) answered HTTP \(response.status)")) }
            do {
                return .success(try JSONDecoder().decode(T.self, from: response.body))
            } catch {
                return .failure(.noAnswer(url: base, reason: "GET \(path) answered what hubhost serve does not: \(error)"))
            }
        }
    }
}
