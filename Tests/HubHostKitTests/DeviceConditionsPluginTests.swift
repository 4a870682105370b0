import Foundation
import HubHostABI
import XCTest

@testable import HubHostKit

/// The `device_conditions` kind (ABI 1.1): the bundled fixed and Linux plugins through the Swift
/// wrapper, the fixed plugin following its file, and out-of-range answers refused in process and
/// under `isolation: process`.
final class DeviceConditionsPluginTests: FolderTestCase {
    /// A host with `plugins` (YAML list items), and the device_conditions plugins it loaded.
    private func host(_ plugins: String) throws -> (HubHost, [DeviceConditionsPlugin]) {
        try TestSupport.write("data_dir: data\nlogging: {severity: info}\nplugins:\n\(plugins)", to: folder + "/plugins.yaml")
        let host = try HubHost(manifestPath: folder + "/plugins.yaml")
        addTeardownBlock { host.shutdown() }
        return (host, host.registry.plugins(of: .deviceConditions).map(DeviceConditionsPlugin.init))
    }

    private func only(_ plugins: String) throws -> DeviceConditionsPlugin {
        let (_, loaded) = try host(plugins)
        XCTAssertEqual(loaded.count, 1)
        return try XCTUnwrap(loaded.first)
    }

    // MARK: fixed-device-conditions

    func testFixedDeviceConditionsAnswersItsConfig() throws {
        let plugin = try only(
            """
              - id: fixed
                use: \(TestSupport.plugin("FixedDeviceConditions"))
                config: {network: cellular, metered: true, battery_level: 0.25, charging: "no", free_bytes: 123456789}
            """)
        XCTAssertEqual(
            try plugin.read(dataDirectory: folder),
            DeviceConditions(network: .cellular, metered: true, batteryLevel: 0.25, charging: false, freeBytes: 123_456_789))
        let defaults = try only(
            """
              - id: plain
                use: \(TestSupport.plugin("FixedDeviceConditions"))
            """)
        XCTAssertEqual(
            try defaults.read(dataDirectory: folder),
            DeviceConditions(network: .ethernet, metered: false, batteryLevel: nil, charging: nil, freeBytes: nil),
            "no config: ethernet, no battery, charging and free bytes unknown")
    }

    func testFixedDeviceConditionsRefusesABadConfigAtCreate() throws {
        for (config, expected) in [
            ("{network: carrier-pigeon}", "network 'carrier-pigeon' is not none, wifi, cellular or ethernet"),
            ("{battery_level: 1.5}", "'battery_level' must be a number within 0...1"),
            ("{charging: maybe}", "charging 'maybe' is not yes, no or unknown"),
            ("{free_bytes: -1}", "'free_bytes' must be a whole number of bytes")
        ] {
            let (host, loaded) = try host(
                """
                  - id: bad
                    use: \(TestSupport.plugin("FixedDeviceConditions"))
                    config: \(config)
                """)
            XCTAssertTrue(loaded.isEmpty, config)
            let entry = try XCTUnwrap(host.registry.entry(id: "bad"))
            guard case .failed(let error) = entry.state else {
                XCTFail("\(config): \(entry.state.name)")
                continue
            }
            XCTAssertTrue("\(error)".contains(expected), "\(config): \(error)")
        }
    }

