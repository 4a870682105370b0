import HubHostKit

/// The Rust crate of a new plugin, as `hubhost plugins new --lang rust` writes it: a `cdylib` with no
/// dependencies (so `cargo build --offline` works on a machine with no registry), whose `src/lib.rs`
/// declares the ABI's `#[repr(C)]` structs by hand, as docs/plugin-authoring.md's "Plugins in Rust"
/// does. Each kind behaves as its C template does, with the same plugin.yaml config.
enum RustPluginTemplate {
    /// The kinds `--lang rust` writes.
    static let kinds: [PluginKind] = [.augmentation, .triggerOperator]

    /// The crate's package name: the id's symbol with `_plugin`, so it is never a Rust keyword or a
    /// reserved crate name and never starts with a digit. Cargo builds `lib<crateName>.so`.
    static func crateName(_ n: CPluginTemplate.Names) -> String { n.symbol + "_plugin" }

    static func cargoToml(_ n: CPluginTemplate.Names) -> String {
        """
        # \(n.id): a hubhost plugin in Rust (made by `hubhost plugins new`). No dependencies: src/lib.rs
        # declares the ABI by hand, so `cargo build --offline` needs no registry.
        [package]
        name = "\(crateName(n))"
        version = "0.1.0"
        edition = "2021"
        publish = false

        [lib]
        crate-type = ["cdylib"]

        [profile.release]
        panic = "unwind" # each callback catches a panic with catch_unwind: none may cross into the host

        """
    }

