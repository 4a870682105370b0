import Foundation
import HubHostABI

/// The catalog service as the prefetch engine reaches it: through a `content_provider` plugin
/// instance (the kind the Content Hub uses), so that a deployment can swap the transport (another
/// service, a local folder). The provider is asked for two resource names with a query string
/// (`prefetch/register?...`, `prefetch/catalog?...`) and returns the JSON document; the engine
/// parses and checks it. Blocking: call from the BlockingPool or a CLI thread.
/// Sendable: its only field is the `let` ContentProviderPlugin, which is Sendable.
final class CatalogService: Sendable {
    let provider: ContentProviderPlugin
    /// The largest document read (a catalog page): a broken service cannot fill memory.
    static let maxDocumentBytes = 64 << 20

    init(provider: ContentProviderPlugin) { self.provider = provider }

    static func query(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return pairs.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
    }

    private func document<T: Decodable>(_ resource: String, as type: T.Type) throws -> T {
        let fetched = provider.fetch(resource, limit: Self.maxDocumentBytes)
        guard fetched.status == HH_OK else {
            throw PrefetchError.service(
                "\(StatusCode.name(fetched.status)): \(fetched.message.isEmpty ? "the provider gave no reason" : fetched.message)")
        }
        do { return try JSONDecoder().decode(T.self, from: fetched.data) } catch {
            throw PrefetchError.service("the answer to \(resource.split(separator: "?").first ?? "") is not the expected JSON (\(error))")
        }
    }

    func register(license: String, deviceID: String) throws -> CatalogProtocol.RegisterAnswer {
        let answer = try document(
            "prefetch/register?" + Self.query([("license", license), ("device_id", deviceID)]),
            as: CatalogProtocol.RegisterAnswer.self)
        if let policy = answer.policy {
            do { try CatalogProtocol.checkPolicy(policy) } catch { throw PrefetchError.service("\(error)") }
        }
        if answer.registered {
            guard let id = answer.registrationId, CatalogProtocol.isValidID(id) else {
                throw PrefetchError.service("registration accepted without a valid registration_id")
            }
        }
        return answer
    }

    func lookup(deviceID: String, registration: String, source: String, contentIds: [String]) throws -> CatalogProtocol.LookupAnswer {
        let pairs = [("device_id", deviceID), ("registration", registration), ("source", source)] + contentIds.map { ("content_id", $0) }
        return try document("prefetch/items?" + Self.query(pairs), as: CatalogProtocol.LookupAnswer.self)
    }

    func catalog(deviceID: String, registration: String, since cursor: String?) throws -> CatalogProtocol.CatalogDelta {
        var pairs = [("device_id", deviceID), ("registration", registration)]
        if let cursor { pairs.append(("since", cursor)) }
        return try document("prefetch/catalog?" + Self.query(pairs), as: CatalogProtocol.CatalogDelta.self)
    }
}