    func testFixedDeviceConditionsFollowsItsFileWhenItChanges() throws {
        let plugin = try only(
            """
              - id: switchable
                use: \(TestSupport.plugin("FixedDeviceConditions"))
                config: {network: wifi, battery_level: 0.9, charging: "yes", free_bytes: 5000000000, file: conditions.txt}
            """)
        let file = folder + "/data/conditions.txt"
        let data = folder + "/data"
        // No file yet: the config's values.
        XCTAssertEqual(
            try plugin.read(dataDirectory: data),
            DeviceConditions(network: .wifi, metered: false, batteryLevel: 0.9, charging: true, freeBytes: 5_000_000_000))

        // Written atomically (a new file renamed over the old), as the README advises.
        try TestSupport.write("# the phone left the house\nnetwork = cellular\nmetered: true\nbattery_level = 0.12\ncharging = no\n", to: file)
        XCTAssertEqual(
            try plugin.read(dataDirectory: data),
            DeviceConditions(network: .cellular, metered: true, batteryLevel: 0.12, charging: false, freeBytes: 5_000_000_000),
            "the file's keys override the config; free_bytes, left out, keeps the config's")

        try TestSupport.write("network = wifi\nbattery_level = none\nfree_bytes = unknown\n", to: file)
        XCTAssertEqual(
            try plugin.read(dataDirectory: data),
            DeviceConditions(network: .wifi, metered: false, batteryLevel: nil, charging: true, freeBytes: nil),
            "each change starts again from the config, then the file")

        // A bad line: every call fails naming it, until the file is fixed.
        try TestSupport.write("network = wifi\nbattery_level = 7\n", to: file)
        for _ in 0..<2 {
            XCTAssertThrowsError(try plugin.read(dataDirectory: data)) { error in
                guard case PluginCallError.failed(_, let status, let message) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(status, HH_ERR_CONFIG)
                XCTAssertTrue(message.contains("line 2: battery_level '7' is not a number within 0...1, or none"), message)
            }
        }
        try TestSupport.write("network = none\n", to: file)
        XCTAssertEqual(try plugin.read(dataDirectory: data).network, DeviceConditions.Network.none)

        // Rewritten in place with the same length: noticed by the modification time.
        let before = try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date
        var after = before
        for _ in 0..<200 where after == before {
            try "network = wifi\n".write(toFile: file, atomically: false, encoding: .utf8)
            after = try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date
            if after == before { Thread.sleep(forTimeInterval: 0.01) }
        }
        XCTAssertNotEqual(after, before)
        XCTAssertEqual(try plugin.read(dataDirectory: data).network, .wifi)

        // Removed: back to the config.
        try FileManager.default.removeItem(atPath: file)
        XCTAssertEqual(try plugin.read(dataDirectory: data).batteryLevel, 0.9)
    }

    // MARK: linux-device-conditions

    /// A made-up sysfs and route table, so the answer is known whatever machine runs the test.
    private struct FakeSystem {
        let root: String
        var net: String { root + "/net" }
        var power: String { root + "/power_supply" }
        var route: String { root + "/route" }

        func interface(_ name: String, operstate: String = "up", type: Int = 1, uevent: String = "", wireless: Bool = false, carrier: Int? = nil)
            throws
        {
            try TestSupport.write(operstate + "\n", to: "\(net)/\(name)/operstate")
            try TestSupport.write("\(type)\n", to: "\(net)/\(name)/type")
            try TestSupport.write("INTERFACE=\(name)\n\(uevent)", to: "\(net)/\(name)/uevent")
            if let carrier { try TestSupport.write("\(carrier)\n", to: "\(net)/\(name)/carrier") }
            if wireless { try FileManager.default.createDirectory(atPath: "\(net)/\(name)/wireless", withIntermediateDirectories: true) }
        }

        func supply(_ name: String, _ files: [String: String]) throws {
            for (file, value) in files { try TestSupport.write(value + "\n", to: "\(power)/\(name)/\(file)") }
        }

        /// Default routes (interface, metric), in /proc/net/route's format.
        func routes(_ defaults: [(String, Int)]) throws {
            var text = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
            for (name, metric) in defaults { text += "\(name)\t00000000\t0101A8C0\t0003\t0\t0\t\(metric)\t00000000\t0\t0\t0\n" }
            text += "eth0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"  // a local route, not a default
            try TestSupport.write(text, to: route)
        }
    }

    private func linuxPlugin(_ system: FakeSystem, extra: String = "") throws -> DeviceConditionsPlugin {
        try only(
            """
              - id: linux
                use: \(TestSupport.plugin("LinuxDeviceConditions"))
                config: {net_path: \(system.net), power_supply_path: \(system.power), route_path: \(system.route)\(extra)}
            """)
    }

