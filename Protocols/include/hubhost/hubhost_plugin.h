/*
 * hubhost plugin ABI, version 1: the entry point and the types every plugin kind shares.
 *
 * This header is the contract between the hubhost host and its plugins. A plugin is a shared
 * library (`.so`) that exports one function, `hubhost_library_entry`, and is described by a
 * `plugin.yaml` manifest beside it. The host loads the library with dlopen, reads the ABI
 * version before anything else, then walks the plugin descriptors the library exports.
 *
 * Conventions used in every comment of this ABI:
 *
 *   [thread-safe]       may be called from any thread, concurrently with any other call.
 *   [host-serialized]   the host never makes two such calls on the same instance at once,
 *                       but successive calls may come from different threads.
 *   [lifecycle]         called on a thread the host chooses, never at the same time as any other
 *                       call on the same instance or library: init before anything else, create
 *                       before any call on the instance, destroy after its last call returned.
 *                       It need not be the thread that loaded the library, and create and destroy
 *                       of one instance may run on different threads (a reload retires an
 *                       instance on a thread of its own; create runs under create_timeout).
 *   [any-thread]        may be called from any thread, but not concurrently with itself on the
 *                       same object unless also marked [thread-safe].
 *
 *   Ownership:
 *     - "borrowed"  memory the caller owns; valid only until the call returns. Copy what you keep.
 *     - "plugin-owned" memory the plugin returns; it stays valid until the plugin's matching
 *       release function is called (or for the lifetime stated in the comment).
 *     - Strings are UTF-8 with an explicit length (hh_string_t). They are NOT NUL-terminated
 *       unless a comment says so. Plain `const char *` fields are NUL-terminated, static strings.
 *
 *   Failure: every call that can fail returns an hh_status_t. HH_OK is success; any other value is
 *   a failure, and a plugin that wants the user to know why reports a message through
 *   hh_host_t.report_error before returning. A plugin never aborts, exits, or longjmps out of a
 *   call: a failure is a status.
 *
 * Growth: this header is versioned with HH_ABI_VERSION_{MAJOR,MINOR,PATCH}. Minor versions only
 * add: new extensions (looked up by string id), new status codes, new value types that an older
 * plugin treats as unknown, new plugin kinds (their own header and HH_KIND_* constant; a library
 * exporting one says at least the minor version that added it, and the host refuses it otherwise,
 * as an older header cannot describe it). A v1.0 plugin keeps loading on every v1.x host. The host
 * refuses a library whose major version differs from its own, naming the file and both versions.
 *
 * The ABI is plain C11 and needs no Swift: see Plugins/ConsoleLogger for a complete plugin in C,
 * and Plugins/StaticAdvertiserID for one in Swift (@_cdecl).
 */
#ifndef HUBHOST_PLUGIN_H
#define HUBHOST_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------------- */

#define HH_ABI_VERSION_MAJOR 1
#define HH_ABI_VERSION_MINOR 2
#define HH_ABI_VERSION_PATCH 0

typedef struct hh_version {
    uint32_t major;
    uint32_t minor;
    uint32_t patch;
} hh_version_t;

/* Use in hh_library_t.abi_version: the version of this header the plugin was compiled against. */
#define HH_ABI_VERSION_INIT                                                                                  \
    { HH_ABI_VERSION_MAJOR, HH_ABI_VERSION_MINOR, HH_ABI_VERSION_PATCH }

/* ---------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------- */

typedef int32_t hh_status_t;

#define HH_OK                   0 /* success */
#define HH_ERR_INVALID_ARGUMENT 1 /* a NULL or malformed argument */
#define HH_ERR_CONFIG           2 /* the instance configuration is wrong or incomplete */
#define HH_ERR_UNSUPPORTED      3 /* the plugin does not support this request */
#define HH_ERR_TYPE_MISMATCH    4 /* a value had a type the call cannot handle */
#define HH_ERR_NOT_FOUND        5 /* no such key / resource / answer ("no opinion") */
#define HH_ERR_TIMEOUT          6 /* a deadline passed */
#define HH_ERR_IO               7 /* file or network failure */
#define HH_ERR_INTERNAL         8 /* a bug or an unexpected state inside the plugin */
#define HH_ERR_UNAVAILABLE      9 /* temporarily unable to answer; the host may retry later */

