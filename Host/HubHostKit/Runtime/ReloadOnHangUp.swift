import Foundation
import ServiceLifecycle
import UnixSignals

/// Reloads plugins.yaml each time the process gets SIGHUP (`kill -HUP <serve>`), as nginx and
/// Fluent Bit do: HubHost.reload on the BlockingPool, one at a time, its outcome logged and posted
/// as a PluginsReloaded notification. Ends with the service group's graceful shutdown.
package struct ReloadOnHangUp: Service {
    let host: HubHost

    package init(host: HubHost) { self.host = host }

    package func run() async throws {
        let host = self.host
        let hangUps = await UnixSignalsSequence(trapping: .sighup)
        for await _ in hangUps.cancelOnGracefulShutdown() {
            _ = try? await BlockingPool.run { host.reload() }
        }
    }
}