    func testLinuxDeviceConditionsReadsNetworkFromRoutesAndSysfs() throws {
        let system = FakeSystem(root: folder + "/sys")
        try system.interface("lo", operstate: "unknown", type: 772, carrier: 1)
        try system.interface("eth0")
        try system.interface("wlan0", wireless: true)
        try system.interface("wlp2s0", uevent: "DEVTYPE=wlan\n")
        try system.interface("wwan0", operstate: "unknown", type: 65534, uevent: "DEVTYPE=wwan\n", carrier: 1)
        try system.interface("docker0", operstate: "down")

        // The default route with the lowest metric decides.
        try system.routes([("wlan0", 600), ("eth0", 100)])
        let plugin = try linuxPlugin(system)
        XCTAssertEqual(try plugin.read(dataDirectory: folder).network, .ethernet)
        try system.routes([("wlan0", 600)])
        var conditions = try plugin.read(dataDirectory: folder)
        XCTAssertEqual(conditions.network, .wifi, "a wireless/ folder: wifi")
        XCTAssertFalse(conditions.metered)
        try system.routes([("wlp2s0", 50)])
        XCTAssertEqual(try plugin.read(dataDirectory: folder).network, .wifi, "DEVTYPE=wlan: wifi")
        try system.routes([("wwan0", 50)])
        conditions = try plugin.read(dataDirectory: folder)
        XCTAssertEqual(conditions.network, .cellular, "DEVTYPE=wwan: cellular")
        XCTAssertTrue(conditions.metered, "cellular is metered by default")

        // The default route's interface is down: the best interface that is up.
        try system.routes([("docker0", 0)])
        XCTAssertEqual(try plugin.read(dataDirectory: folder).network, .ethernet)
        try FileManager.default.removeItem(atPath: system.net + "/eth0")
        XCTAssertEqual(try plugin.read(dataDirectory: folder).network, .wifi, "no route, no ethernet: wifi before cellular")
        for name in ["wlan0", "wlp2s0", "wwan0"] { try FileManager.default.removeItem(atPath: system.net + "/" + name) }
        XCTAssertEqual(try plugin.read(dataDirectory: folder).network, DeviceConditions.Network.none, "only loopback and a down bridge: none")

        // Settings: an interface named metered, cellular not metered.
        try system.interface("usb0")
        try system.interface("wwan1", uevent: "DEVTYPE=wwan\n")
        try system.routes([("usb0", 10)])
        let tethered = try linuxPlugin(system, extra: ", metered_interfaces: \"usb0, rndis0\", cellular_metered: false")
        conditions = try tethered.read(dataDirectory: folder)
        XCTAssertEqual(conditions.network, .ethernet)
        XCTAssertTrue(conditions.metered, "usb0 is listed in metered_interfaces")
        try system.routes([("wwan1", 10)])
        conditions = try tethered.read(dataDirectory: folder)
        XCTAssertEqual(conditions.network, .cellular)
        XCTAssertFalse(conditions.metered, "cellular_metered: false")
    }

    func testLinuxDeviceConditionsReadsBatteryAndCharging() throws {
        let system = FakeSystem(root: folder + "/sys")
        try system.routes([])
        try system.supply("BAT0", ["type": "Battery", "present": "1", "capacity": "42", "status": "Discharging"])
        try system.supply("AC", ["type": "Mains", "online": "0"])
        try system.supply("hidpp_battery_0", ["type": "Battery", "scope": "Device", "capacity": "5", "status": "Discharging"])
        let plugin = try linuxPlugin(system)
        var conditions = try plugin.read(dataDirectory: folder)
        XCTAssertEqual(conditions.batteryLevel, 0.42, "the mouse's battery (scope Device) does not count")
        XCTAssertEqual(conditions.charging, false)

        try system.supply("BAT0", ["status": "Charging"])
        XCTAssertEqual(try plugin.read(dataDirectory: folder).charging, true)

        // Full on mains: charging; no capacity file: energy_now / energy_full.
        try FileManager.default.removeItem(atPath: system.power + "/BAT0/capacity")
        try system.supply("BAT0", ["status": "Full", "energy_now": "30000000", "energy_full": "40000000"])
        try system.supply("AC", ["online": "1"])
        conditions = try plugin.read(dataDirectory: folder)
        XCTAssertEqual(conditions.batteryLevel, 0.75)
        XCTAssertEqual(conditions.charging, true)

        // A battery that is not present, and a desktop: no battery, charging from the mains.
        try system.supply("BAT0", ["present": "0"])
        conditions = try plugin.read(dataDirectory: folder)
        XCTAssertNil(conditions.batteryLevel)
        XCTAssertEqual(conditions.charging, true)

        // No power_supply class at all: no battery, charging unknown.
        try FileManager.default.removeItem(atPath: system.power)
        conditions = try plugin.read(dataDirectory: folder)
        XCTAssertNil(conditions.batteryLevel)
        XCTAssertNil(conditions.charging)
    }