/* ---------------------------------------------------------------------------------------------
 * Typed values
 * ------------------------------------------------------------------------------------------- */

/* A UTF-8 string with an explicit length. `data` may be NULL only when `length` is 0. */
typedef struct hh_string {
    const char *data;
    size_t length;
} hh_string_t;

typedef int32_t hh_value_type_t;

#define HH_VALUE_NULL    0 /* no value */
#define HH_VALUE_STRING  1 /* of.string, UTF-8 with explicit length */
#define HH_VALUE_INT64   2 /* of.int64 */
#define HH_VALUE_DOUBLE  3 /* of.real */
#define HH_VALUE_BOOL    4 /* of.boolean */
#define HH_VALUE_TIME_MS 5 /* of.time_ms: milliseconds since 1970-01-01T00:00:00Z (UTC) */

/* A value crossing the boundary. Read `of` only through the member `type` names; a value whose
 * type a plugin does not know (added in a later minor version) must be treated as unsupported
 * (HH_ERR_TYPE_MISMATCH), never guessed. */
typedef struct hh_value {
    hh_value_type_t type;
    union {
        hh_string_t string;
        int64_t int64;
        double real;
        bool boolean;
        int64_t time_ms;
    } of;
} hh_value_t;

/* ---------------------------------------------------------------------------------------------
 * Logging levels (the ZBiM severity and verbosity scales, see README "Logging")
 * ------------------------------------------------------------------------------------------- */

typedef int32_t hh_severity_t;

#define HH_SEVERITY_NONE           0 /* as a setting: logging off. Never a record's severity. */
#define HH_SEVERITY_CRITICAL_ERROR 1
#define HH_SEVERITY_ERROR          2
#define HH_SEVERITY_WARNING        3
#define HH_SEVERITY_INFO           4

typedef int32_t hh_verbosity_t;

#define HH_VERBOSITY_NONE  0 /* as a setting: logging off. Never a record's verbosity. */
#define HH_VERBOSITY_DEBUG 1 /* ordinary detail */
#define HH_VERBOSITY_INFO  2 /* the most detail */

/* ---------------------------------------------------------------------------------------------
 * Plugin kinds. Each kind's interface is in its own header (hubhost_<kind>.h).
 * ------------------------------------------------------------------------------------------- */

typedef int32_t hh_plugin_kind_t;

#define HH_KIND_CONTENT_PROVIDER 1 /* hubhost_content_provider.h: hh_content_provider_v1_t */
#define HH_KIND_AUGMENTATION     2 /* hubhost_augmentation.h:     hh_augmentation_v1_t */
#define HH_KIND_TRIGGER_OPERATOR 3 /* hubhost_trigger_operator.h: hh_trigger_operator_v1_t */
#define HH_KIND_ADVERTISER_ID    4 /* hubhost_advertiser_id.h:    hh_advertiser_id_v1_t */
#define HH_KIND_LOGGING          5 /* hubhost_logging.h:          hh_logging_v1_t */
#define HH_KIND_LOCATION         6 /* hubhost_location.h:         hh_location_v1_t */
/* Added in ABI 1.1: a library declaring one of these kinds sets abi_version to 1.1 or later. */
#define HH_KIND_EVENT_SINK        7  /* hubhost_event_sink.h:        hh_event_sink_v1_t */
#define HH_KIND_USER_ID_GENERATOR 8  /* hubhost_user_id_generator.h: hh_user_id_generator_v1_t */
#define HH_KIND_DEVICE_CONDITIONS 9  /* hubhost_device_conditions.h: hh_device_conditions_v1_t */
#define HH_KIND_DOWNLOAD_REQUEST  10 /* hubhost_download_request.h:  hh_download_request_v1_t */

/* ---------------------------------------------------------------------------------------------
 * Host services: what the host gives every plugin instance at create.
 * ------------------------------------------------------------------------------------------- */

typedef struct hh_host hh_host_t;

struct hh_host {
    /* The ABI version the host implements. A plugin compiled against a newer minor version
     * checks this before using anything that minor version added. */
    hh_version_t abi_version;

    /* Host-owned, opaque; pass `host` back unchanged to every function below. */
    void *host_data;

