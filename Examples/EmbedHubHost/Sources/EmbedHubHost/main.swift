import Foundation
import HubHostKit

// Usage: EmbedHubHost [plugins.yaml]
// Starts the hubhost runtime from a manifest, tracks an event, presents the Content Hub and reads
// the next in-app message, then runs the engines' background work until SIGINT or SIGTERM.
let manifest = CommandLine.arguments.dropFirst().first ?? "plugins.yaml"
let host = try HubHost(manifestPath: manifest)
let runtime = try HubHostRuntime(host: host)

let events = try host.events()
let tracked = try events.track(Event(type: .namedEvent, name: "EMBEDDED APP STARTED", attributes: [.init("Example", .bool(true))]))
print("tracked \(tracked.id) (\(tracked.status.rawValue))")

if let hub = try host.hub() {
    do {
        let presentation = try hub.present()
        print("hub: \(presentation)")
    } catch {
        print("hub: nothing to present yet (\(error))")
    }
}
if let campaigns = try host.campaigns() {
    print("next message: \(campaigns.next(allowedContexts: [])?.id ?? "none")")
}

try await runtime.run()