    func testLinuxDeviceConditionsMeasuresFreeBytesWithStatvfs() throws {
        let system = FakeSystem(root: folder + "/sys")
        try system.routes([])
        let plugin = try linuxPlugin(system)
        let free = try XCTUnwrap(try plugin.read(dataDirectory: folder).freeBytes)
        var st = statvfs()
        XCTAssertEqual(statvfs(folder, &st), 0)
        let expected = UInt64(st.f_bavail) * UInt64(st.f_frsize)
        let total = UInt64(st.f_blocks) * UInt64(st.f_frsize)
        XCTAssertGreaterThan(free, 0)
        XCTAssertLessThanOrEqual(free, total)
        // Other engineers write to the same disk: close, not equal.
        XCTAssertLessThan(free > expected ? free - expected : expected - free, 1 << 30, "statvfs says \(expected), the plugin \(free)")
        let notYet = try XCTUnwrap(
            try plugin.read(dataDirectory: folder + "/not/created/yet").freeBytes,
            "a directory not created yet: its nearest existing parent's file system")
        XCTAssertLessThan(notYet > expected ? notYet - expected : expected - notYet, 1 << 30)
    }

    func testLinuxDeviceConditionsOnThisMachineAnswersInRange() throws {
        let plugin = try only(
            """
              - id: linux
                use: \(TestSupport.plugin("LinuxDeviceConditions"))
            """)
        let conditions = try plugin.read(dataDirectory: folder)
        if let level = conditions.batteryLevel { XCTAssertTrue((0...1).contains(level)) }
        XCTAssertNotNil(conditions.freeBytes, "statvfs works on the test's own folder")
    }

    // MARK: hostile answers

    private func fixture(abiMinor: Int? = nil) throws -> String {
        try TestSupport.prefetchKindsFixture(in: folder + "/fixture" + (abiMinor.map { "-\($0)" } ?? ""), abiMinor: abiMinor)
    }

    func testOutOfRangeAnswersAreRefusedInProcessAndIsolated() throws {
        let manifest = try fixture()
        let cases: [(mode: String, reason: String)] = [
            ("network-7", "network code 7 is not one of HH_NETWORK_NONE/WIFI/CELLULAR/ETHERNET"),
            ("battery-1.5", "battery_level 1.5 is outside 0...1"),
            ("battery-nan", "battery_level nan is outside 0...1"),
            ("charging-9", "charging code 9 is not one of HH_CHARGING_UNKNOWN/NO/YES")
        ]
        var instances = ""
        for (index, item) in cases.enumerated() {
            for isolation in ["in_process", "process"] {
                instances += """
                      - id: c\(index)-\(isolation)
                        use: \(manifest)
                        isolation: \(isolation)
                        config: {mode: \(item.mode)}

                    """
            }
        }
        let (host, _) = try host(
            instances + """
                  - id: good
                    use: \(manifest)
                    isolation: process
                """)
        for (index, item) in cases.enumerated() {
            for isolation in ["in_process", "process"] {
                let handle = try XCTUnwrap(host.registry.plugins(of: .deviceConditions).first { $0.instanceID == "c\(index)-\(isolation)" })
                XCTAssertThrowsError(try DeviceConditionsPlugin(handle).read(dataDirectory: folder)) { error in
                    guard case PluginCallError.invalidAnswer(let instance, let reason) = error else {
                        return XCTFail("\(item.mode) \(isolation): \(error)")
                    }
                    XCTAssertEqual(instance, handle.instanceID)
                    XCTAssertTrue(reason.hasPrefix(item.reason), "\(item.mode) \(isolation): \(reason)")
                    XCTAssertTrue("\(error)".contains("plugin instance '\(handle.instanceID)' gave an invalid answer: \(item.reason)"), "\(error)")
                }
            }
        }
        let good = try XCTUnwrap(host.registry.plugins(of: .deviceConditions).first { $0.instanceID == "good" })
        XCTAssertEqual(
            try DeviceConditionsPlugin(good).read(dataDirectory: folder),
            DeviceConditions(network: .wifi, metered: false, batteryLevel: 0.5, charging: true, freeBytes: 1000),
            "an isolated plugin answers as an in-process one")
    }

