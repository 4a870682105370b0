import HubHostKit

/// The Swift source of a new plugin, as `hubhost plugins new --lang swift` writes it: one file that
/// swiftc builds into the library with only the ABI headers, imported as the Clang module HubHostABI
/// through the module map `hubhost plugins sdk --swift-flags` names. It needs no Swift package and no
/// HubHostPluginSupport, so an installed hubhost is enough. Each kind behaves as its C template does,
/// with the same plugin.yaml config.
enum SwiftPluginTemplate {
    /// The kinds `--lang swift` writes.
    static let kinds: [PluginKind] = [.augmentation, .triggerOperator]

    /// The Swift module name: the id in UpperCamelCase with `Plugin`, never a keyword or a system module.
    static func moduleName(_ n: CPluginTemplate.Names) -> String {
        n.symbol.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Plugin"
    }

    /// The swiftc line: the Makefile's, with its variables; the README's, with what they stand for.
    static func compileLine(
        _ n: CPluginTemplate.Names, swiftc: String = "$(SWIFTC)", flags: String = "$(SWIFTFLAGS)", sdk: String = "$(HUBHOST_SWIFT_FLAGS)",
        output: String = "$@"
    ) -> String {
        "\(swiftc) -emit-library -parse-as-library -swift-version 6 \(flags) -module-name \(moduleName(n)) \(sdk) -o \(output) \(n.id).swift"
    }

