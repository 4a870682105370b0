import Foundation
import HubHostKit

/// How the commands that show what is running (`plugins list`, `status`) find the serve of the
/// manifest, and what they say when they show a locally loaded one instead.
extension ManifestOption {
    /// The running serve of this manifest: at `url` when given, else at the manifest's `server:`.
    /// Nil when none answers there; a serve of another manifest at that address is reported on
    /// stderr (so the operator knows why it was not asked) and not used.
    func runningServe(_ url: String?) -> RunningServe? {
        guard let server = try? server(url) else { return nil }
        let mine = HostManifest.absolute(manifest, from: FileManager.default.currentDirectoryPath)
        switch RunningServe.find(url: server.url, token: server.token, manifest: mine) {
        case .success(let serve): return serve
        case .failure(let failure):
            if case .otherManifest = failure { Output.error("\(failure)") }
            return nil
        }
    }
}

/// The first line of a command's text output: whose host the rest shows.
enum ServeLookup {
    static func servedBy(_ url: String) -> String { "the hubhost serve at \(url)" }

    /// Said when the command loaded plugins.yaml itself: `local` when asked to (--local), else
    /// because no serve of the manifest answered.
    static func loadedLocally(asked local: Bool) -> String {
        local
            ? "plugins.yaml loaded in this command (--local); workers shown are this command's own"
            : "no hubhost serve answers for this manifest: plugins.yaml loaded in this command; workers shown are this command's own"
    }
}
