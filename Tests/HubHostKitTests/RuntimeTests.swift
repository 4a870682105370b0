import Foundation
import XCTest

@testable import HubHostKit

/// The runtime embedded as a Swift app would: no CLI, no HTTP server. Its services deliver events
/// to a loopback collector and ping for campaigns on their own, and shut down with a last flush.
final class RuntimeTests: XCTestCase {
    func testTheRuntimeDeliversEventsAndPingsWithoutTheCLI() async throws {
        let folder = try TestSupport.temporaryFolder(self)
        let collector = try TestCollector()
        defer { collector.stop() }
        let list = #"{"currentPingMillis": 0, "nextPingMillis": 60000, "data": []}"#
        collector.routes = ["/config": (200, "{\"enabled\": true, \"pingUrl\": \"\(collector.url("/ping"))\"}"), "/ping": (200, list)]
        try TestSupport.write(
            """
            data_dir: data
            events: {collector_url: "\(collector.url)", flush_interval: 0.2, cache_size: 1000}
            campaigns: {config_url: "\(collector.url("/config"))"}
            hub: {enabled: false}
            plugins: []
            """, to: folder + "/plugins.yaml")
        let runtime = try HubHostRuntime(host: HubHost(manifestPath: folder + "/plugins.yaml"))
        let running = Task { try await runtime.run(signals: []) }
        let tracked = try runtime.host.events().track(Event(type: .namedEvent, name: "EMBEDDED"), autoFlush: false)
        // Bounded waits: the flush service runs every 0.2 s, the ping service at start.
        for _ in 0..<200 where !(collector.acceptedKeys.contains(tracked.id) && collector.hits("/ping") > 0) {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        XCTAssertTrue(collector.acceptedKeys.contains(tracked.id), "the delivery service posted the event")
        XCTAssertEqual(collector.hits("/config"), 1)
        XCTAssertEqual(collector.hits("/ping"), 1, "the ping service pinged once (the next ping is a minute away)")

        // Shutdown: the services end, the last flush posts what was tracked meanwhile.
        let late = try runtime.host.events().track(Event(type: .namedEvent, name: "LATE"), autoFlush: false)
        running.cancel()
        try await running.value
        XCTAssertTrue(collector.acceptedKeys.contains(late.id), "the final flush posted the late event")
    }

    func testCacheSizeWakesDeliveryWithoutWaitingForTheInterval() async throws {
        let folder = try TestSupport.temporaryFolder(self)
        let collector = try TestCollector()
        defer { collector.stop() }
        try TestSupport.write(
            """
            data_dir: data
            events: {collector_url: "\(collector.url)", flush_interval: 1 hr, cache_size: 3}
            campaigns: {enabled: false}
            hub: {enabled: false}
            plugins: []
            """, to: folder + "/plugins.yaml")
        let runtime = try HubHostRuntime(host: HubHost(manifestPath: folder + "/plugins.yaml"))
        let running = Task { try await runtime.run(signals: []) }
        let engine = try runtime.host.events()
        // Through the route's path: stored in one batch, delivery only signalled.
        let events = try engine.trackBatch((0..<3).map { Event(type: .namedEvent, name: "E\($0)") })
        try engine.signalDeliveryIfDue()
        for _ in 0..<200 where !events.allSatisfy({ collector.acceptedKeys.contains($0.id) }) {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        XCTAssertTrue(events.allSatisfy { collector.acceptedKeys.contains($0.id) }, "posted long before the hour's tick")
        running.cancel()
        try await running.value
    }
}