    /* The instance id from plugins.yaml (e.g. "console"), NUL-terminated.
     * Host-owned, valid until the instance is destroyed. */
    const char *instance_id;

    /* The host's data directory (absolute path, NUL-terminated), where a plugin may keep files.
     * Host-owned, valid until the instance is destroyed. */
    const char *data_directory;

    /* Log a message through the host's logging pipeline. The host filters by the configured
     * severity and verbosity before any logging delegate sees the record, and tags it with this
     * instance's id. `message` is borrowed. Never fails; a record that cannot be delivered is
     * dropped. [thread-safe] Must not be called from inside a logging plugin's own `log` call
     * (such records are dropped to prevent recursion). */
    void (*log)(const hh_host_t *host, hh_severity_t severity, hh_verbosity_t verbosity, hh_string_t message);

    /* Typed lookup in this instance's `config:` map from plugins.yaml, after the host checked it
     * against the plugin.yaml schema and filled in defaults. `key` is NUL-terminated, borrowed.
     * On HH_OK, *out holds the value; a string's bytes are host-owned and stay valid until the
     * instance is destroyed. Durations are HH_VALUE_DOUBLE seconds.
     * Returns HH_ERR_NOT_FOUND when the key has no value (not set and no default), and
     * HH_ERR_INVALID_ARGUMENT when key or out is NULL. [thread-safe] */
    hh_status_t (*config_get)(const hh_host_t *host, const char *key, hh_value_t *out);

    /* A monotonic clock in nanoseconds, for timeouts and cache lifetimes; unrelated to wall time
     * (an arbitrary origin, never going backwards, shared by every instance of the process).
     * Cannot fail: there is no error value, every call answers a time. [thread-safe] */
    uint64_t (*monotonic_ns)(const hh_host_t *host);

    /* Explain a failure to the user. Call before returning a non-HH_OK status; the host attaches
     * the message to that failure (for example "instance 'geo' disabled: <message>") and logs it.
     * `message` is borrowed. The last report per thread wins. [thread-safe] */
    void (*report_error)(const hh_host_t *host, hh_status_t status, hh_string_t message);

    /* Look up an optional host service by id (e.g. HH_HOST_EXT_HTTP "hubhost.http.v1").
     * `extension_id` is NUL-terminated, borrowed. Returns a host-owned table valid until the
     * instance is destroyed, or NULL when this host does not offer that extension: a plugin must
     * handle NULL. [thread-safe] */
    const void *(*get_extension)(const hh_host_t *host, const char *extension_id);
};

/* ---------------------------------------------------------------------------------------------
 * Plugin descriptors and instances
 * ------------------------------------------------------------------------------------------- */

typedef struct hh_plugin_descriptor hh_plugin_descriptor_t;

struct hh_plugin_descriptor {
    /* Stable, unique within the library: lowercase letters, digits, '-', '_' and '.'.
     * Must equal the `id` of one entry of `exports:` in plugin.yaml. NUL-terminated, static. */
    const char *id;

    /* Human-readable name and one-line description. NUL-terminated, static. */
    const char *name;
    const char *description;

    /* Semantic version of the plugin, e.g. "1.2.0"; must equal plugin.yaml's `version`. */
    const char *version;

    /* One of HH_KIND_*. */
    hh_plugin_kind_t kind;

    /* The kind's function table: a pointer to the struct named next to the HH_KIND_* constant
     * (e.g. const hh_trigger_operator_v1_t *). Static; never NULL. */
    const void *kind_api;

    /* Create an instance. `host` is host-owned and stays valid until destroy(instance) returns;
     * keep the pointer. Read configuration with host->config_get.
     * From inside create a plugin may call every function of `host`: config_get, log (the host
     * keeps start-up records and hands them to the logging plugins once every plugin has
     * loaded), monotonic_ns, report_error (only just before returning a failure) and
     * get_extension. The HTTP service
     * (hubhost.http.v1) is offered and works, but a fetch blocks the loading of every later
     * plugin: prefer fetching on the first call. The location service (hubhost.location.v1) is
     * offered only once a location plugin listed earlier in plugins.yaml has loaded, and never
     * under `isolation: process`: a plugin that may need it looks it up when it needs it, not
     * only at create. The host makes no call on the instance before create returns HH_OK.
     * The host waits for create: in process with no deadline (plugins load one after another);
     * under `isolation: process` a worker not ready within the instance's call_timeout (10 s at
     * least) is killed and the instance disabled.
     * On HH_OK, *out_instance is a plugin-owned handle (may be NULL if the plugin needs no state)
     * that the host passes to every kind_api call and finally to destroy.
     * On failure, report why with host->report_error and return a status: the host disables this
     * instance with that message and carries on with the other plugins; destroy is not called.
     * [lifecycle] */
    hh_status_t (*create)(const hh_host_t *host, void **out_instance);