    func testAFailingOrCrashingPluginIsAnErrorNotACrash() throws {
        let manifest = try fixture()
        let (host, _) = try host(
            """
              - id: unavailable
                use: \(manifest)
                config: {mode: unavailable}
              - id: crashing
                use: \(manifest)
                isolation: process
                config: {mode: crash}
            """)
        let plugins = host.registry.plugins(of: .deviceConditions)
        let unavailable = try XCTUnwrap(plugins.first { $0.instanceID == "unavailable" })
        XCTAssertThrowsError(try DeviceConditionsPlugin(unavailable).read(dataDirectory: folder)) { error in
            XCTAssertEqual(
                error as? PluginCallError, .failed(instance: "unavailable", status: HH_ERR_UNAVAILABLE, message: "the fixture cannot tell now"))
        }
        let crashing = try XCTUnwrap(plugins.first { $0.instanceID == "crashing" })
        XCTAssertThrowsError(try DeviceConditionsPlugin(crashing).read(dataDirectory: folder)) { error in
            guard case PluginCallError.failed("crashing", HH_ERR_UNAVAILABLE, let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("SIGSEGV") || message.contains("signal"), message)
        }
        // The host is still here, and the worker's failure does not change the other plugin's answer.
        XCTAssertThrowsError(try DeviceConditionsPlugin(unavailable).read(dataDirectory: folder)) { error in
            XCTAssertEqual((error as? PluginCallError)?.status, HH_ERR_UNAVAILABLE)
        }
    }

    // MARK: the ABI version

    func testThe11KindsNeedAnABI11LibraryAndABI10PluginsStillLoad() throws {
        XCTAssertEqual(ABIVersion.host.major, 1)
        XCTAssertGreaterThanOrEqual(ABIVersion.host.minor, 1)
        // A library built against ABI 1.0 (the fault fixture says 1.0.0) loads and works on this host.
        let old = try TestSupport.compileFixture(into: folder + "/old", name: "libold.so")
        let library = try PluginLibrary.open(path: old)
        XCTAssertEqual(library.abiVersion, ABIVersion(major: 1, minor: 0, patch: 0))
        XCTAssertEqual(library.descriptors.map(\.kind), [.triggerOperator])
        try TestSupport.write(TestSupport.fixtureManifest(library: "libold.so"), to: folder + "/old/plugin.yaml")
        let (host, _) = try host(
            """
              - id: old
                use: \(folder)/old/plugin.yaml
            """)
        XCTAssertEqual(host.registry.entry(id: "old")?.state, .loaded)
        XCTAssertEqual(
            TriggerOperatorPlugin(try XCTUnwrap(host.registry.plugins(of: .triggerOperator).first)).compare(event: .int(3), trigger: .int(3)).result,
            true)

        // A library that says 1.0 cannot have been built with these kinds' headers: refused, named.
        let claimsOld = try fixture(abiMinor: 0)
        XCTAssertThrowsError(try PluginLibrary.open(path: (claimsOld as NSString).deletingLastPathComponent + "/libprefetch-kinds-fixture.so")) {
            error in
            XCTAssertTrue(
                "\(error)".contains("'fixture-conditions' is a device_conditions plugin, a kind added in ABI 1.1, but the library says ABI 1.0.0"),
                "\(error)")
        }
        // And a plugin.yaml that says abi "1.0" for them is refused when read.
        try TestSupport.write(
            TestSupport.pluginManifest(id: "old-manifest", name: "Old manifest", library: "libx.so", exports: [("x", "download_request")]),
            to: folder + "/oldmanifest/plugin.yaml")
        let loaded = PluginManifest.load(path: folder + "/oldmanifest/plugin.yaml")
        XCTAssertNil(loaded.manifest)
        XCTAssertTrue(
            loaded.diagnostics.contains { "\($0)".contains("kind 'download_request' was added in ABI 1.1; set abi: \"1.1\"") },
            "\(loaded.diagnostics)")
    }
}
