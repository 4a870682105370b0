/*
 * hubhost plugin ABI v1: optional helpers for plugins written in C (header-only).
 *
 * Nothing here is part of the ABI and nothing here is required: the macros expand to the same
 * tables of hubhost_plugin.h that a plugin can write by hand, and the functions are static inline
 * (no symbols, no link dependency). A library built with them exports exactly one symbol,
 * hubhost_library_entry, like any other.
 *
 *   HH_SINGLE_PLUGIN_LIBRARY(...)     a library that exports one plugin: its descriptor, the
 *                                     library table and hubhost_library_entry, in one line.
 *   HH_PLUGIN_LIBRARY(descriptors)    the library table and hubhost_library_entry over a static
 *                                     array of descriptors (a library that exports several plugins).
 *   HH_PLUGIN_DESCRIPTOR(...)         one descriptor, for such an array.
 *   hh_report(host, status, fmt, ...) format a failure message, hand it to host->report_error and
 *                                     return the status: `return hh_report(host, HH_ERR_CONFIG, ...);`
 *   hh_config_string(host, key)       a string config value, borrowed (empty when absent).
 *   hh_config_string_copy(host, key, out, capacity)
 *                                     a string config value copied into a buffer, NUL-terminated.
 *   hh_json_number(text, key, out)    the number after "key": in a JSON text (a plain text search).
 *
 * A library that needs init, or a plugin that answers get_extension, writes its tables by
 * hand (see hubhost_plugin.h); hh_report is useful to every plugin.
 *
 *     #include <hubhost/hubhost.h>
 *     #include <hubhost/hubhost_plugin_helpers.h>
 *
 *     static hh_status_t upper_create(const hh_host_t *host, void **out_instance) {
 *         hh_value_t limit;
 *         if (host->config_get(host, "limit", &limit) == HH_OK && limit.of.int64 < 1) {
 *             return hh_report(host, HH_ERR_CONFIG, "'limit' must be at least 1, not %lld", (long long)limit.of.int64);
 *         }
 *         *out_instance = (void *)host;
 *         return HH_OK;
 *     }
 *     ...
 *     HH_SINGLE_PLUGIN_LIBRARY("upper", "Upper", "Upper-cases a field.", "1.0.0",
 *                              HH_KIND_AUGMENTATION, &upper_api, upper_create, upper_destroy);
 *
 * Compiles as C11 and as C++ (the macros use positional initializers, which C++17 accepts, and
 * declare hubhost_library_entry extern "C"). Use each library macro once per library, at file
 * scope, followed by a semicolon.
 */
#ifndef HUBHOST_PLUGIN_HELPERS_H
#define HUBHOST_PLUGIN_HELPERS_H

#include "hubhost_plugin.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
#define HH_HELPERS_EXTERN_C extern "C"
#else
#define HH_HELPERS_EXTERN_C
#endif

#if defined(__GNUC__) || defined(__clang__)
#define HH_HELPERS_PRINTF(format_index, first_argument)                                                      \
    __attribute__((format(printf, format_index, first_argument)))
#else
#define HH_HELPERS_PRINTF(format_index, first_argument)
#endif

/* ---------------------------------------------------------------------------------------------
 * Library tables
 * ------------------------------------------------------------------------------------------- */

/* One hh_plugin_descriptor_t initializer, the arguments in the order of the struct's fields:
 * id, name, description, version (NUL-terminated static strings, see hh_plugin_descriptor_t),
 * kind (HH_KIND_*), kind_api (a pointer to the kind's static function table, e.g. &my_api),
 * create, destroy. get_extension is NULL. Use it in a static array given to HH_PLUGIN_LIBRARY:
 *
 *     static const hh_plugin_descriptor_t my_plugins[] = {
 *         HH_PLUGIN_DESCRIPTOR("a-operator", "A", "...", "1.0.0", HH_KIND_TRIGGER_OPERATOR, &a_api, create, destroy),
 *         HH_PLUGIN_DESCRIPTOR("b-operator", "B", "...", "1.0.0", HH_KIND_TRIGGER_OPERATOR, &b_api, create, destroy),
 *     };
 *     HH_PLUGIN_LIBRARY(my_plugins);
 *
 * Designated initializers (.id = ...) in the array work as well in C. */
#define HH_PLUGIN_DESCRIPTOR(id, name, description, version, kind, kind_api, create, destroy)                \
    { (id), (name), (description), (version), (kind), (kind_api), (create), (destroy), NULL }

