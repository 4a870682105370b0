/*
 * hubhost plugin ABI v1 for WebAssembly guests: the few functions a .wasm plugin exports and the
 * host functions it imports. A plugin author does not write any of this: the same C source that
 * builds as lib<name>.so builds as <name>.wasm when compiled together with the guest adapter,
 * Protocols/wasm/hubhost_wasm_guest.c (scripts/build-wasm-plugin does both; see
 * docs/plugin-authoring.md, "WebAssembly").
 *
 * Why an adapter: a 32-bit guest's structs (hh_host_t, hh_value_t, hh_event_view_t...) do not
 * have the host's layout, and the host never reads guest memory as C structs. It calls the
 * exports below with requests encoded as bytes (the encoding of process isolation: little-endian
 * integers, u32-length-prefixed UTF-8 strings, tagged values) and reads the answers the same
 * way; the adapter decodes them, calls the plugin's real function tables, and builds an
 * hh_host_t whose functions call the imports.
 *
 * The ABI version the adapter was compiled against is in a custom section named "hubhost_abi"
 * (three little-endian u32: major, minor, patch), so `hubhost plugins inspect` reads it without
 * running the module.
 *
 * Everything is [host-serialized]: the host makes one call at a time into one module instance.
 */
#ifndef HUBHOST_WASM_H
#define HUBHOST_WASM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The module name of every host import. */
#define HH_WASM_IMPORT_MODULE "hubhost"

/* ---------------------------------------------------------------------------------------------
 * Exports (the adapter defines them; the host checks their signatures before the first call)
 * ------------------------------------------------------------------------------------------- */

/* The request buffer: at least `capacity` bytes the host writes a request into (adapter-owned,
 * reused; the host asks again only for a larger request). 0 when out of memory. */
#define HH_WASM_EXPORT_BUFFER "hh_wasm_buffer" /* (i32 capacity) -> i32 pointer */

/* The library's descriptors: an answer (see below) holding u32 major, minor, patch (the library's
 * abi_version), u32 count, then per plugin: string id, name, description, version, i32 kind. */
#define HH_WASM_EXPORT_DESCRIBE "hh_wasm_describe" /* () -> i64 answer */

/* Create plugin `index` of the library; the request buffer holds nothing. Returns the status;
 * on failure the plugin's message went through the report_error import. */
#define HH_WASM_EXPORT_CREATE "hh_wasm_create" /* (i32 index) -> i32 status */

/* Destroy plugin `index` (created before). */
#define HH_WASM_EXPORT_DESTROY "hh_wasm_destroy" /* (i32 index) -> () */

/* One call on plugin `index`: `op` is the isolation protocol's operation code, the request
 * (`length` bytes) is in the request buffer. Returns the answer, or -1 for a request the adapter
 * cannot decode or an operation this plugin's kind does not have. The answers are the isolation
 * protocol's but one: augment answers the plugin's edits in order (u32 count, then u8 0, string
 * name and value for a set, u8 1 and string name for a remove; at most 10,000), which the host
 * replays on the event it sent, instead of the whole event. Each edit is replayed through the
 * editor an in-process plugin gets and checked as set_attribute checks it (hubhost_augmentation.h):
 * one it refuses is left out and the others stand. */
#define HH_WASM_EXPORT_CALL "hh_wasm_call" /* (i32 index, i32 op, i32 length) -> i64 answer */

/* An answer is an i64: the low 32 bits are a pointer to adapter-owned bytes, valid until the next
 * call into the module, the high 32 bits their length. */

/* ---------------------------------------------------------------------------------------------
 * Imports, all from module "hubhost"; nothing else is offered but a few WASI functions (clock,
 * random; the others answer ENOSYS): no filesystem, no sockets, no environment. A module that
 * imports any other function, or one of these with another signature, does not load.
 * ------------------------------------------------------------------------------------------- */

/* log(i32 severity, i32 verbosity, i32 message, i32 length): hh_host_t.log. */
/* report_error(i32 status, i32 message, i32 length): hh_host_t.report_error. */
/* monotonic_ns() -> i64: hh_host_t.monotonic_ns. */
/* config_get(i32 key, i32 key_length, i32 out, i32 capacity) -> i32: the value of `key` encoded
 * as a tagged value into `out`; answers its length (larger than capacity: ask again with that
 * much room), or -1 when the key has no value. */

/* http_fetch(i32 request, i32 length, i32 out_length) -> i32 status: the host HTTP service
 * (hubhost_http.h's fetch) under the instance's http_allow and http_timeout, blocking the call.
 * The request is `length` bytes: string method, string url, u32 header count, per header string
 * name and string value, u32 body length and the body, u32 timeout_ms. On HH_OK the host holds
 * the response (i32 status code, u32 header count, per header string name and value, u32 body
 * length and the body) and writes its length as a u32 at `out_length`; on a failure (the statuses
 * of hubhost_http.h) it may hold a message instead (the report the host leaves, length at
 * `out_length`, 0 when none). Either is taken with http_take before the next http_fetch. */
/* http_take(i32 out, i32 capacity) -> i32: copies what the last http_fetch left into `out` and
 * forgets it; answers the length copied, or -1 when nothing is held or it needs more room than
 * `capacity` (then it is forgotten too). */

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_WASM_H */
