import Foundation
import HTTPTypes
import HubHostKit
import Hummingbird
import NIOCore

/// The campaign engine (in-app messages) over HTTP. Every route answers 404 (code `disabled`)
/// when `campaigns: enabled: false`.
///
///   GET  /v1/campaigns                   every loaded campaign with its impressions, opt-out and readiness
///   POST /v1/campaigns/{id}/opt-out      the user opted out of the campaign (durable)
///   GET  /v1/campaigns/{id}/preview      the message as an HTML page (CampaignPreview): no impression, no event
///   GET  /v1/campaigns/user              the campaign user (user id, tracking identifier)
///   PUT  /v1/campaigns/user              {"userId", "idTrackingIdentifier", "accessToken"?}: set it and re-ping
///   GET  /v1/messages/next?context=C     the next in-app message that may show (204 when none; a held one
///                                        names its pause or cap in the Hubhost-Hold-Reason header)
///   GET  /v1/messages/stream?context=C   server-sent events: the next message (or why it is held) whenever it changes
///   POST /v1/messages/{id}/later         put the message back in the queue, checked again when it comes up
///   GET  /v1/messages/pause              whether messages are paused, and until when
///   POST /v1/messages/pause              {"until": ms?, "for": "15m"?}: hold every message
///   POST /v1/messages/resume             end the pause
///   POST /v1/messages/{id}/impression    the message was shown: one impression
///   POST /v1/messages/close              {"clear_queued_campaigns": bool}: close without an impression
enum CampaignRoutes {
    static func add(
        to router: Router<BasicRequestContext>, campaigns: CampaignEngine?, source: CampaignSettings, images: CampaignImageCache,
        frameAncestors: String
    ) {
        @Sendable func engine() throws -> CampaignEngine {
            guard let campaigns else { throw APIError.engineOff("campaigns are disabled (campaigns: enabled: false)") }
            return campaigns
        }
        addCampaigns(router.group("/v1/campaigns"), engine: engine, source: source, images: images, frameAncestors: frameAncestors)
        addMessages(router.group("/v1/messages"), engine: engine)
    }

    /// `/v1/campaigns`: the list, opt-out, preview and the campaign user.
    private static func addCampaigns(
        _ campaignPaths: RouterGroup<BasicRequestContext>, engine: @escaping @Sendable () throws -> CampaignEngine,
        source: CampaignSettings, images: CampaignImageCache, frameAncestors: String
    ) {
        campaignPaths.get("") { _, _ in
            let campaigns = try engine()
            return HTTPAPI.json(try await HTTPAPI.blocking { campaigns.statuses() })
        }
        campaignPaths.post("/:id/opt-out") { _, context in
            let campaigns = try engine()
            let id = context.parameters.get("id") ?? ""
            do { try await HTTPAPI.blocking { try campaigns.optOut(id) } } catch let error as CampaignEngine.NotFound {
                throw APIError(.notFound, error.description)
            } catch let error as CampaignEngine.NotAllowed {
                throw APIError(.conflict, error.description)
            }
            return HTTPAPI.json(["status": "opted_out", "id": id])
        }
        campaignPaths.get("/:id/preview") { _, context in
            let campaigns = try engine()
            let id = context.parameters.get("id") ?? ""
            let page: CampaignPreview.Page
            do {
                page = try await HTTPAPI.blocking { try campaigns.preview(id, images: images, frameAncestors: frameAncestors) }
            } catch let error as CampaignEngine.NotFound {
                throw APIError(.notFound, error.description)
            }
            RequestMetrics.inMemory()
            return Response(
                status: .ok, headers: HubWebRoutes.fields(contentType: "text/html; charset=utf-8", page.headers),
                body: .init(byteBuffer: ByteBuffer(string: page.html)))
        }
        campaignPaths.get("/user") { _, _ in
            let user = try engine().user
            return HTTPAPI.json(UserView(userId: user.userID, idTrackingIdentifier: user.idTrackingIdentifier, accessToken: nil))
        }
        campaignPaths.put("/user") { request, _ in
            let campaigns = try engine()
            let user = try await HTTPAPI.decode(UserView.self, from: request)
            try await HTTPAPI.blocking {
                try campaigns.setUser(.init(userID: user.userId, idTrackingIdentifier: user.idTrackingIdentifier, accessToken: user.accessToken))
                // As registerPreference: a new user re-pings when a network source is set.
                if source.configURL != nil || source.pingURL != nil {
                    _ = try? campaigns.sync(configURL: source.configURL, pingURL: source.pingURL, http: HTTPFetcher())
                }
            }
            return HTTPAPI.json(UserView(userId: user.userId, idTrackingIdentifier: user.idTrackingIdentifier, accessToken: nil))
        }
    }