/* Defines the library of the static array `descriptors` (an array object, not a pointer: its
 * plugin_count is the array's length) and the exported entry point:
 *
 *   - a static get_plugin that answers &descriptors[index], or NULL for an index out of range;
 *   - a static hh_library_t with HH_ABI_VERSION_INIT, no init and no deinit;
 *   - HH_EXPORT const hh_library_t *hubhost_library_entry(void), returning that table and doing
 *     no other work, as hubhost_plugin.h requires.
 *
 * Ownership: everything it defines is static and lives as long as the library is loaded; the
 * array must be static too. Threads: the functions it defines are [thread-safe] (they read only
 * constant tables). Failure: none at run time; using it twice in a library, or with a pointer
 * instead of an array, is a compile-time error or a wrong count. At file scope, once, followed by
 * a semicolon (the expansion ends with a declaration of hubhost_library_entry). */
#define HH_PLUGIN_LIBRARY(descriptors)                                                                       \
    static const hh_plugin_descriptor_t *hh_helpers_get_plugin_(uint32_t index) {                            \
        return index < sizeof(descriptors) / sizeof((descriptors)[0]) ? &(descriptors)[index] : NULL;        \
    }                                                                                                        \
    static const hh_library_t hh_helpers_library_ = {                                                        \
        HH_ABI_VERSION_INIT, NULL, NULL, (uint32_t)(sizeof(descriptors) / sizeof((descriptors)[0])),         \
        hh_helpers_get_plugin_};                                                                             \
    HH_HELPERS_EXTERN_C HH_EXPORT const hh_library_t *hubhost_library_entry(void) {                          \
        return &hh_helpers_library_;                                                                         \
    }                                                                                                        \
    HH_HELPERS_EXTERN_C const hh_library_t *hubhost_library_entry(void)

/* A library that exports one plugin: defines its descriptor (the arguments as for
 * HH_PLUGIN_DESCRIPTOR: id, name, description, version, kind, kind_api, create, destroy; no
 * get_extension) and then everything HH_PLUGIN_LIBRARY defines. The id and version must equal
 * plugin.yaml's, as for any descriptor.
 *
 *     HH_SINGLE_PLUGIN_LIBRARY("console-logger", "Console logger", "Writes log records to stderr.",
 *                              "1.0.0", HH_KIND_LOGGING, &console_api, console_create, console_destroy);
 *
 * Ownership, threads and failure as HH_PLUGIN_LIBRARY: static tables, [thread-safe], no run-time
 * failure. At file scope, once per library, followed by a semicolon. */
#define HH_SINGLE_PLUGIN_LIBRARY(id, name, description, version, kind, kind_api, create, destroy)            \
    static const hh_plugin_descriptor_t hh_helpers_descriptors_[1] = {                                       \
        HH_PLUGIN_DESCRIPTOR(id, name, description, version, kind, kind_api, create, destroy)};              \
    HH_PLUGIN_LIBRARY(hh_helpers_descriptors_)

/* ---------------------------------------------------------------------------------------------
 * Reporting failures
 * ------------------------------------------------------------------------------------------- */

/* The largest message hh_report hands to the host, in bytes, including the terminating NUL. */
#define HH_REPORT_MAX 1024

/* Formats a message with printf rules (`format` and the arguments after it), hands it to
 * host->report_error with `status`, and returns `status` unchanged, so a failure path reads
 *
 *     return hh_report(host, HH_ERR_CONFIG, "'%s' must be at least %d", key, minimum);
 *
 * Call it, as report_error, just before returning the failure `status` from a plugin call (or from
 * create): the host attaches the message to that failure. Do not report before returning HH_OK.
 *
 * Ownership: `host` is the table the plugin got at create; `format` and the arguments are borrowed
 * for the call. The message is formatted into a buffer on the calling thread's stack
 * (HH_REPORT_MAX bytes) and the host copies it before report_error returns: nothing to free.
 * Threads: [thread-safe], like report_error (the last report per thread wins).
 * Failure: none: it returns `status` whatever happens. A message longer than HH_REPORT_MAX - 1
 * bytes is cut at a UTF-8 character boundary and ends with "..."; a format that cannot be
 * formatted (vsnprintf fails) reports the format string itself; a NULL `host` or `format`
 * reports nothing. */
static inline hh_status_t hh_report(const hh_host_t *host, hh_status_t status, const char *format, ...)
    HH_HELPERS_PRINTF(3, 4);

static inline hh_status_t hh_report(const hh_host_t *host, hh_status_t status, const char *format, ...) {
    char message[HH_REPORT_MAX];
    va_list arguments;
    int written;
    size_t length;
    if (!host || !host->report_error || !format) {
        return status;
    }
    va_start(arguments, format);
    written = vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    if (written < 0) {
        host->report_error(host, status, hh_string_from_cstr(format));
        return status;
    }
    length = (size_t)written;
    if (length >= sizeof message) {
        /* Cut: keep room for "...", then drop a character the cut split in two. */
        size_t start;
        size_t need;
        unsigned char lead;
        length = sizeof message - 4;
        start = length;
        while (start > 0 && ((unsigned char)message[start - 1] & 0xC0) == 0x80) {
            start--;
        }
        if (start > 0) {
            lead = (unsigned char)message[start - 1];
            need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
            if (start - 1 + need > length) {
                length = start - 1;
            }
        }
        memcpy(message + length, "...", 4);
        length += 3;
    }
    {
        hh_string_t text;
        text.data = message;
        text.length = length;
        host->report_error(host, status, text);
    }
    return status;
}

