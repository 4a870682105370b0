import Foundation
import HubHostABI

/// One request a plugin makes through the host's HTTP service ("hubhost.http.v1"), whatever it
/// runs in: the C table of an in-process plugin and the `http_fetch` import of a WebAssembly guest
/// both build one and `perform` it, so the allow-list, the timeout cap and the redirect rule are
/// written once.
struct PluginHTTPRequest {
    var method: String
    var url: String
    var headers: [String: String]
    var body: Data?
    /// The plugin's timeout in ms; 0 means the policy's.
    var timeoutMs: UInt32

    /// Why a request got no response: the status the plugin sees, the message the host leaves as
    /// the plugin's report (nil: none), and for HH_ERR_IO what failed (the plugin only sees the status).
    struct Failure: Error {
        var status: Int32
        var report: String?
        var ioFailure: String?
    }

    /// Sends the request under `policy` for `instanceID`, blocking the calling thread (a plugin-call
    /// thread, never an event loop): a host outside `policy.allowedHosts`, first or after a
    /// redirect, is refused and logged as a warning on `pipeline`.
    func perform(policy: HostEnvironment.HTTPPolicy, instanceID: String, pipeline: LogPipeline) -> Result<HTTPFetcher.Response, Failure> {
        guard let target = URL(string: url), let hostName = target.host?.lowercased() else {
            return .failure(Failure(status: HH_ERR_INVALID_ARGUMENT, report: "'\(url)' is not a URL"))
        }
        guard policy.allowedHosts.contains(hostName) else {
            pipeline.log(
                .warning, source: instanceID,
                "HTTP request to \(hostName) refused: not in http_allow of instance '\(instanceID)' (allowed: \(policy.allowedHosts.isEmpty ? "none" : policy.allowedHosts.joined(separator: ", ")))"
            )
            return .failure(Failure(status: HH_ERR_UNSUPPORTED, report: nil))
        }
        var timeout = policy.timeoutSeconds
        if timeoutMs > 0 { timeout = min(timeout, Double(timeoutMs) / 1000) }
        let redirects = HTTPFetcher.Redirects.allowedHosts(policy.allowedHosts, owner: instanceID)
        switch HostExtensions.fetcher.fetch(method, url, headers: headers, body: body, timeoutSeconds: timeout, redirects: redirects) {
        case .success(let response):
            return .success(response)
        case .failure(.timedOut):
            return .failure(Failure(status: HH_ERR_TIMEOUT, report: nil))
        case .failure(.redirectRefused(let why)):
            // Refused as a first request to that host would be: the hop is outside http_allow.
            pipeline.log(.warning, source: instanceID, "HTTP request refused: \(why)")
            return .failure(Failure(status: HH_ERR_UNSUPPORTED, report: why))
        case .failure(let failure):
            return .failure(Failure(status: HH_ERR_IO, report: nil, ioFailure: failure.description))
        }
    }
}
