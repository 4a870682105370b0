import Foundation
import HubHostABI
import Logging
import WAT
import XCTest

@testable import HubHostKit

/// WebAssembly plugins: a `.wasm` library loads through plugins.yaml like a `.so`; one C source
/// built both ways answers alike; fuel, traps, memory growth and wrong exports stay inside the guest.
final class WasmPluginTests: FolderTestCase {
    /// Builds C sources with scripts/build-wasm-plugin (the documented way) into `folder`, with the
    /// strict warnings the ABI promises to pass (the guest adapter included).
    private func buildWasm(_ name: String, _ sources: [String], defines: [String] = []) throws -> String {
        let output = "\(folder)/\(name)"
        let result = try TestSupport.run(
            "\(TestSupport.repository)/scripts/build-wasm-plugin",
            [output] + sources + ["--", "-Wall", "-Wextra", "-Werror", "-pedantic"] + defines.map { "-D" + $0 })
        XCTAssertEqual(result.status, 0, result.stderr)
        return output
    }

    /// A plugin.yaml beside a library, with the exports given.
    private func manifest(id: String, library: String, abi: String = "1.1", exports: [(String, String)], extra: String = "") throws -> String {
        let path = "\(folder)/\(id)/plugin.yaml"
        try TestSupport.write(
            """
            abi: "\(abi)"
            id: \(id)
            name: \(id)
            version: 1.0.0
            library: \((library as NSString).lastPathComponent)
            exports:
            \(exports.map { "  - {id: \($0.0), kind: \($0.1)}" }.joined(separator: "\n"))
            \(extra)
            """, to: path)
        try? FileManager.default.removeItem(atPath: "\(folder)/\(id)/\((library as NSString).lastPathComponent)")
        try FileManager.default.copyItem(atPath: library, toPath: "\(folder)/\(id)/\((library as NSString).lastPathComponent)")
        return path
    }

    /// A registry over a plugins.yaml made of `instances` (YAML list items), loaded.
    private func registry(_ instances: String) throws -> PluginRegistry {
        try TestSupport.write("data_dir: data\nplugins:\n\(instances)\n", to: folder + "/plugins.yaml")
        let registry = PluginRegistry(manifest: try HostManifest.load(path: folder + "/plugins.yaml"), pipeline: LogPipeline())
        registry.loadAll()
        addTeardownBlock { registry.shutdown() }
        return registry
    }

    private func operatorNamed(_ registry: PluginRegistry, instance: String, _ id: String) throws -> TriggerOperatorPlugin {
        TriggerOperatorPlugin(try XCTUnwrap(registry.plugins(of: .triggerOperator).first { $0.instanceID == instance && $0.pluginID == id }))
    }

    // MARK: Loading and inspecting

    func testAWasmLibraryLoadsThroughPluginsYAMLAndInspectReadsItWithoutCreatingAnything() throws {
        let wasm = try buildWasm(
            "ops.wasm",
            [
                "\(TestSupport.repository)/Plugins/StandardOperators/standard_operators.c",
                "\(TestSupport.repository)/Plugins/StandardOperators/bounded_regex.c"
            ])
        let file = try WasmModuleFile.read(path: wasm)
        XCTAssertEqual(file.abiVersion, ABIVersion.host)
        XCTAssertTrue(file.imports.contains { $0.name == "hubhost.config_get" && $0.signature == "(i32, i32, i32, i32) -> (i32)" })
        XCTAssertFalse(file.imports.contains { $0.name.hasPrefix("wasi_snapshot_preview1.path_open") })
        XCTAssertTrue(file.exports.contains { $0.name == "hh_wasm_call" })

        let yaml = try manifest(
            id: "ops-wasm", library: wasm, abi: "1.0",
            exports: [("equals", "trigger_operator"), ("matches-regex", "trigger_operator")].map { $0 }
                + ["is-not-equal", "greater-than", "less-than", "is-blank", "is-not-blank", "does-not-match-regex"].map { ($0, "trigger_operator") })
        let inspect = try TestSupport.hubhost(["plugins", "inspect", yaml])
        XCTAssertEqual(inspect.status, 0, inspect.stdout + inspect.stderr)
        XCTAssertTrue(inspect.stdout.contains("wasm imports: func hubhost.log"), inspect.stdout)
        XCTAssertTrue(inspect.stdout.contains("manifest and binary agree"), inspect.stdout)

        let registry = try registry("  - id: ops\n    use: \(yaml)")
        let entry = try XCTUnwrap(registry.entry(id: "ops"))
        XCTAssertEqual(entry.state, .loaded)
        XCTAssertEqual(entry.binaryABI, ABIVersion.host)
        XCTAssertEqual(entry.plugins.count, 8)
        XCTAssertEqual(entry.runsIn, "wasm", "what plugins list and GET /v1/plugins show as its isolation")
        try TestSupport.write("data_dir: data\nplugins:\n  - id: ops\n    use: \(yaml)\n", to: folder + "/list.yaml")
        let list = try TestSupport.hubhost(["plugins", "list"], manifest: folder + "/list.yaml")
        XCTAssertTrue(list.stdout.contains("ops") && list.stdout.contains("loaded"), list.stdout + list.stderr)
        let check = try TestSupport.hubhost(["manifest", "check", folder + "/list.yaml"])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
    }