/* ---------------------------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------------------------- */

/* The string value of config key `key` (host->config_get), or an empty string (data NULL, length
 * 0) when the key has no value, its value is not a string (HH_VALUE_STRING), or host or key is
 * NULL. A value that is present but empty also answers length 0: use config_get to tell them apart.
 *
 * Ownership: `key` is NUL-terminated, borrowed for the call. The answer is borrowed from the host:
 * its bytes stay valid until the instance is destroyed (as config_get promises); they are NOT
 * NUL-terminated. Threads: [thread-safe], like config_get. Failure: none; every failure is the
 * empty answer. */
static inline hh_string_t hh_config_string(const hh_host_t *host, const char *key) {
    hh_value_t value;
    if (host && host->config_get && host->config_get(host, key, &value) == HH_OK &&
        value.type == HH_VALUE_STRING) {
        return value.of.string;
    }
    return hh_string_from_cstr(NULL);
}

/* Copies the string value of config key `key` into `out` (`capacity` bytes), NUL-terminated, and
 * returns true. Returns false, leaving `out` unchanged, when the key has no value, its value is
 * not a string, the value does not fit (length >= capacity: a value is never cut), or host, key or
 * out is NULL. An empty value is copied as "" and returns true.
 *
 * Ownership: `key` is borrowed; `out` is the caller's buffer, written only on success. Nothing to
 * free. Threads: [thread-safe], like config_get (the caller owns `out`). Failure: false, as above;
 * nothing is reported: the caller reports what the missing value means. */
static inline bool hh_config_string_copy(const hh_host_t *host, const char *key, char *out, size_t capacity) {
    hh_string_t text;
    hh_value_t value;
    if (!host || !host->config_get || !out || host->config_get(host, key, &value) != HH_OK ||
        value.type != HH_VALUE_STRING) {
        return false;
    }
    text = value.of.string;
    if (text.length >= capacity) {
        return false;
    }
    if (text.length > 0) {
        memcpy(out, text.data, text.length);
    }
    out[text.length] = '\0';
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * JSON
 * ------------------------------------------------------------------------------------------- */

/* Finds the number of `"key": <number>` in the NUL-terminated text `text` and stores it in *out.
 * A plain text search, not a JSON parser: it takes the FIRST occurrence of `key` between double
 * quotes anywhere in `text` (at any depth, or a string value that equals the key), skips spaces,
 * tabs and line breaks, requires ':', and reads the number after it with strtod. It returns false,
 * leaving *out unchanged, when that first occurrence is absent or not followed by ':' (a later
 * occurrence is not tried), when no number follows (strtod read nothing), or when text, key or out
 * is NULL. To search one object only, pass a pointer into the text where that object starts.
 *
 * The number is what strtod reads: leading white space and a sign are accepted, and so are forms
 * JSON does not have (hexadecimal, "inf", "nan"); reading stops at the first character that is not
 * part of the number (so 12abc reads 12); an out-of-range value is what strtod makes of it
 * (+-HUGE_VAL on overflow, errno ERANGE); the decimal point is the C locale's unless the process
 * changed LC_NUMERIC.
 *
 * Ownership: `text` and `key` are borrowed for the call (`key` NUL-terminated, without quotes,
 * compared byte for byte: no escapes are decoded). No allocation. Threads: [thread-safe] (it
 * reads only its arguments and the locale). Failure: false, as above; nothing is reported. */
static inline bool hh_json_number(const char *text, const char *key, double *out) {
    const char *at;
    char *end = NULL;
    size_t key_length;
    double value;
    if (!text || !key || !out) {
        return false;
    }
    key_length = strlen(key);
    for (at = strchr(text, '"');; at = strchr(at + 1, '"')) {
        if (!at) {
            return false;
        }
        if (strncmp(at + 1, key, key_length) == 0 && at[1 + key_length] == '"') {
            break;
        }
    }
    at += key_length + 2;
    while (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r') {
        at++;
    }
    if (*at != ':') {
        return false;
    }
    at++;
    value = strtod(at, &end);
    if (end == at) {
        return false;
    }
    *out = value;
    return true;
}

#endif /* HUBHOST_PLUGIN_HELPERS_H */
