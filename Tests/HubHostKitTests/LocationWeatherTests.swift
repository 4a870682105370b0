import Foundation
import HubHostTools
import PluginTestKit
import XCTest

/// The bundled location and weather augmentations: location from the location delegate, weather
/// from an Open-Meteo-like endpoint on 127.0.0.1 through the host's HTTP service and its allow-list.
final class LocationWeatherTests: FolderTestCase {
    private var server: TestCollector!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try TestCollector()
        addTeardownBlock { [server] in server?.stop() }
    }

    private func host(allow: String = "[127.0.0.1]", endpoint: String? = nil, weatherConfig: String = "") throws -> (HubHost, LogCapture) {
        try TestSupport.write(
            """
            data_dir: data
            logging: {severity: info}
            events: {cache_size: 100}
            plugins:
              - id: place
                use: \(TestSupport.plugin("FixedLocation"))
                config: {latitude: 47.6097, longitude: -122.3422, name: Pike Place Market, address: 85 Pike St}
              - id: location
                use: \(TestSupport.plugin("LocationAugmentation"))
              - id: weather
                use: \(TestSupport.plugin("WeatherAugmentation"))
                http_allow: \(allow)
                config: {endpoint: "\(endpoint ?? server.forecastURL)"\(weatherConfig)}
            """, to: folder + "/plugins.yaml")
        let capture = LogCapture()
        let host = try HubHost(manifestPath: folder + "/plugins.yaml", extraDestinations: [capture])
        addTeardownBlock { host.shutdown() }
        return (host, capture)
    }

    func testEventsGetLocationAndWeatherAndTheWeatherIsCached() throws {
        let (host, _) = try host()
        XCTAssertEqual(host.registry.entries.map(\.state.name), ["loaded", "loaded", "loaded"])
        let engine = try host.events()
        let tracked = try engine.track(Event(type: .namedEvent, name: "PLAYER LOADED"))
        XCTAssertEqual(tracked.status, .notPosted)
        XCTAssertEqual(tracked[attribute: "Latitude"], .double(47.6097))
        XCTAssertEqual(tracked[attribute: "Longitude"], .double(-122.3422))
        XCTAssertEqual(tracked[attribute: "Location Name"], .string("Pike Place Market"))
        XCTAssertEqual(tracked[attribute: "Location Address"], .string("85 Pike St"))
        XCTAssertEqual(tracked[attribute: "Temperature C"], .double(11.5))
        XCTAssertEqual(tracked[attribute: "Temperature F"], .double(52.7))
        XCTAssertEqual(tracked[attribute: "Weather Conditions"], .string("Overcast"))
        XCTAssertEqual(server.forecastRequests, ["/v1/forecast?latitude=47.6097&longitude=-122.3422&current=temperature_2m,weather_code"])
        _ = try engine.track(Event(type: .namedEvent, name: "AGAIN"))
        XCTAssertEqual(server.forecastRequests.count, 1, "the second event used the cached answer")
    }

    func testAHostNotAllowedIsRefusedAndTheEventGoesOnWithoutWeather() throws {
        let (host, capture) = try host(allow: "[]")
        let tracked = try host.events().track(Event(type: .namedEvent, name: "NO NETWORK"))
        XCTAssertEqual(tracked[attribute: "Latitude"], .double(47.6097))
        XCTAssertNil(tracked[attribute: "Temperature C"])
        XCTAssertTrue(server.forecastRequests.isEmpty, "the host refused the request before it left")
        XCTAssertTrue(
            capture.messages.contains { $0.hasPrefix("HTTP request to 127.0.0.1 refused: not in http_allow of instance 'weather'") },
            "\(capture.messages)")
        XCTAssertTrue(
            capture.messages.contains {
                $0.hasPrefix(
                    "augmentation 'weather/weather' failed on event \(tracked.id) (HH_ERR_UNSUPPORTED): the weather endpoint's host is not in this instance's http_allow"
                )
            }, "\(capture.messages)")
    }

    /// An allowed host that redirects to another name (`localhost`, the same machine): the hop is
    /// checked against http_allow before it is followed, refused with the host it pointed to, and
    /// followed once that name is allowed too.
    func testARedirectToAHostOutsideHttpAllowIsNotFollowed() throws {
        let redirector = try LoopbackHTTPServer(address: "127.0.0.1")
        let target = server.forecastURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        redirector.start { fd, _ in LoopbackHTTPServer.respond(fd, 302, headers: ["Location": target], Data()) }
        addTeardownBlock { redirector.stop() }
        let endpoint = "http://127.0.0.1:\(redirector.port)/v1/forecast"
        let (refusedHost, capture) = try host(endpoint: endpoint)
        let tracked = try refusedHost.events().track(Event(type: .namedEvent, name: "REDIRECTED"))
        XCTAssertNil(tracked[attribute: "Temperature C"])
        XCTAssertTrue(server.forecastRequests.isEmpty, "nothing reached the host the redirect named")
        XCTAssertTrue(
            capture.messages.contains {
                $0.contains("a redirect to localhost was refused: not in http_allow of instance 'weather' (allowed: 127.0.0.1)")
            }, "\(capture.messages)")
        refusedHost.shutdown()
        let (allowedHost, _) = try host(allow: "[127.0.0.1, localhost]", endpoint: endpoint)
        let followed = try allowedHost.events().track(Event(type: .namedEvent, name: "FOLLOWED"))
        XCTAssertEqual(followed[attribute: "Temperature C"], .double(11.5))
        XCTAssertEqual(server.forecastRequests.count, 1)
    }

    func testAFailingEndpointLosesNoEvent() throws {
        server.forecast = (500, "{}")
        let (host, capture) = try host()
        let tracked = try host.events().track(Event(type: .namedEvent, name: "E"))
        XCTAssertEqual(tracked.status, .notPosted)
        XCTAssertNil(tracked[attribute: "Temperature C"])
        XCTAssertTrue(capture.messages.contains { $0.contains("the weather endpoint answered HTTP 500") }, "\(capture.messages)")
        server.forecast = (200, #"{"current":{"temperature_2m":"warm"}}"#)
        let second = try host.events().track(Event(type: .namedEvent, name: "E2"))
        XCTAssertNil(second[attribute: "Temperature C"])
        XCTAssertTrue(capture.messages.contains { $0.contains("has no current.temperature_2m and current.weather_code") })
    }

    func testWeatherAloneWithPluginTestKit() throws {
        let harness = try PluginHarness(
            manifest: TestSupport.plugin("WeatherAugmentation"),
            config: ["endpoint": .string(server.forecastURL), "cache_lifespan": .string("0s")],
            environment: HostEnvironment(http: .init(allowedHosts: ["127.0.0.1"], timeoutSeconds: 5)))
        defer { harness.destroy() }
        server.forecast = (200, #"{"current":{"temperature_2m":-3.0,"weather_code":73}}"#)
        let out = harness.augment(PluginHarness.event(attributes: [("Latitude", .double(60.17)), ("Longitude", .int(25))]))
        XCTAssertEqual(out.status, 0)
        XCTAssertEqual(out.event[attribute: "Temperature C"], .double(-3))
        XCTAssertEqual(out.event[attribute: "Temperature F"], .double(26.6))
        XCTAssertEqual(out.event[attribute: "Weather Conditions"], .string("Snow fall"))
        let none = harness.augment(PluginHarness.event(name: "NO COORDINATES"))
        XCTAssertEqual(none.event.attributes.count, 0, "no coordinates, nothing added")
        XCTAssertEqual(server.forecastRequests.count, 1)
    }

    func testLocationAugmentationAloneWithPluginTestKit() throws {
        let harness = try PluginHarness(manifest: TestSupport.plugin("LocationAugmentation"), config: ["latitude_field": .string("lat")])
        defer { harness.destroy() }
        let out = harness.augment(PluginHarness.event())
        XCTAssertEqual(out.event[attribute: "lat"], .double(47.6097))
        XCTAssertEqual(out.event[attribute: "Location Name"], .string("Test Place"))
        XCTAssertTrue(AugmentationPlugin(try XCTUnwrap(harness.plugin(kind: .augmentation))).processSynchronously)
    }

    func testLocationAugmentationWithoutALocationPluginSaysWhatToDo() throws {
        try TestSupport.write(
            """
            plugins:
              - id: location
                use: \(TestSupport.plugin("LocationAugmentation"))
            """, to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        defer { host.shutdown() }
        guard case .failed(let error) = host.registry.entries[0].state else { return XCTFail("loaded without a location service") }
        XCTAssertTrue(
            error.description.contains("no location service: add a location plugin (e.g. fixed-location) before this one"), error.description)
    }
}