    /// `/v1/messages`: the next message, its stream, later, pause and resume, impressions and close.
    private static func addMessages(
        _ messages: RouterGroup<BasicRequestContext>, engine: @escaping @Sendable () throws -> CampaignEngine
    ) {
        messages.get("/next") { request, _ in
            let campaigns = try engine()
            let contexts = request.uri.queryParameters.getAll("context").map { String($0) }
            let answer = try await HTTPAPI.blocking { campaigns.nextMessage(allowedContexts: contexts) }
            guard let message = answer.message else {
                var headers = HTTPFields()
                if let held = answer.held { headers[CampaignRoutes.holdReasonHeader] = held.rawValue }
                return Response(status: .noContent, headers: headers)
            }
            return HTTPAPI.json(message)
        }
        messages.get("/stream") { request, _ in
            let campaigns = try engine()
            let contexts = request.uri.queryParameters.getAll("context").map { String($0) }
            return messageStream(campaigns, contexts: contexts)
        }
        messages.post("/:id/later") { _, context in
            let campaigns = try engine()
            let id = context.parameters.get("id") ?? ""
            do { try await HTTPAPI.blocking { try campaigns.later(id) } } catch let error as CampaignEngine.NotFound {
                throw APIError(.notFound, error.description)
            } catch let error as CampaignEngine.NotAllowed {
                throw APIError(.conflict, error.description)
            }
            return HTTPAPI.json(["status": "later", "id": id])
        }
        messages.get("/pause") { _, _ in
            let campaigns = try engine()
            return HTTPAPI.json(try await HTTPAPI.blocking { campaigns.pauseState })
        }
        messages.post("/pause") { request, _ in
            let campaigns = try engine()
            let body = try await HTTPAPI.decode(PauseRequest.self, from: request, empty: PauseRequest())
            let until = try body.untilMs(now: Clock.wallMs())
            do {
                return HTTPAPI.json(
                    try await HTTPAPI.blocking {
                        try campaigns.pause(untilMs: until)
                        return campaigns.pauseState
                    })
            } catch let error as CampaignEngine.Refused {
                throw APIError(.badRequest, error.description)
            }
        }
        messages.post("/resume") { _, _ in
            let campaigns = try engine()
            return HTTPAPI.json(
                try await HTTPAPI.blocking {
                    try campaigns.resume()
                    return campaigns.pauseState
                })
        }
        messages.post("/:id/impression") { _, context in
            let campaigns = try engine()
            let id = context.parameters.get("id") ?? ""
            do { _ = try await HTTPAPI.blocking { try campaigns.displayed(id) } } catch let error as CampaignEngine.NotFound {
                throw APIError(.notFound, error.description)
            }
            RuntimeMetrics.messageShown()
            return HTTPAPI.json(["status": "counted"])
        }
        messages.post("/close") { request, _ in
            let campaigns = try engine()
            struct Close: Decodable { var clear_queued_campaigns: Bool? }
            let clear = try await HTTPAPI.decode(Close.self, from: request, empty: Close()).clear_queued_campaigns ?? false
            try await HTTPAPI.blocking { campaigns.close(clearQueue: clear) }
            return HTTPAPI.json(["status": "closed"])
        }
    }

    /// `GET /v1/messages/stream`: the engine's message stream (`CampaignEngine.messageStream`) as
    /// server-sent events: `event: message` with a StreamEvent at once and whenever the answer
    /// changes, `event: withdrawn` with the id and reason when a message sent stops being the one.
    /// A message sent is the current message, as `GET /v1/messages/next` hands it out.
    static func messageStream(_ campaigns: CampaignEngine, contexts: [String]) -> Response {
        ServerSentEventStream.response(prelude: "hubhost messages") { continuation in
            let task = Task {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                for await event in campaigns.messageStream(allowedContexts: contexts) {
                    guard let data = try? encoder.encode(event) else { continue }
                    continuation.yield("event: \(event.name.rawValue)\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
                }
            }
            return { task.cancel() }
        }
    }

    /// The header of a 204 from `GET /v1/messages/next` naming what holds a ready message.
    static let holdReasonHeader = HTTPField.Name("Hubhost-Hold-Reason")!

    /// `POST /v1/messages/pause`: `until` (ms since 1970) or `for` (a duration, e.g. "15m"), or neither.
    struct PauseRequest: Decodable {
        var until: Int64?
        var `for`: String?

        func untilMs(now: Int64) throws -> Int64? {
            if until != nil && self.for != nil { throw APIError(.badRequest, "give until or for, not both") }
            guard let text = self.for else { return until }
            switch EngageDuration.parse(text) {
            case .success(let seconds) where seconds > 0 && seconds <= FrequencyCaps.maxSeconds:
                return now + Int64(seconds * 1000)
            case .success(let seconds):
                throw APIError(.badRequest, "for must be more than 0 and at most 366 days; got \(seconds) s")
            case .failure(let error):
                throw APIError(.badRequest, "for: \(error)")
            }
        }
    }

    /// The campaign user as the API reads and writes it; the access token is never answered.
    struct UserView: Codable {
        var userId: String
        var idTrackingIdentifier: String
        var accessToken: String?
    }
}