    static func makefile(_ n: CPluginTemplate.Names) -> String {
        let library = "lib\(n.id).so"
        return #"""
            # Builds the hubhost plugin \#(n.id) in Rust (made by `hubhost plugins new`).
            #   make          \#(library), beside plugin.yaml: cargo build --release --offline, then a copy
            #                 of target/release/lib\#(crateName(n)).so under the name plugin.yaml's `library:` gives
            #   make test     the conformance suite: hubhost plugins test plugin.yaml
            #   make package  \#(n.id)-0.1.0.hhp, one file to install elsewhere: hubhost plugins pack .
            # The crate has no dependencies, so it builds offline; `hubhost` must be on PATH for test and package.
            HUBHOST ?= hubhost
            CARGO ?= cargo
            SOURCES := Cargo.toml $(wildcard src/*.rs src/*/*.rs)

            \#(library): $(SOURCES)
            \#t$(CARGO) build --release --offline --target-dir target
            \#tcp target/release/lib\#(crateName(n)).so $@

            test: \#(library)
            \#t$(HUBHOST) plugins test plugin.yaml

            package: \#(library)
            \#t$(HUBHOST) plugins pack .

            clean:
            \#t$(CARGO) clean --target-dir target
            \#trm -f \#(library) *.hhp

            .PHONY: test package clean

            """#
    }

    /// `src/lib.rs` for `kind`, or nil when `--lang rust` does not write that kind.
    static func source(_ kind: PluginKind, _ n: CPluginTemplate.Names) -> String? {
        switch kind {
        case .augmentation: return abi(n, "an augmentation that adds one attribute, from its config, to every event.") + augmentation(n)
        case .triggerOperator:
            return abi(n, "a trigger operator, \(n.operatorName), true when the event's number is at least the trigger's.")
                + triggerOperator(n)
        default: return nil
        }
    }

    /// The part of hubhost_plugin.h every kind uses: values, the host table, descriptor and library.
    /// Long: it is one string literal, the generated Rust source itself.
    static func abi(_ n: CPluginTemplate.Names, _ what: String) -> String {
        #"""
        //! \#(n.id): \#(what)
        //! Made by `hubhost plugins new`. Build with `make`, check with `make test`; the ABI rules and
        //! every kind are in hubhost's docs/plugin-authoring.md. The `#[repr(C)]` types mirror
        //! hubhost_plugin.h and the kind's header field by field: their layout is the contract.
        #![allow(dead_code)]

        use std::ffi::{c_char, c_void};
        use std::panic::catch_unwind;

        // ---- hubhost_plugin.h ----------------------------------------------------------------------

        const HH_OK: i32 = 0;
        const HH_ERR_INVALID_ARGUMENT: i32 = 1;
        const HH_ERR_CONFIG: i32 = 2;
        const HH_ERR_TYPE_MISMATCH: i32 = 4;
        const HH_ERR_NOT_FOUND: i32 = 5;
        const HH_ERR_INTERNAL: i32 = 8;

        const HH_VALUE_NULL: i32 = 0;
        const HH_VALUE_STRING: i32 = 1;
        const HH_VALUE_INT64: i32 = 2;
        const HH_VALUE_DOUBLE: i32 = 3;
        const HH_VALUE_BOOL: i32 = 4;

        const HH_KIND_AUGMENTATION: i32 = 2;
        const HH_KIND_TRIGGER_OPERATOR: i32 = 3;

        #[repr(C)]
        pub struct HhVersion {
            major: u32,
            minor: u32,
            patch: u32,
        }

        /// UTF-8 with an explicit length, not NUL-terminated; `data` may be null when `length` is 0.
        #[repr(C)]
        #[derive(Clone, Copy)]
        pub struct HhString {
            data: *const c_char,
            length: usize,
        }

        impl HhString {
            fn from_bytes(bytes: &[u8]) -> HhString {
                HhString { data: bytes.as_ptr().cast(), length: bytes.len() }
            }

            /// The bytes, borrowed from whoever owns them (the host, for config and event values).
            unsafe fn bytes<'a>(self) -> &'a [u8] {
                if self.length == 0 || self.data.is_null() {
                    &[]
                } else {
                    std::slice::from_raw_parts(self.data.cast(), self.length)
                }
            }
        }

        #[repr(C)]
        #[derive(Clone, Copy)]
        pub union HhValueOf {
            string: HhString,
            int64: i64,
            real: f64,
            boolean: bool,
            time_ms: i64,
        }

        /// Read `of` only through the member `kind` (C's `type`) names.
        #[repr(C)]
        #[derive(Clone, Copy)]
        pub struct HhValue {
            kind: i32,
            of: HhValueOf,
        }

        #[repr(C)]
        pub struct HhHost {
            abi_version: HhVersion,
            host_data: *mut c_void,
            instance_id: *const c_char,
            data_directory: *const c_char,
            log: unsafe extern "C" fn(*const HhHost, severity: i32, verbosity: i32, message: HhString),
            config_get: unsafe extern "C" fn(*const HhHost, key: *const c_char, out: *mut HhValue) -> i32,
            monotonic_ns: unsafe extern "C" fn(*const HhHost) -> u64,
            report_error: unsafe extern "C" fn(*const HhHost, status: i32, message: HhString),
            get_extension: unsafe extern "C" fn(*const HhHost, extension_id: *const c_char) -> *const c_void,
        }

        impl HhHost {
            /// The config value of `key` (NUL-terminated), filled with plugin.yaml's default; None when it has none.
            unsafe fn config(&self, key: &std::ffi::CStr) -> Option<HhValue> {
                let mut value = HhValue { kind: HH_VALUE_NULL, of: HhValueOf { int64: 0 } };
                if (self.config_get)(self, key.as_ptr(), &mut value) == HH_OK {
                    Some(value)
                } else {
                    None
                }
            }

            /// Tells the user why a call fails (the host copies the message), and answers `status`.
            unsafe fn report(&self, status: i32, message: &str) -> i32 {
                (self.report_error)(self, status, HhString::from_bytes(message.as_bytes()));
                status
            }
        }

        type Create = unsafe extern "C" fn(host: *const HhHost, out_instance: *mut *mut c_void) -> i32;
        type Destroy = unsafe extern "C" fn(instance: *mut c_void);

        #[repr(C)]
        pub struct HhPluginDescriptor {
            id: *const c_char,
            name: *const c_char,
            description: *const c_char,
            version: *const c_char,
            kind: i32,
            kind_api: *const c_void,
            create: Option<Create>,
            destroy: Option<Destroy>,
            get_extension: Option<unsafe extern "C" fn(*const HhPluginDescriptor, *const c_char) -> *const c_void>,
        }

        #[repr(C)]
        pub struct HhLibrary {
            abi_version: HhVersion, // must stay the first member
            init: Option<unsafe extern "C" fn(*const c_char) -> i32>,
            deinit: Option<unsafe extern "C" fn()>,
            plugin_count: u32,
            get_plugin: Option<unsafe extern "C" fn(u32) -> *const HhPluginDescriptor>,
        }

        // The tables are constant and hold only static strings and functions.
        unsafe impl Sync for HhPluginDescriptor {}
        unsafe impl Sync for HhLibrary {}

        unsafe extern "C" fn get_plugin(index: u32) -> *const HhPluginDescriptor {
            if index == 0 {
                &DESCRIPTOR
            } else {
                std::ptr::null()
            }
        }

        static LIBRARY: HhLibrary = HhLibrary {
            abi_version: HhVersion { major: 1, minor: 0, patch: 0 }, // this kind is in ABI 1.0
            init: None,
            deinit: None,
            plugin_count: 1,
            get_plugin: Some(get_plugin),
        };

        #[no_mangle]
        pub extern "C" fn hubhost_library_entry() -> *const HhLibrary {
            &LIBRARY
        }

        /// The instance is a Box, handed to the host as a raw pointer in create and freed in destroy.
        unsafe extern "C" fn destroy(instance: *mut c_void) {
            if !instance.is_null() {
                drop(Box::from_raw(instance.cast::<Instance>()));
            }
        }


        """#
    }

    /// The augmentation plugin's Rust source. Long: it is one string literal, the source itself.
    static func augmentation(_ n: CPluginTemplate.Names) -> String {
        #"""
        // ---- hubhost_augmentation.h ----------------------------------------------------------------

        /// Read access to an event; host-owned, valid only during the augment call.
        #[repr(C)]
        pub struct HhEventView {
            event_data: *mut c_void,
            event_id: HhString,
            type_code: i32,
            name: HhString,
            time_ms: i64,
            attribute_count: unsafe extern "C" fn(*const HhEventView) -> usize,
            attribute_at: unsafe extern "C" fn(*const HhEventView, usize, *mut HhString, *mut HhValue) -> i32,
            get_attribute: unsafe extern "C" fn(*const HhEventView, name: HhString, out: *mut HhValue) -> i32,
        }

        /// Write access to an event; host-owned, valid only during the augment call. The host copies at once.
        #[repr(C)]
        pub struct HhEventEditor {
            editor_data: *mut c_void,
            set_attribute: unsafe extern "C" fn(*const HhEventEditor, name: HhString, value: *const HhValue) -> i32,
            remove_attribute: unsafe extern "C" fn(*const HhEventEditor, name: HhString) -> i32,
        }

        type Augment = unsafe extern "C" fn(*mut c_void, *const HhEventView, *const HhEventEditor) -> i32;

        #[repr(C)]
        pub struct HhAugmentationV1 {
            process_synchronously: Option<unsafe extern "C" fn(*mut c_void) -> bool>,
            is_supplemental_data_ready: Option<unsafe extern "C" fn(*mut c_void) -> bool>,
            augment: Option<Augment>,
        }

        unsafe impl Sync for HhAugmentationV1 {}

        // ---- the plugin ----------------------------------------------------------------------------

        /// Immutable after create, so augment may run on many threads at once.
        struct Instance {
            host: *const HhHost, // valid until destroy
            attribute: Vec<u8>,
            value: Vec<u8>,
        }

        unsafe extern "C" fn create(host: *const HhHost, out_instance: *mut *mut c_void) -> i32 {
            if host.is_null() || out_instance.is_null() {
                return HH_ERR_INVALID_ARGUMENT;
            }
            catch_unwind(|| {
                let host = &*host;
                let attribute = match host.config(c"attribute") {
                    Some(v) if v.kind == HH_VALUE_STRING && v.of.string.length > 0 => v.of.string.bytes().to_vec(),
                    _ => return host.report(HH_ERR_CONFIG, "set 'attribute' to a name, e.g. attribute: Source"),
                };
                let value = match host.config(c"value") {
                    Some(v) if v.kind == HH_VALUE_STRING => v.of.string.bytes().to_vec(),
                    _ => return host.report(HH_ERR_CONFIG, "set 'value' to a text, e.g. value: hello"),
                };
                let instance = Box::new(Instance { host, attribute, value });
                *out_instance = Box::into_raw(instance).cast();
                HH_OK
            })
            .unwrap_or(HH_ERR_INTERNAL)
        }

        // Nothing later depends on this plugin's output, and its data is always ready.
        unsafe extern "C" fn process_synchronously(_instance: *mut c_void) -> bool {
            false
        }

        unsafe extern "C" fn is_supplemental_data_ready(_instance: *mut c_void) -> bool {
            true
        }

        /// [thread-safe]: reads only the instance's constant state; the event and editor are borrowed.
        unsafe extern "C" fn augment(instance: *mut c_void, event: *const HhEventView, editor: *const HhEventEditor) -> i32 {
            if instance.is_null() || event.is_null() || editor.is_null() {
                return HH_ERR_INVALID_ARGUMENT;
            }
            // A panic must not unwind into the host: it becomes a failure status.
            catch_unwind(|| {
                let this = &*instance.cast::<Instance>();
                let (event, editor) = (&*event, &*editor);
                let name = HhString::from_bytes(&this.attribute);
                let mut existing = HhValue { kind: HH_VALUE_NULL, of: HhValueOf { int64: 0 } };
                if (event.get_attribute)(event, name, &mut existing) == HH_OK {
                    return HH_OK; // the app set it: leave it
                }
                let value = HhValue { kind: HH_VALUE_STRING, of: HhValueOf { string: HhString::from_bytes(&this.value) } };
                let status = (editor.set_attribute)(editor, name, &value);
                if status != HH_OK {
                    let message = format!(
                        "cannot add '{}' to event {}",
                        String::from_utf8_lossy(&this.attribute),
                        String::from_utf8_lossy(event.event_id.bytes())
                    );
                    return (*this.host).report(status, &message);
                }
                HH_OK
            })
            .unwrap_or(HH_ERR_INTERNAL)
        }

        static API: HhAugmentationV1 = HhAugmentationV1 {
            process_synchronously: Some(process_synchronously),
            is_supplemental_data_ready: Some(is_supplemental_data_ready),
            augment: Some(augment),
        };

        static DESCRIPTOR: HhPluginDescriptor = HhPluginDescriptor {
            id: c"\#(n.id)".as_ptr(), // plugin.yaml's exports: id
            name: c"\#(n.id)".as_ptr(),
            description: c"Adds an attribute from its config to every event.".as_ptr(),
            version: c"0.1.0".as_ptr(), // plugin.yaml's version
            kind: HH_KIND_AUGMENTATION,
            kind_api: &API as *const HhAugmentationV1 as *const c_void,
            create: Some(create),
            destroy: Some(destroy),
            get_extension: None,
        };

        """#
    }

    static func triggerOperator(_ n: CPluginTemplate.Names) -> String {
        #"""
        // ---- hubhost_trigger_operator.h ------------------------------------------------------------

        type Compare = unsafe extern "C" fn(*mut c_void, *const HhValue, *const HhValue, *mut bool) -> i32;

        #[repr(C)]
        pub struct HhTriggerOperatorV1 {
            operator_name: *const c_char,
            wire_code: i32,
            compare: Option<Compare>,
        }

        unsafe impl Sync for HhTriggerOperatorV1 {}

        // ---- the plugin ----------------------------------------------------------------------------

        /// Immutable after create, so compare may run on many threads at once.
        struct Instance {
            inclusive: bool,
        }

        unsafe extern "C" fn create(host: *const HhHost, out_instance: *mut *mut c_void) -> i32 {
            if host.is_null() || out_instance.is_null() {
                return HH_ERR_INVALID_ARGUMENT;
            }
            catch_unwind(|| {
                // The host filled the default from plugin.yaml; a value of another type counts as the default.
                let inclusive = match (*host).config(c"inclusive") {
                    Some(v) if v.kind == HH_VALUE_BOOL => v.of.boolean,
                    _ => true,
                };
                *out_instance = Box::into_raw(Box::new(Instance { inclusive })).cast();
                HH_OK
            })
            .unwrap_or(HH_ERR_INTERNAL)
        }

        unsafe fn number(value: &HhValue) -> Option<f64> {
            match value.kind {
                HH_VALUE_INT64 => Some(value.of.int64 as f64),
                HH_VALUE_DOUBLE => Some(value.of.real),
                _ => None,
            }
        }

        /// [thread-safe]: reads only immutable state and the borrowed values.
        unsafe extern "C" fn compare(instance: *mut c_void, event: *const HhValue, trigger: *const HhValue, out_result: *mut bool) -> i32 {
            if instance.is_null() || event.is_null() || trigger.is_null() || out_result.is_null() {
                return HH_ERR_INVALID_ARGUMENT;
            }
            // A panic must not unwind into the host: it becomes a failure status.
            catch_unwind(|| {
                let this = &*instance.cast::<Instance>();
                let (Some(event), Some(trigger)) = (number(&*event), number(&*trigger)) else {
                    return HH_ERR_TYPE_MISMATCH; // the host treats it as false
                };
                *out_result = if this.inclusive { event >= trigger } else { event > trigger };
                HH_OK
            })
            .unwrap_or(HH_ERR_INTERNAL)
        }

        static API: HhTriggerOperatorV1 = HhTriggerOperatorV1 {
            operator_name: c"\#(n.operatorName)".as_ptr(), // upper case letters, digits and '_'
            wire_code: 0, // no wire code: campaigns name it by string
            compare: Some(compare),
        };

        static DESCRIPTOR: HhPluginDescriptor = HhPluginDescriptor {
            id: c"\#(n.id)".as_ptr(), // plugin.yaml's exports: id
            name: c"\#(n.id)".as_ptr(),
            description: c"True when the event's number is at least the trigger's.".as_ptr(),
            version: c"0.1.0".as_ptr(), // plugin.yaml's version
            kind: HH_KIND_TRIGGER_OPERATOR,
            kind_api: &API as *const HhTriggerOperatorV1 as *const c_void,
            create: Some(create),
            destroy: Some(destroy),
            get_extension: None,
        };

        """#
    }
}