    static func makefile(_ n: CPluginTemplate.Names) -> String {
        let library = "lib\(n.id).so"
        return #"""
            # Builds the hubhost plugin \#(n.id) in Swift (made by `hubhost plugins new`), with swiftc alone:
            # no Swift package and no hubhost checkout, only an installed (or any built) hubhost.
            #   make          \#(library), beside plugin.yaml
            #   make test     the conformance suite: hubhost plugins test plugin.yaml
            #   make package  \#(n.id)-0.1.0.hhp, one file to install elsewhere: hubhost plugins pack .
            # `import HubHostABI` is the C headers as a Clang module: `hubhost plugins sdk --swift-flags` prints
            # -I<include> -Xcc -fmodule-map-file=<include>/hubhost/hubhost.modulemap for this hubhost.
            HUBHOST ?= hubhost
            SWIFTC ?= swiftc
            SWIFTFLAGS ?= -O
            ifeq ($(strip $(HUBHOST_SWIFT_FLAGS)),)
            HUBHOST_SWIFT_FLAGS := $(shell $(HUBHOST) plugins sdk --swift-flags)
            endif

            \#(library): \#(n.id).swift
            \#t@test -n "$(HUBHOST_SWIFT_FLAGS)" || { echo "no hubhost module map: install hubhost (scripts/install) or put hubhost on PATH, or set HUBHOST_SWIFT_FLAGS" >&2; exit 1; }
            \#t\#(compileLine(n))

            test: \#(library)
            \#t$(HUBHOST) plugins test plugin.yaml

            package: \#(library)
            \#t$(HUBHOST) plugins pack .

            clean:
            \#trm -f \#(library) *.hhp

            .PHONY: test package clean

            """#
    }

    /// The source for `kind`, or nil when `--lang swift` does not write that kind.
    static func source(_ kind: PluginKind, _ n: CPluginTemplate.Names) -> String? {
        switch kind {
        case .augmentation:
            return header(n, "an augmentation that adds one attribute, from its config, to every event.") + augmentation(n) + library(n)
        case .triggerOperator:
            return header(n, "a trigger operator, \(n.operatorName), true when the event's number is at least the trigger's.")
                + triggerOperator(n) + library(n)
        default: return nil
        }
    }

    static func header(_ n: CPluginTemplate.Names, _ what: String) -> String {
        #"""
        // \#(n.id): \#(what)
        // Made by `hubhost plugins new`. Build with `make`, check with `make test`; the ABI rules and
        // every kind are in hubhost's docs/plugin-authoring.md. HubHostABI is the C headers
        // (hubhost.h, hubhost_plugin_helpers.h): the host calls the functions below through C pointers.
        import HubHostABI

        /// A NUL-terminated C string in the library's constant data: what the descriptor's fields need.
        private func cString(_ text: StaticString) -> UnsafePointer<CChar> {
            UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
        }

        /// Hands `message` to the host (it copies it) to explain a failure, and answers `status`.
        private func report(_ host: UnsafePointer<hh_host_t>, _ status: hh_status_t, _ message: String) -> hh_status_t {
            var message = message
            message.withUTF8 { bytes in
                let text = hh_string_t(data: UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: bytes.count)
                host.pointee.report_error(host, status, text)
            }
            return status
        }

        /// The instance's state for the host's opaque pointer: retained in create, released in destroy.
        private func state(_ instance: UnsafeMutableRawPointer) -> Instance {
            Unmanaged<Instance>.fromOpaque(instance).takeUnretainedValue()
        }

        private func destroy(_ instance: UnsafeMutableRawPointer?) {
            if let instance { Unmanaged<Instance>.fromOpaque(instance).release() }
        }


        """#
    }

    static func augmentation(_ n: CPluginTemplate.Names) -> String {
        #"""
        /// Immutable after create, so augment may run on many threads at once.
        private final class Instance {
            let host: UnsafePointer<hh_host_t>  // valid until destroy
            let attribute: hh_string_t  // config bytes are host-owned and valid until destroy: no copy
            let value: hh_value_t

            init(host: UnsafePointer<hh_host_t>, attribute: hh_string_t, value: hh_value_t) {
                self.host = host
                self.attribute = attribute
                self.value = value
            }
        }

        private func create(_ host: UnsafePointer<hh_host_t>?, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t {
            guard let host, let out else { return HH_ERR_INVALID_ARGUMENT }
            let attribute = hh_config_string(host, "attribute")
            guard attribute.length > 0 else { return report(host, HH_ERR_CONFIG, "set 'attribute' to a name, e.g. attribute: Source") }
            var value = hh_value_t()
            guard host.pointee.config_get(host, "value", &value) == HH_OK, value.type == HH_VALUE_STRING else {
                return report(host, HH_ERR_CONFIG, "set 'value' to a text, e.g. value: hello")
            }
            out.pointee = Unmanaged.passRetained(Instance(host: host, attribute: attribute, value: value)).toOpaque()
            return HH_OK
        }

        /// [thread-safe]: reads only the instance's constant state; the event and editor are borrowed.
        private func augment(
            _ instance: UnsafeMutableRawPointer?, _ event: UnsafePointer<hh_event_view_t>?, _ editor: UnsafePointer<hh_event_editor_t>?
        ) -> hh_status_t {
            guard let instance, let event, let editor else { return HH_ERR_INVALID_ARGUMENT }
            let this = state(instance)
            var existing = hh_value_t()
            if event.pointee.get_attribute(event, this.attribute, &existing) == HH_OK {
                return HH_OK  // the app set it: leave it
            }
            var value = this.value
            let status = editor.pointee.set_attribute(editor, this.attribute, &value)
            guard status == HH_OK else {
                return report(this.host, status, "cannot add '\(text(this.attribute))' to event \(text(event.pointee.event_id))")
            }
            return HH_OK
        }

        /// A borrowed hh_string_t as a String (invalid UTF-8 repaired), for messages.
        private func text(_ string: hh_string_t) -> String {
            guard let data = string.data, string.length > 0 else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: data, count: string.length), as: UTF8.self)
        }

        /// The kind's table: nothing later depends on this plugin's output, and its data is always ready.
        nonisolated(unsafe) private let api = table(
            hh_augmentation_v1_t(process_synchronously: { _ in false }, is_supplemental_data_ready: { _ in true }, augment: augment))

