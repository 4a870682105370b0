import Foundation
import XCTest

@testable import HubHostKit

/// What the prefetch tests share: a temporary folder, a PrefetchTestService on 127.0.0.1
/// (stopped when the test ends) and plugins.yaml in the folder with the bundled
/// http-content-provider, instance `catalog`, reading that service.
class PrefetchTestCase: XCTestCase {
    var folder = ""
    var service: PrefetchTestService!
    /// The folder's plugins.yaml.
    var manifestPath: String { folder + "/plugins.yaml" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = try TestSupport.temporaryFolder(self)
        service = try PrefetchTestService()
        addTeardownBlock { [service] in service?.stop() }
    }

    /// The bundled http-content-provider as instance `catalog`, reading `service`.
    var catalogPlugin: ManifestText.Plugin {
        ManifestText.Plugin(
            id: "catalog", use: TestSupport.plugin("HTTPContentProvider"),
            ("config", ManifestText.flow(("db_service_url", ManifestText.quoted(service.serviceURL)))),
            ("http_allow", "[127.0.0.1]"))
    }

    /// plugins.yaml text: `data_dir: data`, the `sections`, `prefetch: {enabled: true<prefetch>}`
    /// (`prefetch` goes on after `enabled: true`, e.g. ", license: good-licence"), then the
    /// catalog plugin and `plugins`.
    func prefetchManifest(
        _ prefetch: String, sections: [(key: String, value: String)] = [],
        plugins: [ManifestText.Plugin] = []
    ) -> ManifestText {
        ManifestText(
            sections: [("data_dir", "data")] + sections + [("prefetch", "{enabled: true\(prefetch)}")],
            plugins: [catalogPlugin] + plugins)
    }

    /// Writes `manifest` to plugins.yaml.
    func writeManifest(_ manifest: ManifestText) throws {
        try TestSupport.write(manifest.description, to: manifestPath)
    }

    /// Writes `manifest` to plugins.yaml and opens a host on it (shut down when the test ends),
    /// with its prefetch engine (`license` as the command line's licence).
    func openEngine(_ manifest: ManifestText, license: String? = nil) throws -> (HubHost, PrefetchEngine) {
        try writeManifest(manifest)
        let host = try HubHost(manifestPath: manifestPath)
        addTeardownBlock { host.shutdown() }
        return (host, try XCTUnwrap(host.prefetch(license: license)))
    }
}