    /* Destroy an instance: release everything it owns. The host guarantees no other call on this
     * instance is running or will start. Cannot fail. [lifecycle] */
    void (*destroy)(void *instance);

    /* Optional (may be NULL): look up an extension of this plugin by id, for functions added
     * after v1.0. Returns a static table or NULL when the extension is not supported.
     * `extension_id` is NUL-terminated, borrowed. This host does not call it yet. [thread-safe] */
    const void *(*get_extension)(const hh_plugin_descriptor_t *descriptor, const char *extension_id);
};

/* ---------------------------------------------------------------------------------------------
 * The library entry point
 * ------------------------------------------------------------------------------------------- */

typedef struct hh_library hh_library_t;

struct hh_library {
    /* MUST be the first member: the host reads it before anything else.
     * Set it to HH_ABI_VERSION_INIT. */
    hh_version_t abi_version;

    /* Optional (may be NULL): called after dlopen and the ABI version check, before get_plugin or
     * any plugin call, with the path of the file the library was read from, symlinks resolved
     * (NUL-terminated, borrowed). A failure refuses the whole library. The host calls init once
     * per process for each library content that loads; when loading fails (init fails, or a
     * descriptor is invalid) the library stays mapped and a later instance naming the same
     * content calls init again. A worker process (isolation: process) loads the library, and
     * calls init, in its own process. [lifecycle]
     *
     * The host reads the file once, checks it (a whole ELF shared object for this machine, the
     * pinned sha256 if any) and dlopens that checked content from a sealed in-memory copy, named
     * /proc/self/fd/N to the dynamic linker: $ORIGIN in the library's run path is not the folder
     * of its file, so link a plugin's own dependencies by absolute path or install them on the
     * system's library path, and find the plugin's files from `library_path`. */
    hh_status_t (*init)(const char *library_path);

    /* Never called: the host never calls deinit and never dlcloses a library; a loaded library
     * stays mapped until the process exits. Kept for ABI compatibility; set it to NULL. */
    void (*deinit)(void);

    /* The number of plugins this library exports: 1 to 4096; the host refuses any other count. */
    uint32_t plugin_count;

    /* The descriptor at `index` (0 <= index < plugin_count): static, never NULL for a valid index;
     * NULL for an index out of range. [thread-safe] */
    const hh_plugin_descriptor_t *(*get_plugin)(uint32_t index);
};

/* The one exported symbol every plugin library defines:
 *
 *     HH_EXPORT const hh_library_t *hubhost_library_entry(void);
 *
 * It returns a pointer to a static hh_library_t, never NULL, and must do no other work (no
 * allocation, no I/O, no threads): the host may call it only to read the ABI version, e.g. from
 * `hubhost plugins inspect`. [thread-safe] */
#define HH_ENTRY_SYMBOL "hubhost_library_entry"

typedef const hh_library_t *(*hh_library_entry_fn)(void);

#if defined(_WIN32)
#define HH_EXPORT __declspec(dllexport)
#else
#define HH_EXPORT __attribute__((visibility("default")))
#endif

/* Helpers for plugin authors (static inline: no symbols, no host dependency). More, optional,
 * in hubhost_plugin_helpers.h: the library tables in one macro and a printf-style report_error. */

/* An hh_string_t over a NUL-terminated C string literal or buffer. */
static inline hh_string_t hh_string_from_cstr(const char *cstr) {
    hh_string_t s;
    size_t n = 0;
    if (cstr) {
        while (cstr[n] != '\0') {
            n++;
        }
    }
    s.data = cstr;
    s.length = n;
    return s;
}

static inline hh_value_t hh_value_null(void) {
    hh_value_t v;
    v.type = HH_VALUE_NULL;
    v.of.int64 = 0;
    return v;
}

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_PLUGIN_H */
