import HubHostABI
import XCTest

@testable import HubHostKit

/// The ABI headers are the contract: they must compile as plain, pedantic C11 (and C++) with no
/// warnings, so a plugin author's compiler never trips on them.
final class ABIHeaderTests: XCTestCase {
    func testHeadersCompileAsStrictC11AndCxx() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let headers = try FileManager.default.contentsOfDirectory(atPath: TestSupport.repository + "/Protocols/include/hubhost")
            .filter { $0.hasSuffix(".h") }.sorted()
        XCTAssertEqual(headers.count, 16)
        for header in headers {
            // Each header must stand alone, included first.
            let source = "#include <hubhost/\(header)>\nint hubhost_header_test(void);\nint hubhost_header_test(void) { return 0; }\n"
            for (compiler, standard, file) in [("cc", "c11", "c_test.c"), ("c++", "c++17", "cxx_test.cpp")] {
                try TestSupport.write(source, to: folder + "/" + file)
                let compiled = try TestSupport.run(
                    "/usr/bin/env",
                    [
                        compiler, "-std=\(standard)", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                        "-I", TestSupport.repository + "/Protocols/include", folder + "/" + file, "-o", folder + "/\(file).o"
                    ])
                XCTAssertEqual(compiled.status, 0, "\(header) as \(standard): \(compiled.stderr)")
            }
        }
    }

    /// The optional helpers expand, in a plugin, to clean C11 and C++17: a single-plugin library, a
    /// library over a descriptor array, and hh_report.
    func testPluginHelpersExpandAsStrictC11AndCxx() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let common = """
            #include <hubhost/hubhost.h>
            #include <hubhost/hubhost_plugin_helpers.h>
            static hh_status_t compare(void *instance, const hh_value_t *event, const hh_value_t *trigger, bool *out) {
                (void)instance; (void)event; (void)trigger; *out = true; return HH_OK;
            }
            static const hh_trigger_operator_v1_t api = { "ANY", 0, compare };
            static hh_status_t create(const hh_host_t *host, void **out_instance) {
                if (!out_instance) return hh_report(host, HH_ERR_INVALID_ARGUMENT, "no %s (%d)", "out_instance", 1);
                *out_instance = NULL;
                return HH_OK;
            }
            static void destroy(void *instance) { (void)instance; }

            """
        let single =
            common + """
                HH_SINGLE_PLUGIN_LIBRARY("any", "Any", "True for any values.", "1.0.0", HH_KIND_TRIGGER_OPERATOR, &api, create, destroy);
                """
        let several =
            common + """
                static const hh_plugin_descriptor_t plugins[] = {
                    HH_PLUGIN_DESCRIPTOR("any", "Any", "True for any values.", "1.0.0", HH_KIND_TRIGGER_OPERATOR, &api, create, destroy),
                    HH_PLUGIN_DESCRIPTOR("any-2", "Any 2", "True for any values.", "1.0.0", HH_KIND_TRIGGER_OPERATOR, &api, create, destroy),
                };
                HH_PLUGIN_LIBRARY(plugins);
                """
        for (name, source) in [("single", single), ("several", several)] {
            for (compiler, standard, suffix) in [("cc", "-std=c11", "c"), ("c++", "-std=c++17", "cpp")] {
                try TestSupport.write(source, to: folder + "/\(name).\(suffix)")
                let result = try TestSupport.run(
                    "/usr/bin/env",
                    [
                        compiler, standard, "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                        "-I", TestSupport.repository + "/Protocols/include",
                        folder + "/\(name).\(suffix)", "-o", folder + "/\(name)-\(suffix).o"
                    ])
                XCTAssertEqual(result.status, 0, "\(name) as \(standard): \(result.stderr)")
            }
        }
    }

    /// The isolation protocol's op codes are written once, in hubhost_wire_ops.h: every WorkerOp has
    /// its HH_WIRE_OP_* constant with the same number (WorkerOp reads it from the header), every
    /// constant has its WorkerOp, no two share a code, the guest adapter uses the header rather
    /// than numbers of its own, and the header stays out of what plugins include.
    func testWorkerOpsAreTheWireOpsHeadersCodes() throws {
        let protocols = TestSupport.repository + "/Protocols"
        let header = try String(contentsOfFile: protocols + "/include/hubhost/hubhost_wire_ops.h", encoding: .utf8)
        var constants: [String: Int] = [:]
        for match in header.matches(of: /HH_WIRE_OP_([A-Z_]+) *= *([0-9]+)/) {
            XCTAssertNil(constants.updateValue(Int(match.2)!, forKey: String(match.1)), "HH_WIRE_OP_\(match.1) is defined twice")
        }
        // WorkerOp.processSynchronously is HH_WIRE_OP_PROCESS_SYNCHRONOUSLY, .advertiserID HH_WIRE_OP_ADVERTISER_ID.
        func constantName(_ op: WorkerOp) -> String {
            "\(op)".replacing(/([a-z])([A-Z])/) { "\($0.1)_\($0.2)" }.uppercased()
        }
        for op in WorkerOp.allCases {
            XCTAssertEqual(constants[constantName(op)], Int(op.rawValue), "WorkerOp.\(op) and HH_WIRE_OP_\(constantName(op)) in hubhost_wire_ops.h")
            XCTAssertEqual(WorkerOp(rawValue: op.rawValue), op, "code \(op.rawValue) reads back as WorkerOp.\(op)")
        }
        XCTAssertEqual(
            Set(constants.keys), Set(WorkerOp.allCases.map(constantName)), "every HH_WIRE_OP_* constant has its WorkerOp case, and the reverse")
        XCTAssertEqual(Set(constants.values).count, constants.count, "two ops share a code: \(constants)")
        XCTAssertNil(WorkerOp(rawValue: 0))

        let guest = try String(contentsOfFile: protocols + "/wasm/hubhost_wasm_guest.c", encoding: .utf8)
        XCTAssertTrue(guest.contains("#include <hubhost/hubhost_wire_ops.h>"), "the guest adapter reads the op codes from the header")
        XCTAssertTrue(guest.matches(of: /\bOP_[A-Z_]+ *= *[0-9]/).isEmpty, "the guest adapter defines op codes of its own")
        for plugins in ["hubhost.h", "hubhost.modulemap", "hubhost_plugin_helpers.h"] {
            let text = try String(contentsOfFile: protocols + "/include/hubhost/" + plugins, encoding: .utf8)
            XCTAssertFalse(text.contains("hubhost_wire_ops.h"), "\(plugins) is what plugins include: the wire ops are not part of the ABI")
        }
    }

    func testHostAndHeaderVersionsAgree() {
        // 1.2 added the host extension "hubhost.event_trace.v1" (hubhost_event_sink.h), nothing else.
        XCTAssertEqual(ABIVersion.host, ABIVersion(major: 1, minor: 2, patch: 0))
        XCTAssertEqual(HH_HOST_EXT_EVENT_TRACE, "hubhost.event_trace.v1")
        XCTAssertEqual(MemoryLayout<hh_sink_event_t>.stride, 80, "hh_sink_event_t keeps its 1.1 layout (the host allocates arrays of it)")
        XCTAssertEqual(PluginKind.allCases.map(\.code), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        // The kinds added in 1.1 carry the header's constants and say when they came.
        XCTAssertEqual(PluginKind.eventSink.code, HH_KIND_EVENT_SINK)
        XCTAssertEqual(PluginKind.userIDGenerator.code, HH_KIND_USER_ID_GENERATOR)
        XCTAssertEqual(PluginKind.deviceConditions.code, HH_KIND_DEVICE_CONDITIONS)
        XCTAssertEqual(PluginKind.downloadRequest.code, HH_KIND_DOWNLOAD_REQUEST)
        XCTAssertEqual(PluginKind.allCases.filter { $0.introducedInMinor == 1 }, [.eventSink, .userIDGenerator, .deviceConditions, .downloadRequest])
    }
}
