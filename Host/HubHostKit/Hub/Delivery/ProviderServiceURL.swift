import Foundation

extension HostManifest {
    /// The hub's provider instance: the one `hub.provider` names, else the first instance whose
    /// plugin exports a content_provider (index into `instances`).
    public var hubProviderIndex: Int? {
        if let id = hub.provider { return instances.firstIndex { $0.id == id } }
        return instances.firstIndex { $0.plugin?.kinds.contains(.contentProvider) ?? false }
    }

    /// Hands `hub.db_service_url` to the hub's provider instance: when that instance's plugin has a
    /// `db_service_url` config key and the instance leaves it empty, it gets hub.db_service_url, and
    /// the URL's host joins the instance's `http_allow` (naming the content service in hub: is
    /// the integrator's consent to reach it). Other instances and explicit values are untouched.
    /// Called once by `HostManifest.load`, before any plugin is created.
    mutating func fillProviderServiceURL() {
        guard hub.enabled, let url = hub.dbServiceURL, let index = hubProviderIndex else { return }
        var instance = instances[index]
        guard instance.plugin?.config.keys.contains(where: { $0.key == "db_service_url" }) ?? false else { return }
        if case .string(let given)? = instance.config["db_service_url"], !given.isEmpty { return }
        instance.config["db_service_url"] = .string(url)
        if let host = URL(string: url)?.host?.lowercased(), !instance.http.allowedHosts.contains(host) {
            instance.http.allowedHosts.append(host)
        }
        instances[index] = instance
    }
}
