import Foundation
import Logging

extension HubEngine {
    /// `hub.preloaded_bundle` (a bundle shipped with the app) is shown at once when no other
    /// bundle is active. Minimal version for the web hub and its tests: it opens the file as a
    /// bundle; the bundle store (signature verification, the stored active bundle) replaces this.
    func activatePreloadedBundleIfNone() {
        guard activeBundle == nil, let path = settings.preloadedBundle, !path.isEmpty else { return }
        do {
            activate(try ContentBundle(path: path))
        } catch {
            Logger(label: "hubhost.hub", pipeline: pipeline).error("hub.preloaded_bundle: \(error)")
        }
    }
}