    func testTheABIVersionCheckAppliesBeforeTheModuleRuns() throws {
        // Major version 2 in the custom section; the start function would trap if it ran.
        let module = try wat2wasm(
            #"""
            (module (@custom "hubhost_abi" "\02\00\00\00\00\00\00\00\00\00\00\00")
              (memory (export "memory") 1) (func $start unreachable) (start $start))
            """#)
        _ = FileManager.default.createFile(atPath: folder + "/future.wasm", contents: Data(module))
        let yaml = try manifest(id: "future", library: folder + "/future.wasm", exports: [("spin", "trigger_operator")])
        let entry = try XCTUnwrap(try registry("  - id: future\n    use: \(yaml)").entry(id: "future"))
        guard case .failed(.abiMismatch(_, let plugin, _)) = entry.state else { return XCTFail("\(entry.state)") }
        XCTAssertEqual(plugin.major, 2)
        XCTAssertEqual(entry.binaryABI?.major, 2)
    }

    // MARK: One source, two builds

    func testTheStandardOperatorsAnswerAlikeBuiltAsSharedLibraryAndAsWasm() throws {
        let wasm = try buildWasm(
            "ops.wasm",
            [
                "\(TestSupport.repository)/Plugins/StandardOperators/standard_operators.c",
                "\(TestSupport.repository)/Plugins/StandardOperators/bounded_regex.c"
            ])
        let ids = ["equals", "is-not-equal", "greater-than", "less-than", "is-blank", "is-not-blank", "matches-regex", "does-not-match-regex"]
        let yaml = try manifest(id: "ops-wasm", library: wasm, abi: "1.0", exports: ids.map { ($0, "trigger_operator") })
        let registry = try registry(
            """
              - id: native
                use: \(TestSupport.plugin("StandardOperators"))
              - id: guest
                use: \(yaml)
            """)
        XCTAssertEqual(registry.entry(id: "guest")?.state, .loaded)
        let long = String(repeating: "ab", count: 5_000)
        let cases: [(PluginValue, PluginValue)] = [
            (.string("hello"), .string("hello")), (.string("hello"), .string("world")), (.int(3), .int(2)), (.double(2.5), .int(3)),
            (.timeMs(1_000), .timeMs(1_500)), (.bool(true), .bool(true)), (.string("  "), .null), (.string(""), .string("")),
            (.string("abc123"), .string("^[a-z]+[0-9]+$")), (.string("x"), .string("(")), (.int(1), .string("1")),
            (.string(long + "c"), .string("(ab)*c$")), (.string(long), .string("(a|b)*c")), (.string("Straße"), .string("ß"))
        ]
        var compared = 0
        for id in ids {
            let native = try operatorNamed(registry, instance: "native", id)
            let guest = try operatorNamed(registry, instance: "guest", id)
            XCTAssertEqual(native.operatorName, guest.operatorName)
            XCTAssertEqual(native.wireCode, guest.wireCode)
            for (event, trigger) in cases {
                let a = native.compare(event: event, trigger: trigger)
                let b = guest.compare(event: event, trigger: trigger)
                XCTAssertEqual(a.result, b.result, "\(id) \(event) \(trigger)")
                XCTAssertEqual(a.status, b.status, "\(id) \(event) \(trigger)")
                XCTAssertEqual(a.reason, b.reason, "\(id) \(event) \(trigger)")
                compared += 1
            }
        }
        XCTAssertEqual(compared, ids.count * cases.count)
    }

    func testAnAugmentationAnswersAlikeBuiltAsSharedLibraryAndAsWasm() throws {
        let native = try TestSupport.faultyFixture(nil, in: folder)
        let wasm = try buildWasm("faulty.wasm", ["\(TestSupport.repository)/Tests/Fixtures/faulty_plugins.c"])
        let yaml = try manifest(
            id: "faulty-wasm", library: wasm, abi: "1.0", exports: [("faulty-augmentation", "augmentation"), ("faulty-operator", "trigger_operator")])
        let registry = try registry(
            """
              - id: native
                use: \(native)
              - id: guest
                use: \(yaml)
            """)
        let plugins = registry.plugins(of: .augmentation)
        let a = AugmentationPlugin(try XCTUnwrap(plugins.first { $0.instanceID == "native" }))
        let b = AugmentationPlugin(try XCTUnwrap(plugins.first { $0.instanceID == "guest" }))
        XCTAssertEqual(a.processSynchronously, b.processSynchronously)
        XCTAssertEqual(a.isSupplementalDataReady, b.isSupplementalDataReady)
        for attributes in [[], [("Level", PluginValue.int(2)), ("Name", .string("Ünïcode")), ("When", .timeMs(5))], [("Fixture", .double(1.5))]] {
            let event = AugmentableEvent(id: "e1", typeCode: 17, name: "PLAYER LOADED", timeMs: 1, attributes: attributes)
            let native = a.augment(event)
            let guest = b.augment(event)
            XCTAssertEqual(native.status, 0)
            XCTAssertEqual(native, guest)
            XCTAssertEqual(guest.event[attribute: "Fixture"], .string("augmented"))
        }
    }

    /// A guest answers with its plugin's edits, which the host replays on the event it sent: every
    /// kind of edit, in an order where order matters, leaves what the same source leaves in process.
    func testEditsReplayedFromAGuestLeaveTheSameEventAsInProcess() throws {
        let native = try TestSupport.compileFixture("editing_augmentation.c", into: folder + "/build-so", name: "libediting.so")
        let wasm = try buildWasm("editing.wasm", ["\(TestSupport.repository)/Tests/Fixtures/editing_augmentation.c"])
        let exports = [("editing-augmentation", "augmentation")]
        let registry = try registry(
            """
              - id: native
                use: \(try manifest(id: "editing-so", library: native, abi: "1.0", exports: exports))
              - id: guest
                use: \(try manifest(id: "editing-wasm", library: wasm, abi: "1.0", exports: exports))
            """)
        let plugins = registry.plugins(of: .augmentation)
        let a = AugmentationPlugin(try XCTUnwrap(plugins.first { $0.instanceID == "native" }))
        let b = AugmentationPlugin(try XCTUnwrap(plugins.first { $0.instanceID == "guest" }))
        let cases: [[(String, PluginValue)]] = [
            [],
            [("Drop", .string("x")), ("Level", .int(4)), ("Keep", .double(2.5))],
            [("Added", .null), ("Keep", .string("ß")), ("Drop", .int(1)), ("Level", .string("not a number"))]
        ]
        for attributes in cases {
            let event = AugmentableEvent(
                id: "e1", typeCode: 17, name: "LEVEL UP", timeMs: 1, attributes: attributes.map { (name: $0.0, value: $0.1) })
            let native = a.augment(event)
            let guest = b.augment(event)
            XCTAssertEqual(native.status, HH_OK)
            XCTAssertEqual(guest, native, "\(attributes)")
            XCTAssertEqual(guest.event.attributes.last?.name, "Seen Name")
            XCTAssertEqual(guest.event[attribute: "Added"], .string("second"))
        }
        let second = try XCTUnwrap(cases.dropFirst().first)
        let edited = b.augment(AugmentableEvent(id: "e2", typeCode: 17, name: "N", timeMs: 1, attributes: second.map { (name: $0.0, value: $0.1) }))
        XCTAssertEqual(edited.event.attributes.map(\.name), ["Level", "Keep", "Added", "Drop", "Seen Name"])
        XCTAssertEqual(edited.event[attribute: "Level"], .int(5))
    }

    func testALocationDelegateAndAUserIDGeneratorAnswerAlikeBuiltBothWays() throws {
        let location = try buildWasm("fixed-location.wasm", ["\(TestSupport.repository)/Plugins/FixedLocation/fixed_location.c"])
        try FileManager.default.createDirectory(atPath: folder + "/fixed-wasm", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: location, toPath: folder + "/fixed-wasm/fixed-location.wasm")
        let bundled = try String(contentsOfFile: TestSupport.plugin("FixedLocation"), encoding: .utf8)
        try TestSupport.write(
            bundled.replacingOccurrences(of: "library: libhubhost-fixed-location.so", with: "library: fixed-location.wasm"),
            to: folder + "/fixed-wasm/plugin.yaml")
        let ids = try buildWasm("ids.wasm", ["\(TestSupport.repository)/Tests/Fixtures/user_id_generator_fixture.c"])
        let idsYAML = try manifest(id: "ids-wasm", library: ids, exports: [("fixture-ids", "user_id_generator")])
        let nativeIDs = try TestSupport.compileFixture("user_id_generator_fixture.c", into: folder + "/ids-native", name: "libids.so")
        let nativeIDsYAML = try manifest(id: "ids-so", library: nativeIDs, exports: [("fixture-ids", "user_id_generator")])
        let config = "{latitude: 47.6097, longitude: -122.3422, accuracy_m: 12.5, location_id: pike, name: Pike Place Market}"
        let registry = try registry(
            """
              - id: native
                use: \(TestSupport.plugin("FixedLocation"))
                config: \(config)
              - id: guest
                use: \(folder)/fixed-wasm/plugin.yaml
                config: \(config)
              - id: native-ids
                use: \(nativeIDsYAML)
              - id: guest-ids
                use: \(idsYAML)
            """)
        let locations = registry.plugins(of: .location)
        let a = LocationPlugin(try XCTUnwrap(locations.first { $0.instanceID == "native" })).current()
        let b = LocationPlugin(try XCTUnwrap(locations.first { $0.instanceID == "guest" })).current()
        guard case .location(let answer) = b else { return XCTFail("\(b)") }
        XCTAssertEqual(answer.locationID, "pike")
        XCTAssertEqual(a, b)
        let generators = registry.plugins(of: .userIDGenerator)
        let nativeGenerator = UserIDGeneratorPlugin(try XCTUnwrap(generators.first { $0.instanceID == "native-ids" }))
        let guestGenerator = UserIDGeneratorPlugin(try XCTUnwrap(generators.first { $0.instanceID == "guest-ids" }))
        let native = (0..<3).map { _ in nativeGenerator.answer() }
        let guest = (0..<3).map { _ in guestGenerator.answer() }
        XCTAssertEqual(guest, [.id("id-1"), .id("id-2"), .id("id-3")])
        XCTAssertEqual(native, guest)
    }

    // MARK: Edits are checked as in process

    /// One edit as a guest's answer carries it: names and string values are raw bytes, UTF-8 or not.
    private enum GuestEdit {
        case set([UInt8], GuestValue)
        case remove([UInt8])
    }

    private enum GuestValue {
        case null, string([UInt8]), int(Int64), double(Double), bool(Bool), time(Int64)
    }

    /// `edits` in a guest's augment answer: status HH_OK, no message, then the edits (the encoding
    /// the guest adapter writes).
    private static func augmentAnswer(_ edits: [GuestEdit]) -> [UInt8] {
        var out = WireWriter()
        out.i32(HH_OK)
        out.u32(0)
        out.u32(UInt32(edits.count))
        for edit in edits {
            switch edit {
            case .set(let name, let value):
                out.u8(0)
                out.u32(UInt32(name.count))
                out.raw(name)
                switch value {
                case .null: out.u8(UInt8(HH_VALUE_NULL))
                case .string(let bytes):
                    out.u8(UInt8(HH_VALUE_STRING))
                    out.u32(UInt32(bytes.count))
                    out.raw(bytes)
                case .int(let number):
                    out.u8(UInt8(HH_VALUE_INT64))
                    out.i64(number)
                case .double(let number):
                    out.u8(UInt8(HH_VALUE_DOUBLE))
                    out.f64(number)
                case .bool(let flag):
                    out.u8(UInt8(HH_VALUE_BOOL))
                    out.bool(flag)
                case .time(let ms):
                    out.u8(UInt8(HH_VALUE_TIME_MS))
                    out.i64(ms)
                }
            case .remove(let name):
                out.u8(1)
                out.u32(UInt32(name.count))
                out.raw(name)
            }
        }
        return out.bytes
    }

    /// A hand-written guest exporting one augmentation, "hostile", that skips the guest adapter:
    /// every augment call answers `answer` as it is, whatever its bytes say.
    private static func hostileGuest(answering answer: [UInt8]) -> String {
        var describe = WireWriter()
        for number in [UInt32(1), 1, 0, 1] { describe.u32(number) }  // ABI 1.1.0, one plugin
        for text in ["hostile", "Hostile", "", "1.0.0"] { describe.string(text) }
        describe.i32(HH_KIND_AUGMENTATION)
        func escaped(_ bytes: some Collection<UInt8>) -> String { bytes.map { String(format: "\\%02x", $0) }.joined() }
        // The answer lies from 64 KiB on, as data segments for its bytes other than long runs of
        // zeros (a string of zeros is valid UTF-8 and memory starts zeroed): the module text stays small.
        let base = 65_536
        var segments: [String] = []
        var start: Int?
        var zeros = 0
        for (offset, byte) in answer.enumerated() {
            if byte == 0 { zeros += 1 } else { zeros = 0 }
            if start == nil, byte != 0 { start = offset }
            if let from = start, zeros == 64 || offset == answer.count - 1 {
                let through = zeros == 64 ? offset - 64 : offset
                if through >= from { segments.append("(data (i32.const \(base + from)) \"\(escaped(answer[from...through]))\")") }
                start = nil
            }
        }
        let pages = (base + answer.count) / 65_536 + 1
        return """
            (module
              (@custom "hubhost_abi" "\\01\\00\\00\\00\\01\\00\\00\\00\\00\\00\\00\\00")
              (memory (export "memory") \(pages))
              (data (i32.const 64) "\(escaped(describe.bytes))")
              \(segments.joined(separator: "\n  "))
              (func (export "hh_wasm_buffer") (param i32) (result i32)
                (if (result i32) (i32.gt_u (local.get 0) (i32.const 60000)) (then (i32.const 0)) (else (i32.const 1024))))
              (func (export "hh_wasm_describe") (result i64) (i64.const \(UInt64(describe.bytes.count) << 32 | 64)))
              (func (export "hh_wasm_create") (param i32) (result i32) (i32.const 0))
              (func (export "hh_wasm_destroy") (param i32))
              (func (export "hh_wasm_call") (param $index i32) (param $op i32) (param $length i32) (result i64)
                (if (i32.eq (local.get $op) (i32.const 1)) (then (return (i64.const \(UInt64(answer.count) << 32 | UInt64(base))))))
                (i64.const \(UInt64(1) << 32 | 512)))
            )
            """
    }

    /// `edits` made through the editor an in-process plugin is given: the event they leave and the
    /// status each answered.
    private static func editedInProcess(_ event: AugmentableEvent, _ edits: [GuestEdit]) -> (AugmentableEvent, [Int32]) {
        let session = EventEditSession(event)
        defer { session.release() }
        var statuses: [Int32] = []
        _ = session.withView { _, editor in
            // Bytes lent as a plugin lends them; an empty array may have no address, as a C plugin's "" may be NULL.
            func lent(_ bytes: [UInt8], _ body: (hh_string_t) -> Int32) -> Int32 {
                bytes.withUnsafeBufferPointer { buffer in
                    body(hh_string_t(data: buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, length: buffer.count))
                }
            }
            for edit in edits {
                switch edit {
                case .remove(let name):
                    statuses.append(lent(name) { editor.pointee.remove_attribute(editor, $0) })
                case .set(let name, let guestValue):
                    var value = hh_value_t()
                    var text: [UInt8] = []
                    switch guestValue {
                    case .null: value.type = HH_VALUE_NULL
                    case .string(let bytes):
                        value.type = HH_VALUE_STRING
                        text = bytes
                    case .int(let number):
                        value.type = HH_VALUE_INT64
                        value.of.int64 = number
                    case .double(let number):
                        value.type = HH_VALUE_DOUBLE
                        value.of.real = number
                    case .bool(let flag):
                        value.type = HH_VALUE_BOOL
                        value.of.boolean = flag
                    case .time(let ms):
                        value.type = HH_VALUE_TIME_MS
                        value.of.time_ms = ms
                    }
                    statuses.append(
                        lent(name) { name in
                            lent(text) { text in
                                if value.type == HH_VALUE_STRING { value.of.string = text }
                                return editor.pointee.set_attribute(editor, name, &value)
                            }
                        })
                }
            }
            return HH_OK
        }
        return (session.working, statuses)
    }

    /// A guest that writes its answer itself instead of through the guest adapter sends every edit
    /// the event limits refuse. The host replays them through the in-process editor: nothing outside
    /// the limits or not valid UTF-8 is kept, and the guest's healthy edits of the same event leave
    /// exactly what the same edits leave in process.
    func testAHostileGuestsEditsAreCheckedAsAnInProcessPluginsAre() throws {
        func text(_ string: String) -> [UInt8] { Array(string.utf8) }
        let refused: [GuestEdit] = [
            .set([], .int(7)),
            .set([UInt8](repeating: UInt8(ascii: "n"), count: 1025), .int(7)),
            .set(text("Two MiB"), .string([UInt8](repeating: 0, count: 2 << 20))),
            .set(text("NaN"), .double(.nan)),
            .set(text("Infinity"), .double(.infinity)),
            .set(text("Minus Infinity"), .double(-.infinity)),
            .set(text("Before 1970"), .time(-1)),
            .set(text("After 9999"), .time(253_402_300_800_000)),
            .set(text("Stray Byte"), .string([0x61, 0xFF, 0x62])),
            .set(text("Cut Sequence"), .string([0xC3])),
            .set(text("Surrogate"), .string([0xED, 0xA0, 0x80])),
            .set(text("Overlong"), .string([0xC0, 0xAF])),
            .set(text("Name ") + [0xFE], .int(7)),
            .set(text("Keep"), .double(.nan))  // a refused replacement leaves the value it had
        ]
        let healthy: [GuestEdit] = [
            .remove(text("Drop")),
            .set(text("Level"), .int(2)),
            .set(text("Last Valid Time"), .time(253_402_300_799_999)),
            .set([UInt8](repeating: UInt8(ascii: "k"), count: 1024), .string(text("a name of exactly 1 KiB"))),
            .set(text("One MiB"), .string([UInt8](repeating: 0, count: 1 << 20))),
            .set(text("Fine"), .double(2.5)),
            .set(text("Ünïcode ✓ 𝄞"), .string(text("ß"))),
            .set(text("Nothing"), .null),
            .set(text("Yes"), .bool(true))
        ]
        // 5,001 new attributes: the event reaches 1,000 and the rest are refused; a replacement
        // still lands at the limit, and a remove makes room for one more.
        let flood = (0...5000).map { GuestEdit.set(text("Extra \($0)"), .int(Int64($0))) }
        let atTheLimit: [GuestEdit] = [.set(text("Level"), .int(3)), .remove(text("Extra 0")), .set(text("After The Limit"), .bool(true))]
        let edits = refused + healthy + flood + atTheLimit

        _ = FileManager.default.createFile(
            atPath: folder + "/hostile.wasm", contents: Data(try wat2wasm(Self.hostileGuest(answering: Self.augmentAnswer(edits)))))
        let yaml = try manifest(id: "hostile", library: folder + "/hostile.wasm", exports: [("hostile", "augmentation")])
        let registry = try registry("  - id: hostile\n    use: \(yaml)")
        XCTAssertEqual(registry.entry(id: "hostile")?.state, .loaded)
        let guest = AugmentationPlugin(try XCTUnwrap(registry.plugins(of: .augmentation).first { $0.instanceID == "hostile" }))

        let event = AugmentableEvent(
            id: "e1", typeCode: 17, name: "LEVEL UP", timeMs: 1, attributes: [("Level", .int(1)), ("Drop", .string("x")), ("Keep", .string("ß"))])
        let (inProcess, statuses) = Self.editedInProcess(event, edits)
        XCTAssertEqual(
            Array(statuses.prefix(refused.count)), Array(repeating: HH_ERR_INVALID_ARGUMENT, count: refused.count), "each is refused in process")
        XCTAssertEqual(Array(statuses[refused.count..<refused.count + healthy.count]), Array(repeating: HH_OK, count: healthy.count))

        let outcome = guest.augment(event)
        XCTAssertEqual(outcome.status, HH_OK, outcome.message)
        XCTAssertEqual(outcome.event, inProcess, "the guest's edits leave what the same edits leave in process")

        let stored = outcome.event
        XCTAssertEqual(stored.attributes.count, EventLimits.maxAttributes)
        for (name, value) in stored.attributes {
            XCTAssertFalse(name.isEmpty)
            XCTAssertLessThanOrEqual(name.utf8.count, EventLimits.maxNameBytes)
            XCTAssertFalse(name.contains("\u{FFFD}"), name)
            switch value {
            case .string(let string):
                XCTAssertLessThanOrEqual(string.utf8.count, EventLimits.maxStringValueBytes, name)
                XCTAssertFalse(string.contains("\u{FFFD}"), name)
            case .double(let number): XCTAssertTrue(number.isFinite, name)
            case .timeMs(let ms): XCTAssertTrue(SafeTime.validMs.contains(ms), name)
            default: break
            }
        }
        for name in [
            "Two MiB", "NaN", "Infinity", "Minus Infinity", "Before 1970", "After 9999", "Stray Byte", "Cut Sequence", "Surrogate", "Overlong",
            "Drop", "Extra 0", "Extra 991"
        ] {
            XCTAssertNil(stored[attribute: name], name)
        }
        XCTAssertEqual(stored[attribute: "Keep"], .string("ß"))
        XCTAssertEqual(stored[attribute: "Level"], .int(3))
        XCTAssertEqual(stored[attribute: "Last Valid Time"], .timeMs(253_402_300_799_999))
        XCTAssertEqual(stored[attribute: String(repeating: "k", count: 1024)], .string("a name of exactly 1 KiB"))
        XCTAssertEqual(stored[attribute: "One MiB"], .string(String(repeating: "\0", count: 1 << 20)))
        XCTAssertEqual(stored[attribute: "Ünïcode ✓ 𝄞"], .string("ß"))
        // Three given, "Drop" removed, seven new healthy ones: room for "Extra 0" to "Extra 990".
        XCTAssertEqual(stored[attribute: "Extra 990"], .int(990))
        XCTAssertEqual(stored[attribute: "After The Limit"], .bool(true))
    }

    /// One C source that tries every edit the editor refuses, run in process, in a worker process
    /// and as a .wasm: it hears HH_ERR_INVALID_ARGUMENT for each (the guest adapter answers as the
    /// host's editor does, UTF-8 and times included), and the three leave the same event. The guest
    /// gets more fuel than the default: its 1,000 appends each search the attributes by name.
    func testRefusedEditsAreHeardAndLeftOutAlikeInProcessInAWorkerAndAsWasm() throws {
        let native = try TestSupport.compileFixture("refused_edits_augmentation.c", into: folder + "/build-so", name: "librefused.so")
        let wasm = try buildWasm("refused.wasm", ["\(TestSupport.repository)/Tests/Fixtures/refused_edits_augmentation.c"])
        let exports = [("refused-edits", "augmentation")]
        let nativeYAML = try manifest(id: "refused-so", library: native, abi: "1.0", exports: exports)
        let registry = try registry(
            """
              - id: native
                use: \(nativeYAML)
              - id: worker
                use: \(nativeYAML)
                isolation: process
              - id: guest
                use: \(try manifest(id: "refused-wasm", library: wasm, abi: "1.0", exports: exports))
                wasm_fuel: 1000000000
            """)
        let plugins = registry.plugins(of: .augmentation)
        func plugin(_ instance: String) throws -> AugmentationPlugin {
            AugmentationPlugin(try XCTUnwrap(plugins.first { $0.instanceID == instance }, instance))
        }
        let event = AugmentableEvent(id: "e1", typeCode: 17, name: "LEVEL UP", timeMs: 1, attributes: [("Drop", .string("x"))])
        let inProcess = try plugin("native").augment(event)
        XCTAssertEqual(inProcess.status, HH_OK, inProcess.message)
        let refused = [
            "Empty Name", "Long Name", "Big Value", "NaN", "Infinity", "Minus Infinity", "Before 1970", "After 9999", "Stray Byte",
            "Cut Sequence", "Surrogate", "Overlong", "Stray Byte Name", "Count Limit"
        ]
        for label in refused {
            XCTAssertEqual(inProcess.event[attribute: "Heard \(label)"], .int(Int64(HH_ERR_INVALID_ARGUMENT)), label)
        }
        for label in ["Last Valid Time", "Unicode", "Fine"] {
            XCTAssertEqual(inProcess.event[attribute: "Heard \(label)"], .int(Int64(HH_OK)), label)
        }
        XCTAssertEqual(inProcess.event.attributes.count, EventLimits.maxAttributes)
        XCTAssertNil(inProcess.event[attribute: "Drop"])
        XCTAssertEqual(inProcess.event[attribute: "Unicode"], .string("Ünïcode ✓ 𝄞"))

        let inWorker = try plugin("worker").augment(event)
        XCTAssertEqual(inWorker, inProcess, "a worker runs the in-process editor")
        let asWasm = try plugin("guest").augment(event)
        XCTAssertEqual(asWasm, inProcess)
        for label in refused {
            XCTAssertEqual(asWasm.event[attribute: "Heard \(label)"], .int(Int64(HH_ERR_INVALID_ARGUMENT)), label)
        }
    }

    // MARK: Budgets and failures

    /// A hand-written guest: one trigger operator whose compare misbehaves as the event value says
    /// (1 loops, 2 recurses without end, 3 traps, 4 grows memory until refused then answers true;
    /// anything else answers false).
    private static let misbehavingOperator = #"""
        (module
          (@custom "hubhost_abi" "\01\00\00\00\01\00\00\00\00\00\00\00")
          (memory (export "memory") 1)
          (data (i32.const 64) "\01\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\04\00\00\00spin\04\00\00\00Spin\00\00\00\00\05\00\00\001.0.0\03\00\00\00")
          (data (i32.const 256) "\04\00\00\00SPIN\00\00\00\00")
          (data (i32.const 300) "\01\00\00\00\00\00\00\00\00")
          (data (i32.const 320) "\00\00\00\00\00\00\00\00\00")
          (func (export "hh_wasm_buffer") (param i32) (result i32)
            (if (result i32) (i32.gt_u (local.get 0) (i32.const 4096)) (then (i32.const 0)) (else (i32.const 1024))))
          (func (export "hh_wasm_describe") (result i64) (i64.or (i64.shl (i64.const 49) (i64.const 32)) (i64.const 64)))
          (func (export "hh_wasm_create") (param i32) (result i32) (i32.const 0))
          (func (export "hh_wasm_destroy") (param i32))
          (func $down (param i64) (result i64) (i64.add (call $down (local.get 0)) (i64.const 1)))
          (func (export "hh_wasm_call") (param $index i32) (param $op i32) (param $length i32) (result i64)
            (local $mode i64)
            (if (i32.eq (local.get $op) (i32.const 4))
              (then (return (i64.or (i64.shl (i64.const 12) (i64.const 32)) (i64.const 256)))))
            (local.set $mode (i64.load (i32.const 1025)))
            (if (i64.eq (local.get $mode) (i64.const 1)) (then (loop $spin (br $spin))))
            (if (i64.eq (local.get $mode) (i64.const 2)) (then (drop (call $down (i64.const 0)))))
            (if (i64.eq (local.get $mode) (i64.const 3)) (then unreachable))
            (if (i64.eq (local.get $mode) (i64.const 4))
              (then
                (loop $grow (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
                (return (i64.or (i64.shl (i64.const 9) (i64.const 32)) (i64.const 300)))))
            (i64.or (i64.shl (i64.const 9) (i64.const 32)) (i64.const 320)))
        )
        """#

    private func misbehavingRegistry(_ module: String = WasmPluginTests.misbehavingOperator) throws -> PluginRegistry {
        _ = FileManager.default.createFile(atPath: folder + "/spin.wasm", contents: Data(try wat2wasm(module)))
        let yaml = try manifest(id: "spin", library: folder + "/spin.wasm", exports: [("spin", "trigger_operator")])
        return try registry("  - id: spin\n    use: \(yaml)\n    wasm_fuel: 2000000\n    wasm_memory_limit: 2")
    }

    func testALoopARecursionATrapAndUnboundedGrowthStayInsideTheGuestAndTheInstanceServesTheNextCall() throws {
        let registry = try misbehavingRegistry()
        let entry = try XCTUnwrap(registry.entry(id: "spin"))
        XCTAssertEqual(entry.state, .loaded)
        let spin = try operatorNamed(registry, instance: "spin", "spin")
        XCTAssertEqual(spin.operatorName, "SPIN")
        guard case .wasm(let guest, _) = spin.handle.backend else { return XCTFail("not a wasm plugin") }

        let started = Date()
        let loop = spin.compare(event: .int(1), trigger: .null)
        XCTAssertEqual(loop.result, false)
        XCTAssertEqual(loop.status, HH_ERR_TIMEOUT, loop.reason)
        XCTAssertTrue(loop.reason.contains("ran out of fuel"), loop.reason)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)

        let recursion = spin.compare(event: .int(2), trigger: .null)
        XCTAssertEqual(recursion.result, false)
        XCTAssertNotEqual(recursion.status, HH_OK)
        XCTAssertTrue(recursion.reason.contains("trapped") || recursion.reason.contains("fuel"), recursion.reason)

        let trap = spin.compare(event: .int(3), trigger: .null)
        XCTAssertEqual(trap.result, false)
        XCTAssertEqual(trap.status, HH_ERR_UNAVAILABLE)
        XCTAssertTrue(trap.reason.contains("trapped"), trap.reason)

        // Growth past the 2 MiB ceiling is refused inside the guest, which then answers normally.
        let grown = spin.compare(event: .int(4), trigger: .null)
        XCTAssertEqual(grown.status, HH_OK, grown.reason)
        XCTAssertEqual(grown.result, true)

        let after = spin.compare(event: .int(0), trigger: .null)
        XCTAssertEqual(after.status, HH_OK, after.reason)
        XCTAssertEqual(after.result, false)
        XCTAssertEqual(guest.reinstantiations, 3)
    }

    /// A guest that waits on the host burns no fuel: one that spins on `monotonic_ns`, and one
    /// that loops over HTTP requests to a server that never answers (each within its http_timeout),
    /// both with fuel for hours. The call's wall-clock deadline (`call_timeout`) ends each as a
    /// timeout, and the next call is served by a new instantiation.
    func testAGuestWaitingOnTheHostIsStoppedAtItsWallClockDeadline() throws {
        let collector = try TestCollector()
        defer { collector.stop() }
        collector.script([], then: .hang)
        func le32(_ n: Int) -> String { String(format: "\\%02x\\%02x\\%02x\\%02x", n & 255, (n >> 8) & 255, (n >> 16) & 255, (n >> 24) & 255) }
        let url = collector.url
        // hubhost_wasm.h's encoded HTTP request: method, URL, no headers, no body, no timeout of its own.
        let request = le32(3) + "GET" + le32(url.utf8.count) + url + le32(0) + le32(0) + le32(0)
        let length = 4 + 3 + 4 + url.utf8.count + 12
        let module = Self.misbehavingOperator
            .replacingOccurrences(
                of: "(memory (export \"memory\") 1)",
                with: """
                    (import "hubhost" "monotonic_ns" (func $now (result i64)))
                      (import "hubhost" "http_fetch" (func $fetch (param i32 i32 i32) (result i32)))
                      (memory (export "memory") 1)
                      (data (i32.const 512) "\(request)")
                    """
            )
            .replacingOccurrences(
                of: "(if (i64.eq (local.get $mode) (i64.const 3)) (then unreachable))",
                with: """
                    (if (i64.eq (local.get $mode) (i64.const 3)) (then unreachable))
                        (if (i64.eq (local.get $mode) (i64.const 5)) (then (loop $clock (drop (call $now)) (br $clock))))
                        (if (i64.eq (local.get $mode) (i64.const 6))
                          (then (loop $ask (drop (call $fetch (i32.const 512) (i32.const \(length)) (i32.const 2000))) (br $ask))))
                    """)
        _ = FileManager.default.createFile(atPath: folder + "/spin.wasm", contents: Data(try wat2wasm(module)))
        let yaml = try manifest(id: "spin", library: folder + "/spin.wasm", exports: [("spin", "trigger_operator")])
        let registry = try registry(
            "  - id: spin\n    use: \(yaml)\n    wasm_fuel: 100000000000\n    call_timeout: 1s\n    http_allow: [127.0.0.1]\n    http_timeout: 300ms")
        let spin = try operatorNamed(registry, instance: "spin", "spin")
        guard case .wasm(let guest, _) = spin.handle.backend else { return XCTFail("not a wasm plugin") }

        for mode in [5, 6] {
            let started = Date()
            let answered = DispatchSemaphore(value: 0)
            let outcome = ConcurrentResults<(status: Int32, reason: String)>()
            DispatchQueue.global().async {
                let compared = spin.compare(event: .int(Int64(mode)), trigger: .null)
                outcome.lock.withLock { outcome.values[0] = .success((compared.status, compared.reason)) }
                answered.signal()
            }
            guard answered.wait(timeout: .now() + 20) == .success, let result = try outcome.lock.withLock({ outcome.values[0] })?.get() else {
                return XCTFail("mode \(mode): the call did not end within 20 s")
            }
            let elapsed = Date().timeIntervalSince(started)
            XCTAssertEqual(result.status, HH_ERR_TIMEOUT, "mode \(mode): \(result.reason)")
            XCTAssertTrue(result.reason.contains("call deadline"), "mode \(mode): \(result.reason)")
            XCTAssertGreaterThanOrEqual(elapsed, 0.9, "mode \(mode) ran until its deadline")
            XCTAssertLessThan(elapsed, 5, "mode \(mode) ended near its 1 s deadline")
        }
        XCTAssertGreaterThanOrEqual(collector.requests.count, 2, "the guest asked the server, each request cut at its http_timeout")
        XCTAssertLessThanOrEqual(collector.requests.count, 5, "no more requests than fit in the deadline")
        let after = spin.compare(event: .int(0), trigger: .null)
        XCTAssertEqual(after.status, HH_OK, after.reason)
        XCTAssertEqual(guest.reinstantiations, 2)
    }

    /// A guest that recurses until its stack is exhausted, on every call: each failure is one line
    /// (the trap's reason, not its backtrace), and the log gets one line per 10 s, not one per call.
    func testATrapIsOneShortLineAndRepeatedTrapsAreRateLimited() throws {
        _ = FileManager.default.createFile(atPath: folder + "/spin.wasm", contents: Data(try wat2wasm(Self.misbehavingOperator)))
        let yaml = try manifest(id: "spin", library: folder + "/spin.wasm", exports: [("spin", "trigger_operator")])
        try TestSupport.write("data_dir: data\nplugins:\n  - id: spin\n    use: \(yaml)\n    wasm_fuel: 500000000\n", to: folder + "/plugins.yaml")
        let capture = LogCapture()
        let pipeline = LogPipeline(filter: LogFilter(severity: .info, verbosity: .info))
        pipeline.attach([capture])
        let registry = PluginRegistry(manifest: try HostManifest.load(path: folder + "/plugins.yaml"), pipeline: pipeline)
        registry.loadAll()
        defer { registry.shutdown() }
        let spin = try operatorNamed(registry, instance: "spin", "spin")
        for _ in 0..<20 {
            let answer = spin.compare(event: .int(2), trigger: .null)
            XCTAssertNotEqual(answer.status, HH_OK)
            XCTAssertFalse(answer.reason.contains("\n"), answer.reason)
            XCTAssertLessThan(answer.reason.utf8.count, 400, answer.reason)
        }
        let lines = capture.records.filter { $0.message.hasPrefix("instance 'spin' (spin)") }.map(\.message)
        XCTAssertEqual(lines.count, 1, "\(lines)")
        XCTAssertLessThan(lines.first?.utf8.count ?? 0, 600)
        var limit = LogRateLimit(seconds: 10)
        XCTAssertTrue(limit.admit(nowNs: 1).write)
        XCTAssertFalse(limit.admit(nowNs: 2).write)
        XCTAssertFalse(limit.admit(nowNs: 3).write)
        XCTAssertEqual(limit.admit(nowNs: 11_000_000_001).leftOut, 2)
    }

    /// The isolation tests' faulty plugins, built as .wasm: each fault fails at most its own call
    /// (or its load), the instance answers the next call, and a hang out of fuel fails only that
    /// plugin's part of the event, early.
    func testTheFaultyFixturesBuiltAsWasmFailOnlyTheirOwnCallsAndAHangFailsOnlyItsOwnPart() throws {
        let faults = ["HANG", "ABORT", "ALLOC", "OVERFLOW", "SEGFAULT", "GARBAGE_STATUS", "WRONG_ABI"]
        var instances: [String] = []
        for fault in faults {
            let wasm = try buildWasm(
                "faulty-\(fault).wasm", ["\(TestSupport.repository)/Tests/Fixtures/faulty_plugins.c"], defines: ["FAULT_\(fault)"])
            let id = "faulty-" + fault.lowercased().replacingOccurrences(of: "_", with: "-")
            let yaml = try manifest(
                id: id, library: wasm, abi: "1.0", exports: [("faulty-augmentation", "augmentation"), ("faulty-operator", "trigger_operator")])
            instances.append("  - id: \(id)\n    use: \(yaml)\n    wasm_fuel: 2000000\n    wasm_memory_limit: 16")
        }
        let registry = try registry(instances.joined(separator: "\n"))
        guard case .failed(.abiMismatch(_, let claimed, _))? = registry.entry(id: "faulty-wrong-abi")?.state else {
            return XCTFail("\(String(describing: registry.entry(id: "faulty-wrong-abi")?.state))")
        }
        XCTAssertEqual(claimed.major, 7)
        let event = AugmentableEvent(id: "e1", typeCode: 17, name: "PLAYER LOADED", timeMs: 1, attributes: [("Level", .int(2))])
        var statuses: [String: Int32] = [:]
        for fault in faults.dropLast() {
            let id = "faulty-" + fault.lowercased().replacingOccurrences(of: "_", with: "-")
            XCTAssertEqual(registry.entry(id: id)?.state, .loaded, id)
            let plugin = AugmentationPlugin(try XCTUnwrap(registry.plugins(of: .augmentation).first { $0.instanceID == id }))
            let outcome = plugin.augment(event)
            statuses[fault] = outcome.status
            if outcome.status != HH_OK { XCTAssertEqual(outcome.event, event, fault) }
            XCTAssertTrue(plugin.isSupplementalDataReady, "\(fault): the instance answers the next call")
        }
        XCTAssertEqual(statuses["HANG"], HH_ERR_TIMEOUT)
        XCTAssertEqual(statuses["ABORT"], HH_ERR_UNAVAILABLE)
        // malloc fails at the ceiling; the fixture then writes through NULL until it traps or runs out of fuel.
        XCTAssertTrue([HH_ERR_UNAVAILABLE, HH_ERR_TIMEOUT].contains(statuses["ALLOC"]), "\(String(describing: statuses["ALLOC"]))")
        XCTAssertEqual(statuses["GARBAGE_STATUS"], 12345)
        // A NULL write lands in the guest's own memory (address 0 is valid there): the host never sees it.
        XCTAssertEqual(statuses["SEGFAULT"], HH_OK)

        let hang = AugmentationPlugin(try XCTUnwrap(registry.plugins(of: .augmentation).first { $0.instanceID == "faulty-hang" }))
        let timeline = AugmentationTimeline(plugins: [hang], timeoutSeconds: 30, logger: Logger(label: "test"))
        let started = Date()
        let tracked = timeline.run(Event(type: .namedEvent, name: "SLOW", timestampMs: 1_402_358_400_000))
        XCTAssertEqual(tracked.status, .notPosted, "out of fuel is that plugin's failure, not the event's timeout")
        XCTAssertNil(tracked[attribute: "Fixture"])
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "ended by fuel, not by the 30 s timeout")
    }

    func testWrongExportSignaturesAndForeignImportsAreRefusedAtLoad() throws {
        let wrongCall = Self.misbehavingOperator.replacingOccurrences(
            of: "(param $index i32) (param $op i32) (param $length i32) (result i64)",
            with: "(param $index i32) (param $op i32) (param $length i64) (result i64)")
        let entry = try XCTUnwrap(try misbehavingRegistry(wrongCall).entry(id: "spin"))
        guard case .failed(let error) = entry.state else { return XCTFail("\(entry.state)") }
        XCTAssertTrue("\(error)".contains("hh_wasm_call as (i32, i32, i64) -> (i64)"), "\(error)")

        let foreign = Self.misbehavingOperator.replacingOccurrences(
            of: "(memory (export \"memory\") 1)", with: "(import \"env\" \"open\" (func (param i32) (result i32))) (memory (export \"memory\") 1)")
        let other = try XCTUnwrap(try misbehavingRegistry(foreign).entry(id: "spin"))
        guard case .failed(let refusal) = other.state else { return XCTFail("\(other.state)") }
        XCTAssertTrue("\(refusal)".contains("env.open"), "\(refusal)")
    }

    func testTheBudgetKeysAreReadFromPluginsYAMLAndCheckedAtLoad() throws {
        try TestSupport.write(
            """
            data_dir: data
            plugins:
              - id: a
                use: \(TestSupport.plugin("Noop"))
                wasm_fuel: 123456
                wasm_memory_limit: 3
              - id: b
                use: \(TestSupport.plugin("Noop"))
                wasm_fuel: 5
                wasm_memory_limit: 0
            """, to: folder + "/budgets.yaml")
        let manifest = try HostManifest.load(path: folder + "/budgets.yaml")
        XCTAssertEqual(manifest.instances[0].wasm, WasmBudget(fuelPerCall: 123_456, memoryLimitMB: 3))
        XCTAssertEqual(manifest.diagnostics.map(\.message).filter { $0.contains("fuel of one call") || $0.contains("memory ceiling") }.count, 2)
    }
}
