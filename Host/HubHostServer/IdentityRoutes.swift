import Foundation
import HubHostKit
import Hummingbird

/// The HTTP API of the mobile identity manager: a thin front end over `HubHost.identity()`, like
/// `hubhost identity`.
///
///   GET  /v1/identity          the ids and any merge pending in the journal (no request is sent)
///   POST /v1/identity/setup    {"mobileUserId"?: "..."}: set up the recipient; {"recipientId", "mobileUserId", "created"}
///   POST /v1/identity/check    {"columns": {"facebook_id": "100"}}: {"outcome", "recipientId", "mobileUserId", "mergedRecipientId"?}
///
/// Errors (APIError): 400 bad input, 409 a state that refuses (no mobile user id with auto
/// tracking off, a merge that stopped and stays journaled), 502 an XMLAPI fault or service
/// failure (code xmlapi_fault with the errorid in the message, or xmlapi_unavailable), 503 the
/// identity section is not configured (host or databaseListId missing).
enum IdentityRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let identity = router.group("/v1/identity")
        identity.get("") { _, _ in
            try await withIdentity(host) { HTTPAPI.json(try $0.status()) }
        }
        identity.post("/setup") { request, _ in
            struct Setup: Decodable { var mobileUserId: String? }
            let setup = try await HTTPAPI.decode(Setup.self, from: request, empty: Setup())
            return try await withIdentity(host) { manager in
                if let id = setup.mobileUserId { try manager.setMobileUserID(id) }
                return HTTPAPI.json(try manager.setupRecipient())
            }
        }
        identity.post("/check") { request, _ in
            struct Check: Decodable { var columns: [String: String] }
            let check = try await HTTPAPI.decode(Check.self, from: request)
            guard !check.columns.isEmpty else {
                throw APIError(.badRequest, "'columns' must name at least one column, e.g. {\"columns\": {\"facebook_id\": \"100\"}}")
            }
            let columns = check.columns.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            return try await withIdentity(host) { HTTPAPI.json(try $0.checkIdentity(columns)) }
        }
    }

    /// Runs `work` on the BlockingPool (SQLite and XMLAPI requests block), mapping identity errors.
    static func withIdentity(_ host: HubHost, _ work: @escaping @Sendable (MobileIdentityManager) throws -> Response) async throws -> Response {
        try await HTTPAPI.blocking {
            do {
                return try work(try host.identity())
            } catch let error as XMLAPIError {
                switch error {
                case .notConfigured: throw APIError(.serviceUnavailable, error.description, code: "not_configured")
                case .fault: throw APIError(.badGateway, error.description, code: "xmlapi_fault")
                default: throw APIError(.badGateway, error.description, code: "xmlapi_unavailable")
                }
            } catch let error as MobileIdentityManager.Failure {
                throw APIError(.conflict, error.description)
            } catch let error as IdentityStore.Refused {
                throw APIError(.conflict, error.description)
            }
        }
    }
}