        nonisolated(unsafe) private let descriptor = table(
            hh_plugin_descriptor_t(
                id: cString("\#(n.id)"), name: cString("\#(n.id)"),  // plugin.yaml's exports: id
                description: cString("Adds an attribute from its config to every event."),
                version: cString("0.1.0"),  // plugin.yaml's version
                kind: HH_KIND_AUGMENTATION, kind_api: UnsafeRawPointer(api), create: create, destroy: destroy, get_extension: nil))


        """#
    }

    static func triggerOperator(_ n: CPluginTemplate.Names) -> String {
        #"""
        /// Immutable after create, so compare may run on many threads at once.
        private final class Instance {
            let inclusive: Bool

            init(inclusive: Bool) { self.inclusive = inclusive }
        }

        private func create(_ host: UnsafePointer<hh_host_t>?, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t {
            guard let host, let out else { return HH_ERR_INVALID_ARGUMENT }
            // The host filled the default from plugin.yaml; a value of another type counts as the default.
            var value = hh_value_t()
            let inclusive = host.pointee.config_get(host, "inclusive", &value) != HH_OK || value.type != HH_VALUE_BOOL || value.of.boolean
            out.pointee = Unmanaged.passRetained(Instance(inclusive: inclusive)).toOpaque()
            return HH_OK
        }

        private func number(_ value: hh_value_t) -> Double? {
            switch value.type {
            case HH_VALUE_INT64: return Double(value.of.int64)
            case HH_VALUE_DOUBLE: return value.of.real
            default: return nil
            }
        }

        /// [thread-safe]: reads only immutable state and the borrowed values.
        private func compare(
            _ instance: UnsafeMutableRawPointer?, _ event: UnsafePointer<hh_value_t>?, _ trigger: UnsafePointer<hh_value_t>?,
            _ result: UnsafeMutablePointer<Bool>?
        ) -> hh_status_t {
            guard let instance, let event, let trigger, let result else { return HH_ERR_INVALID_ARGUMENT }
            guard let eventNumber = number(event.pointee), let triggerNumber = number(trigger.pointee) else {
                return HH_ERR_TYPE_MISMATCH  // the host treats it as false
            }
            result.pointee = state(instance).inclusive ? eventNumber >= triggerNumber : eventNumber > triggerNumber
            return HH_OK
        }

        /// The kind's table; the operator name is upper case letters, digits and '_', and a wire code
        /// of 0 means campaigns name it by string only.
        nonisolated(unsafe) private let api = table(
            hh_trigger_operator_v1_t(operator_name: cString("\#(n.operatorName)"), wire_code: 0, compare: compare))

        nonisolated(unsafe) private let descriptor = table(
            hh_plugin_descriptor_t(
                id: cString("\#(n.id)"), name: cString("\#(n.id)"),  // plugin.yaml's exports: id
                description: cString("True when the event's number is at least the trigger's."),
                version: cString("0.1.0"),  // plugin.yaml's version
                kind: HH_KIND_TRIGGER_OPERATOR, kind_api: UnsafeRawPointer(api), create: create, destroy: destroy, get_extension: nil))


        """#
    }

    /// The library table and the one exported symbol, the same for every kind.
    static func library(_ n: CPluginTemplate.Names) -> String {
        #"""
        /// `value` copied to memory that is never freed: the host keeps these tables' addresses for
        /// the life of the process. Swift runs each global's initializer once, thread-safely.
        private func table<Table>(_ value: Table) -> UnsafePointer<Table> {
            let pointer = UnsafeMutablePointer<Table>.allocate(capacity: 1)
            pointer.initialize(to: value)
            return UnsafePointer(pointer)
        }

        nonisolated(unsafe) private let library = table(
            hh_library_t(
                abi_version: hh_version_t(major: 1, minor: 0, patch: 0),  // this kind is in ABI 1.0
                init: nil, deinit: nil, plugin_count: 1, get_plugin: { index in index == 0 ? descriptor : nil }))

        @_cdecl("hubhost_library_entry")
        public func hubhostLibraryEntry() -> UnsafePointer<hh_library_t> {
            library
        }

        """#
    }
}
