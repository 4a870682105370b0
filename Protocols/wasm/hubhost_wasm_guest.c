/*
 * The guest side of hubhost's WebAssembly plugins (see hubhost_wasm.h): compiled into a .wasm
 * module together with an unchanged C plugin source, it exports the functions the host calls,
 * decodes each request, calls the plugin's own function tables (from hubhost_library_entry) and
 * encodes the answer, in the byte encoding of process isolation. The hh_host_t it hands to the
 * plugin calls the host's imports.
 *
 * Kinds served: augmentation, trigger_operator, logging, advertiser_id, location, user_id_generator,
 * event_sink. Other kinds load and create, and every call on them answers -1 (the host reports it
 * as a failure). Host extensions reaching a guest: "hubhost.http.v1" (through the http_fetch and
 * http_take imports, under the instance's http_allow); get_extension answers NULL for any other.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_wasm.h>
#include <hubhost/hubhost_wire_ops.h> /* the op codes of hh_wasm_call, shared with the host's WorkerOp */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HH_STRINGIFY_(x) #x
#define HH_STRINGIFY(x)  HH_STRINGIFY_(x)

/* The ABI version as a custom section, read without running the module. Inline assembly because
 * clang 14 puts a C array into the data segment even with section(".custom_section.*"). */
#define HH_ABI_SECTION_WORD(value) ".int32 " HH_STRINGIFY(value) "\n"
__asm__(".section .custom_section.hubhost_abi,\"\",@\n" HH_ABI_SECTION_WORD(HH_ABI_VERSION_MAJOR)
            HH_ABI_SECTION_WORD(HH_ABI_VERSION_MINOR) HH_ABI_SECTION_WORD(HH_ABI_VERSION_PATCH) ".text\n");

#define HH_WASM_IMPORT(name)   __attribute__((import_module(HH_WASM_IMPORT_MODULE), import_name(#name)))
#define HH_WASM_EXPORTED(name) __attribute__((export_name(#name)))

HH_WASM_IMPORT(log)
void hh_import_log(int32_t severity, int32_t verbosity, const char *message, uint32_t length);
HH_WASM_IMPORT(report_error)
void hh_import_report_error(int32_t status, const char *message, uint32_t length);
HH_WASM_IMPORT(monotonic_ns) uint64_t hh_import_monotonic_ns(void);
HH_WASM_IMPORT(config_get)
int32_t hh_import_config_get(const char *key, uint32_t key_length, uint8_t *out, uint32_t capacity);
HH_WASM_IMPORT(http_fetch)
int32_t hh_import_http_fetch(const uint8_t *request, uint32_t length, uint32_t *out_length);
HH_WASM_IMPORT(http_take) int32_t hh_import_http_take(uint8_t *out, uint32_t capacity);

/* Limits the host applies to attributes a plugin sets (EventLimits): checked here too, so the
 * plugin hears HH_ERR_INVALID_ARGUMENT as it would in process. The host does not rely on these
 * checks: it replays every edit through its own editor, which checks it again. */
#define MAX_ATTRIBUTES  1000
#define MAX_NAME_BYTES  1024
#define MAX_VALUE_BYTES (1024 * 1024)
#define MAX_TIME_MS     INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z; the least is 0 */

/* ---------------------------------------------------------------------------------------------
 * Byte buffers
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint8_t *bytes;
    uint32_t length;
    uint32_t capacity;
    bool failed; /* out of memory: the answer is dropped */
} writer_t;

static bool reserve(writer_t *w, uint32_t more) {
    if (w->failed) {
        return false;
    }
    if (w->length + more <= w->capacity) {
        return true;
    }
    uint32_t capacity = w->capacity ? w->capacity : 256;
    while (capacity < w->length + more) {
        capacity *= 2;
    }
    uint8_t *grown = realloc(w->bytes, capacity);
    if (!grown) {
        w->failed = true;
        return false;
    }
    w->bytes = grown;
    w->capacity = capacity;
    return true;
}

static void put(writer_t *w, const void *data, uint32_t length) {
    if (length && reserve(w, length)) {
        memcpy(w->bytes + w->length, data, length);
        w->length += length;
    }
}

static void put_u8(writer_t *w, uint8_t v) {
    put(w, &v, 1);
}
static void put_u32(writer_t *w, uint32_t v) {
    put(w, &v, 4); /* wasm32 is little-endian, as the encoding */
}
static void put_i32(writer_t *w, int32_t v) {
    put(w, &v, 4);
}
static void put_i64(writer_t *w, int64_t v) {
    put(w, &v, 8);
}
static void put_string(writer_t *w, hh_string_t s) {
    put_u32(w, (uint32_t)s.length);
    put(w, s.data, (uint32_t)s.length);
}
static void put_cstring(writer_t *w, const char *s) {
    put_string(w, hh_string_from_cstr(s ? s : ""));
}

static void put_value(writer_t *w, const hh_value_t *v) {
    put_u8(w, (uint8_t)v->type);
    switch (v->type) {
    case HH_VALUE_STRING:
        put_string(w, v->of.string);
        break;
    case HH_VALUE_INT64:
        put_i64(w, v->of.int64);
        break;
    case HH_VALUE_DOUBLE:
        put(w, &v->of.real, 8);
        break;
    case HH_VALUE_BOOL:
        put_u8(w, v->of.boolean ? 1 : 0);
        break;
    case HH_VALUE_TIME_MS:
        put_i64(w, v->of.time_ms);
        break;
    default:
        break;
    }
}

typedef struct {
    const uint8_t *bytes;
    uint32_t length;
    uint32_t offset;
    bool failed;
} reader_t;

static const uint8_t *take(reader_t *r, uint32_t count) {
    if (r->failed || count > r->length - r->offset) {
        r->failed = true;
        return NULL;
    }
    const uint8_t *at = r->bytes + r->offset;
    r->offset += count;
    return at;
}

static uint8_t get_u8(reader_t *r) {
    const uint8_t *p = take(r, 1);
    return p ? *p : 0;
}
static uint32_t get_u32(reader_t *r) {
    uint32_t v = 0;
    const uint8_t *p = take(r, 4);
    if (p) {
        memcpy(&v, p, 4);
    }
    return v;
}
static int64_t get_i64(reader_t *r) {
    int64_t v = 0;
    const uint8_t *p = take(r, 8);
    if (p) {
        memcpy(&v, p, 8);
    }
    return v;
}
/* A string borrowed from the request buffer. */
static hh_string_t get_string(reader_t *r) {
    hh_string_t s = {"", 0};
    uint32_t length = get_u32(r);
    const uint8_t *p = take(r, length);
    if (p) {
        s.data = (const char *)p;
        s.length = length;
    }
    return s;
}
static hh_value_t get_value(reader_t *r) {
    hh_value_t v = hh_value_null();
    v.type = get_u8(r);
    switch (v.type) {
    case HH_VALUE_NULL:
        break;
    case HH_VALUE_STRING:
        v.of.string = get_string(r);
        break;
    case HH_VALUE_INT64:
        v.of.int64 = get_i64(r);
        break;
    case HH_VALUE_DOUBLE: {
        int64_t bits = get_i64(r);
        memcpy(&v.of.real, &bits, 8);
        break;
    }
    case HH_VALUE_BOOL:
        v.of.boolean = get_u8(r) != 0;
        break;
    case HH_VALUE_TIME_MS:
        v.of.time_ms = get_i64(r);
        break;
    default:
        r->failed = true;
    }
    return v;
}

/* ---------------------------------------------------------------------------------------------
 * State: the request buffer, the answer, the created plugins
 * ------------------------------------------------------------------------------------------- */

static uint8_t *request_buffer;
static uint32_t request_capacity;
static writer_t answer;
static char last_error[1024];
static uint32_t last_error_length;

typedef struct {
    const hh_plugin_descriptor_t *descriptor;
    void *instance;
    bool created;
    hh_host_t host;
    /* Config strings handed to the plugin stay valid until destroy: kept in this list. */
    void **kept;
    uint32_t kept_count;
} slot_t;

static slot_t *slots;
static uint32_t slot_count;

static int64_t answer_result(void) {
    if (answer.failed) {
        return -1;
    }
    return (int64_t)(((uint64_t)answer.length << 32) | (uint32_t)(uintptr_t)answer.bytes);
}

HH_WASM_EXPORTED(hh_wasm_buffer) uint8_t *hh_wasm_buffer(uint32_t capacity) {
    if (capacity > request_capacity) {
        uint8_t *grown = realloc(request_buffer, capacity);
        if (!grown) {
            return NULL;
        }
        request_buffer = grown;
        request_capacity = capacity;
    }
    return request_buffer ? request_buffer
                          : (request_buffer = malloc(16), request_capacity = 16, request_buffer);
}

/* ---------------------------------------------------------------------------------------------
 * The hh_host_t of a guest plugin
 * ------------------------------------------------------------------------------------------- */

static void host_log(const hh_host_t *host, hh_severity_t severity, hh_verbosity_t verbosity,
                     hh_string_t message) {
    (void)host;
    hh_import_log(severity, verbosity, message.data, (uint32_t)message.length);
}

static hh_status_t host_config_get(const hh_host_t *host, const char *key, hh_value_t *out) {
    if (!key || !out) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    slot_t *slot = (slot_t *)host->host_data;
    uint32_t key_length = (uint32_t)strlen(key);
    uint32_t capacity = 256;
    uint8_t *bytes = malloc(capacity);
    if (!bytes) {
        return HH_ERR_INTERNAL;
    }
    int32_t length = hh_import_config_get(key, key_length, bytes, capacity);
    if (length > (int32_t)capacity) {
        free(bytes);
        capacity = (uint32_t)length;
        bytes = malloc(capacity);
        if (!bytes) {
            return HH_ERR_INTERNAL;
        }
        length = hh_import_config_get(key, key_length, bytes, capacity);
    }
    if (length < 0 || length > (int32_t)capacity) {
        free(bytes);
        return HH_ERR_NOT_FOUND;
    }
    void **kept = realloc(slot->kept, sizeof(void *) * (slot->kept_count + 1));
    if (!kept) {
        free(bytes);
        return HH_ERR_INTERNAL;
    }
    slot->kept = kept;
    slot->kept[slot->kept_count++] = bytes; /* a string value points into these bytes */
    reader_t reader = {bytes, (uint32_t)length, 0, false};
    *out = get_value(&reader);
    return reader.failed ? HH_ERR_INTERNAL : HH_OK;
}

static uint64_t host_monotonic_ns(const hh_host_t *host) {
    (void)host;
    return hh_import_monotonic_ns();
}

/* Keeps `length` bytes of `message` (at most sizeof last_error) as the message of the call in
 * progress: what report_error left, or the host's report of a failed HTTP request. */
static void keep_report(const void *message, size_t length) {
    if (length > sizeof last_error) {
        length = sizeof last_error;
    }
    if (length) {
        memcpy(last_error, message, length);
    }
    last_error_length = (uint32_t)length;
}

static void host_report_error(const hh_host_t *host, hh_status_t status, hh_string_t message) {
    (void)host;
    keep_report(message.data, message.length);
    hh_import_report_error(status, message.data, (uint32_t)message.length);
}

/* ---------------------------------------------------------------------------------------------
 * The host HTTP service ("hubhost.http.v1") over the http_fetch and http_take imports
 * ------------------------------------------------------------------------------------------- */

static hh_status_t http_fetch(const hh_host_t *host, const hh_http_request_t *request,
                              hh_http_response_t *out_response) {
    (void)host;
    if (!request || !out_response || (request->header_count && !request->headers) ||
        (request->body_length && !request->body) || request->header_count > UINT32_MAX / 8 ||
        request->body_length > UINT32_MAX / 2) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    writer_t w = {NULL, 0, 0, false};
    put_string(&w, request->method);
    put_string(&w, request->url);
    put_u32(&w, (uint32_t)request->header_count);
    for (size_t i = 0; i < request->header_count; i++) {
        put_string(&w, request->headers[i].name);
        put_string(&w, request->headers[i].value);
    }
    put_u32(&w, (uint32_t)request->body_length);
    put(&w, request->body, (uint32_t)request->body_length);
    put_u32(&w, request->timeout_ms);
    if (w.failed) {
        free(w.bytes);
        return HH_ERR_INTERNAL;
    }
    uint32_t held = 0;
    hh_status_t status = hh_import_http_fetch(w.bytes, w.length, &held);
    free(w.bytes);
    uint8_t *bytes = malloc(held ? held : 1);
    int32_t length = bytes ? hh_import_http_take(bytes, held) : -1;
    if (status != HH_OK) {
        if (length > 0) {
            /* The host's report (a refused host or redirect, a URL that does not parse, an I/O
             * failure): a plugin that returns the failure without its own report_error still
             * explains it. */
            keep_report(bytes, (size_t)length);
        }
        free(bytes);
        return status;
    }
    if (length < 0) {
        free(bytes);
        return HH_ERR_INTERNAL;
    }
    /* The header table has one spare slot after the last header, holding the response bytes the
     * strings point into, so release finds and frees both; `headers` is never NULL on HH_OK. */
    reader_t r = {bytes, (uint32_t)length, 0, false};
    int32_t status_code = (int32_t)get_u32(&r);
    uint32_t header_count = get_u32(&r);
    hh_http_header_t *table = NULL;
    if (!r.failed && header_count <= (uint32_t)length / 8) {
        table = malloc(sizeof(hh_http_header_t) * (header_count + 1));
    }
    if (!table) {
        free(bytes);
        return HH_ERR_INTERNAL;
    }
    for (uint32_t i = 0; i < header_count; i++) {
        table[i].name = get_string(&r);
        table[i].value = get_string(&r);
    }
    hh_string_t body = get_string(&r);
    if (r.failed) {
        free(table);
        free(bytes);
        return HH_ERR_INTERNAL;
    }
    table[header_count].name.data = (const char *)bytes;
    table[header_count].name.length = 0;
    table[header_count].value.data = NULL;
    table[header_count].value.length = 0;
    memset(out_response, 0, sizeof *out_response);
    out_response->status_code = status_code;
    out_response->headers = table;
    out_response->header_count = header_count;
    out_response->body = body.data;
    out_response->body_length = body.length;
    return HH_OK;
}

static void http_release(const hh_host_t *host, hh_http_response_t *response) {
    (void)host;
    if (!response || !response->headers) {
        return;
    }
    hh_http_header_t *table = (hh_http_header_t *)response->headers;
    free((void *)table[response->header_count].name.data);
    free(table);
    memset(response, 0, sizeof *response);
}

static const hh_host_http_v1_t guest_http = {http_fetch, http_release};

/* The traceparents of the deliver call in progress, by event index, each NUL-terminated in its
 * own 56-byte slot ({NULL, 0} for an event without one); NULL between deliver calls. */
#define TRACEPARENT_SLOT 56
static hh_string_t *deliver_traceparents;
static size_t deliver_traceparent_count;

static hh_string_t event_traceparent(const hh_host_t *host, size_t index) {
    (void)host;
    hh_string_t none = {NULL, 0};
    if (!deliver_traceparents || index >= deliver_traceparent_count) {
        return none;
    }
    return deliver_traceparents[index];
}

static const hh_host_event_trace_v1_t guest_event_trace = {event_traceparent};

static const void *host_get_extension(const hh_host_t *host, const char *extension_id) {
    (void)host;
    if (extension_id && strcmp(extension_id, HH_HOST_EXT_HTTP) == 0) {
        return &guest_http;
    }
    if (extension_id && strcmp(extension_id, HH_HOST_EXT_EVENT_TRACE) == 0) {
        return &guest_event_trace;
    }
    return NULL; /* no other host extension reaches a guest */
}

static hh_string_t take_error(void) {
    hh_string_t s = {last_error, last_error_length};
    last_error_length = 0;
    return s;
}

/* ---------------------------------------------------------------------------------------------
 * Library, create, destroy
 * ------------------------------------------------------------------------------------------- */

const hh_library_t *hubhost_library_entry(void);

static const hh_library_t *library(void) {
    static const hh_library_t *cached;
    if (!cached) {
        cached = hubhost_library_entry();
    }
    return cached;
}

HH_WASM_EXPORTED(hh_wasm_describe) int64_t hh_wasm_describe(void) {
    const hh_library_t *lib = library();
    answer.length = 0;
    answer.failed = false;
    put_u32(&answer, lib->abi_version.major);
    put_u32(&answer, lib->abi_version.minor);
    put_u32(&answer, lib->abi_version.patch);
    uint32_t count = lib->get_plugin ? lib->plugin_count : 0;
    if (count > 4096) {
        count = 0; /* the host refuses the count it reads below */
    }
    put_u32(&answer, lib->plugin_count);
    if (!slots && count) {
        slots = calloc(count, sizeof(slot_t));
        slot_count = slots ? count : 0;
    }
    for (uint32_t i = 0; i < count; i++) {
        const hh_plugin_descriptor_t *d = lib->get_plugin(i);
        if (i < slot_count) {
            slots[i].descriptor = d;
        }
        put_cstring(&answer, d ? d->id : "");
        put_cstring(&answer, d ? d->name : "");
        put_cstring(&answer, d ? d->description : "");
        put_cstring(&answer, d ? d->version : "");
        put_i32(&answer, d && d->kind_api && d->create && d->destroy ? d->kind : 0);
    }
    return answer_result();
}

HH_WASM_EXPORTED(hh_wasm_create) int32_t hh_wasm_create(uint32_t index) {
    if (index >= slot_count || !slots[index].descriptor || slots[index].created) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    slot_t *slot = &slots[index];
    hh_host_t host = {
        HH_ABI_VERSION_INIT, slot, "", "", host_log, host_config_get, host_monotonic_ns, host_report_error,
        host_get_extension};
    slot->host = host;
    hh_status_t status = slot->descriptor->create(&slot->host, &slot->instance);
    slot->created = status == HH_OK;
    return status;
}

HH_WASM_EXPORTED(hh_wasm_destroy) void hh_wasm_destroy(uint32_t index) {
    if (index >= slot_count || !slots[index].created) {
        return;
    }
    slot_t *slot = &slots[index];
    slot->descriptor->destroy(slot->instance);
    slot->created = false;
    for (uint32_t i = 0; i < slot->kept_count; i++) {
        free(slot->kept[i]);
    }
    free(slot->kept);
    slot->kept = NULL;
    slot->kept_count = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Augmentation: the event as an attribute array the view reads and the editor changes
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    hh_string_t name;
    hh_value_t value;
    void *owned; /* bytes copied by set_attribute (name and string value), or NULL */
} attribute_t;

typedef struct {
    attribute_t *items;
    uint32_t count;
    uint32_t capacity;
    /* The plugin's edits in order, as the answer carries them: the host replays them on the event
     * it sent instead of reading the whole event back. */
    writer_t *edits;
    uint32_t edit_count;
} attributes_t;

/* The most edits one augment call may make; past it set and remove answer HH_ERR_INVALID_ARGUMENT
 * (the host refuses an answer with more, so replaying one costs it a bounded time). */
#define MAX_EDITS 10000
enum { EDIT_SET = 0, EDIT_REMOVE = 1 };

static size_t view_count(const hh_event_view_t *view) {
    return ((attributes_t *)view->event_data)->count;
}

static hh_status_t view_at(const hh_event_view_t *view, size_t index, hh_string_t *out_name,
                           hh_value_t *out_value) {
    attributes_t *a = view->event_data;
    if (index >= a->count) {
        return HH_ERR_NOT_FOUND;
    }
    if (out_name) {
        *out_name = a->items[index].name;
    }
    if (out_value) {
        *out_value = a->items[index].value;
    }
    return HH_OK;
}

static long find(const attributes_t *a, hh_string_t name) {
    for (uint32_t i = 0; i < a->count; i++) {
        if (a->items[i].name.length == name.length &&
            memcmp(a->items[i].name.data, name.data, name.length) == 0) {
            return (long)i;
        }
    }
    return -1;
}

static hh_status_t view_get(const hh_event_view_t *view, hh_string_t name, hh_value_t *out_value) {
    attributes_t *a = view->event_data;
    long i = find(a, name);
    if (i < 0) {
        return HH_ERR_NOT_FOUND;
    }
    if (out_value) {
        *out_value = a->items[i].value;
    }
    return HH_OK;
}

/* True when `s` is valid UTF-8 as the host reads it: no overlong forms, no surrogates, nothing
 * past U+10FFFF, no sequence cut short. The host refuses any other name or string value. */
static bool valid_utf8(hh_string_t s) {
    const unsigned char *bytes = (const unsigned char *)s.data;
    size_t i = 0;
    while (i < s.length) {
        unsigned char lead = bytes[i];
        if (lead < 0x80) {
            i++;
            continue;
        }
        size_t follow = 0;
        unsigned char low = 0x80, high = 0xBF; /* the range of the byte after the lead */
        if (lead >= 0xC2 && lead <= 0xDF) {
            follow = 1;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            follow = 2;
            low = lead == 0xE0 ? 0xA0 : 0x80;  /* no overlong three-byte form */
            high = lead == 0xED ? 0x9F : 0xBF; /* no surrogate */
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            follow = 3;
            low = lead == 0xF0 ? 0x90 : 0x80;  /* no overlong four-byte form */
            high = lead == 0xF4 ? 0x8F : 0xBF; /* nothing past U+10FFFF */
        } else {
            return false;
        }
        if (s.length - i <= follow || bytes[i + 1] < low || bytes[i + 1] > high) {
            return false;
        }
        for (size_t k = 2; k <= follow; k++) {
            if (bytes[i + k] < 0x80 || bytes[i + k] > 0xBF) {
                return false;
            }
        }
        i += follow + 1;
    }
    return true;
}

static hh_status_t editor_set(const hh_event_editor_t *editor, hh_string_t name, const hh_value_t *value) {
    attributes_t *a = editor->editor_data;
    if (!value || name.length == 0 || name.length > MAX_NAME_BYTES || (name.length && !name.data) ||
        !valid_utf8(name)) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    size_t string_length = 0;
    switch (value->type) {
    case HH_VALUE_NULL:
    case HH_VALUE_INT64:
    case HH_VALUE_BOOL:
        break;
    case HH_VALUE_TIME_MS:
        if (value->of.time_ms < 0 || value->of.time_ms > MAX_TIME_MS) {
            return HH_ERR_INVALID_ARGUMENT;
        }
        break;
    case HH_VALUE_DOUBLE:
        if (!isfinite(value->of.real)) {
            return HH_ERR_INVALID_ARGUMENT;
        }
        break;
    case HH_VALUE_STRING:
        string_length = value->of.string.length;
        if (string_length > MAX_VALUE_BYTES || (string_length && !value->of.string.data) ||
            !valid_utf8(value->of.string)) {
            return HH_ERR_INVALID_ARGUMENT;
        }
        break;
    default:
        return HH_ERR_INVALID_ARGUMENT;
    }
    long at = find(a, name);
    if ((at < 0 && a->count >= MAX_ATTRIBUTES) || a->edit_count >= MAX_EDITS) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    char *owned = malloc(name.length + string_length + 1);
    if (!owned) {
        return HH_ERR_INTERNAL;
    }
    memcpy(owned, name.data, name.length);
    if (string_length) {
        memcpy(owned + name.length, value->of.string.data, string_length);
    }
    attribute_t item = {{owned, name.length}, *value, owned};
    if (value->type == HH_VALUE_STRING) {
        item.value.of.string.data = owned + name.length;
    }
    put_u8(a->edits, EDIT_SET);
    put_string(a->edits, item.name);
    put_value(a->edits, &item.value);
    a->edit_count++;
    if (at >= 0) {
        free(a->items[at].owned);
        a->items[at] = item;
        return HH_OK;
    }
    if (a->count == a->capacity) {
        uint32_t capacity = a->capacity ? a->capacity * 2 : 8;
        attribute_t *grown = realloc(a->items, sizeof(attribute_t) * capacity);
        if (!grown) {
            free(owned);
            return HH_ERR_INTERNAL;
        }
        a->items = grown;
        a->capacity = capacity;
    }
    a->items[a->count++] = item;
    return HH_OK;
}

static hh_status_t editor_remove(const hh_event_editor_t *editor, hh_string_t name) {
    attributes_t *a = editor->editor_data;
    long at = find(a, name);
    if (at < 0) {
        return HH_ERR_NOT_FOUND;
    }
    if (a->edit_count >= MAX_EDITS) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    put_u8(a->edits, EDIT_REMOVE);
    put_string(a->edits, name);
    a->edit_count++;
    free(a->items[at].owned);
    memmove(&a->items[at], &a->items[at + 1], sizeof(attribute_t) * (a->count - (uint32_t)at - 1));
    a->count--;
    return HH_OK;
}

/* Frees what set_attribute copied; the items array is kept for the next call. */
static void release(attributes_t *a) {
    for (uint32_t i = 0; i < a->count; i++) {
        free(a->items[i].owned);
    }
    a->count = 0;
}

/* The event's attributes, reused from call to call (calls into a module are serialized), and the
 * edit log of the call in progress. */
static attributes_t event_attributes;
static writer_t edit_log;

/* Request: the event (string id, i32 type, string name, i64 time, u32 count, (string, value)*).
 * Answer: i32 status, string message, and on HH_OK u32 edit count and the plugin's edits in order:
 * u8 0, string name and value for a set; u8 1 and string name for a remove. */
static bool serve_augment(slot_t *slot, reader_t *r) {
    const hh_augmentation_v1_t *api = slot->descriptor->kind_api;
    hh_event_view_t view;
    memset(&view, 0, sizeof view);
    view.event_id = get_string(r);
    view.type_code = (int32_t)get_u32(r);
    view.name = get_string(r);
    view.time_ms = get_i64(r);
    uint32_t count = get_u32(r);
    attributes_t *attributes = &event_attributes;
    if (r->failed || count > r->length || count > UINT32_MAX / 2) {
        return false; /* every attribute takes at least one byte: a lie */
    }
    if (count > attributes->capacity) {
        attribute_t *grown = realloc(attributes->items, sizeof(attribute_t) * count);
        if (!grown) {
            return false;
        }
        attributes->items = grown;
        attributes->capacity = count;
    }
    attributes->count = 0;
    for (uint32_t i = 0; i < count && !r->failed; i++) {
        attributes->items[i].name = get_string(r);
        attributes->items[i].value = get_value(r);
        attributes->items[i].owned = NULL;
        attributes->count++;
    }
    if (r->failed) {
        attributes->count = 0;
        return false;
    }
    edit_log.length = 0;
    edit_log.failed = false;
    attributes->edits = &edit_log;
    attributes->edit_count = 0;
    view.event_data = attributes;
    view.attribute_count = view_count;
    view.attribute_at = view_at;
    view.get_attribute = view_get;
    hh_event_editor_t editor = {attributes, editor_set, editor_remove};
    last_error_length = 0;
    hh_status_t status = api->augment(slot->instance, &view, &editor);
    put_i32(&answer, status);
    put_string(&answer, status == HH_OK ? hh_string_from_cstr("") : take_error());
    if (status == HH_OK) {
        if (edit_log.failed) {
            answer.failed = true; /* out of memory for the log: no answer rather than a partial one */
        }
        put_u32(&answer, attributes->edit_count);
        put(&answer, edit_log.bytes, edit_log.length);
    }
    release(attributes);
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * The other kinds
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    char *bytes;
    uint32_t length;
    bool set;
} string_box_t;

static void box_set(void *data, hh_string_t value) {
    string_box_t *box = data;
    char *copy = malloc(value.length ? value.length : 1);
    if (!copy) {
        return;
    }
    if (value.length) {
        memcpy(copy, value.data, value.length);
    }
    free(box->bytes);
    box->bytes = copy;
    box->length = (uint32_t)value.length;
    box->set = true;
}

static bool serve_compare(slot_t *slot, reader_t *r) {
    const hh_trigger_operator_v1_t *api = slot->descriptor->kind_api;
    hh_value_t event = get_value(r);
    hh_value_t trigger = get_value(r);
    if (r->failed) {
        return false;
    }
    bool result = false;
    last_error_length = 0;
    hh_status_t status = api->compare(slot->instance, &event, &trigger, &result);
    put_u8(&answer, status == HH_OK && result ? 1 : 0);
    put_i32(&answer, status);
    put_string(&answer, status == HH_OK ? hh_string_from_cstr("") : take_error());
    return true;
}

static bool serve_log(slot_t *slot, reader_t *r) {
    const hh_logging_v1_t *api = slot->descriptor->kind_api;
    hh_log_record_t record;
    record.severity = (int32_t)get_u32(r);
    record.verbosity = (int32_t)get_u32(r);
    record.time_ms = get_i64(r);
    record.source = get_string(r);
    record.message = get_string(r);
    if (r->failed) {
        return false;
    }
    api->log(slot->instance, &record);
    return true;
}

static void serve_advertiser_id(slot_t *slot) {
    const hh_advertiser_id_v1_t *api = slot->descriptor->kind_api;
    string_box_t box = {NULL, 0, false};
    hh_string_sink_t sink = {&box, box_set};
    bool limited = false;
    last_error_length = 0;
    hh_status_t status = api->advertiser_id(slot->instance, &limited, &sink);
    if (status == HH_OK && limited) {
        put_u8(&answer, 1);
    } else if (status == HH_OK && box.set) {
        put_u8(&answer, 0);
        hh_string_t id = {box.bytes, box.length};
        put_string(&answer, id);
    } else if (status == HH_OK) {
        put_u8(&answer, 2);
    } else if (status == HH_ERR_NOT_FOUND) {
        put_u8(&answer, 3);
    } else {
        put_u8(&answer, 4);
        put_i32(&answer, status);
        put_string(&answer, take_error());
    }
    free(box.bytes);
}

static void put_optional_double(writer_t *w, bool present, double value) {
    put_u8(w, present ? 1 : 0);
    if (present) {
        put(w, &value, 8);
    }
}

static void put_optional_string(writer_t *w, hh_string_t s) {
    put_u8(w, s.length ? 1 : 0);
    if (s.length) {
        put_string(w, s);
    }
}

/* Answer: 0 and the location (optional doubles and strings as the host's Location has them),
 * 1 for HH_ERR_UNAVAILABLE, or 2, the status and the message. */
static void serve_location(slot_t *slot) {
    const hh_location_v1_t *api = slot->descriptor->kind_api;
    hh_location_t location;
    memset(&location, 0, sizeof location);
    last_error_length = 0;
    hh_status_t status = api->get_location(slot->instance, &location);
    if (status == HH_OK) {
        bool coordinates = location.has_coordinates;
        put_u8(&answer, 0);
        put_optional_double(&answer, coordinates, location.latitude);
        put_optional_double(&answer, coordinates, location.longitude);
        put_optional_double(&answer, coordinates && location.accuracy_m > 0, location.accuracy_m);
        put_u8(&answer, location.time_ms != 0 ? 1 : 0);
        if (location.time_ms != 0) {
            put_i64(&answer, location.time_ms);
        }
        put_optional_string(&answer, location.location_id);
        put_optional_string(&answer, location.name);
        put_optional_string(&answer, location.address);
        if (api->release_location) {
            api->release_location(slot->instance, &location);
        }
    } else if (status == HH_ERR_UNAVAILABLE) {
        put_u8(&answer, 1);
    } else {
        put_u8(&answer, 2);
        put_i32(&answer, status);
        put_string(&answer, take_error());
    }
}

static void serve_user_id(slot_t *slot) {
    const hh_user_id_generator_v1_t *api = slot->descriptor->kind_api;
    string_box_t box = {NULL, 0, false};
    hh_string_sink_t sink = {&box, box_set};
    last_error_length = 0;
    hh_status_t status = api->generate(slot->instance, &sink);
    if (status == HH_OK && box.set && box.length >= 1 && box.length <= HH_USER_ID_MAX_BYTES) {
        put_u8(&answer, 0);
        hh_string_t id = {box.bytes, box.length};
        put_string(&answer, id);
    } else {
        put_u8(&answer, 1);
        put_i32(&answer, status == HH_OK ? HH_ERR_INTERNAL : status);
        put_string(&answer,
                   status == HH_OK ? hh_string_from_cstr("answered HH_OK without a valid id") : take_error());
    }
    free(box.bytes);
}

/* Request: u32 timeout_ms, u32 count (1 to HH_SINK_MAX_BATCH), per event string idempotency key,
 * i32 type code, i64 time, string json, string mobile user id, string anonymous id; then, when
 * the host sends them, u32 traced and per traced event u32 index and string traceparent (what
 * hubhost.event_trace.v1 answers during the call).
 * Answer: i32 status, string message, and on HH_OK u32 count and per event i32 outcome and string
 * reason, as the plugin wrote them (the host judges them, as it does in process). */
static bool serve_deliver(slot_t *slot, reader_t *r) {
    const hh_event_sink_v1_t *api = slot->descriptor->kind_api;
    uint32_t timeout_ms = get_u32(r);
    uint32_t count = get_u32(r);
    if (r->failed || count < 1 || count > HH_SINK_MAX_BATCH) {
        return false;
    }
    hh_sink_event_t *events = calloc(count, sizeof(hh_sink_event_t));
    hh_sink_answer_t *answers = calloc(count, sizeof(hh_sink_answer_t));
    if (!events || !answers) {
        free(events);
        free(answers);
        return false;
    }
    for (uint32_t i = 0; i < count && !r->failed; i++) {
        events[i].idempotency_key = get_string(r);
        events[i].type_code = (int32_t)get_u32(r);
        events[i].time_ms = get_i64(r);
        events[i].json = get_string(r);
        events[i].mobile_user_id = get_string(r);
        events[i].anonymous_id = get_string(r);
        answers[i].outcome = HH_SINK_RETRY;
    }
    if (r->failed) {
        free(events);
        free(answers);
        return false;
    }
    /* The traceparents, copied with a NUL each, as the header promises. */
    hh_string_t *traceparents = NULL;
    char *traceparent_bytes = NULL;
    uint32_t traced = r->offset < r->length ? get_u32(r) : 0;
    if (traced > 0 && traced <= count) {
        traceparents = calloc(count, sizeof(hh_string_t));
        traceparent_bytes = calloc(traced, TRACEPARENT_SLOT);
    }
    for (uint32_t i = 0; traceparents && traceparent_bytes && i < traced && !r->failed; i++) {
        uint32_t index = get_u32(r);
        hh_string_t value = get_string(r);
        if (!r->failed && index < count && value.length > 0 && value.length < TRACEPARENT_SLOT) {
            char *slot_bytes = traceparent_bytes + (size_t)i * TRACEPARENT_SLOT;
            memcpy(slot_bytes, value.data, value.length);
            traceparents[index].data = slot_bytes;
            traceparents[index].length = value.length;
        }
    }
    deliver_traceparents = traceparent_bytes ? traceparents : NULL;
    deliver_traceparent_count = deliver_traceparents ? count : 0;
    last_error_length = 0;
    hh_status_t status = api->deliver(slot->instance, events, count, answers, timeout_ms ? timeout_ms : 1);
    deliver_traceparents = NULL;
    deliver_traceparent_count = 0;
    free(traceparents);
    free(traceparent_bytes);
    put_i32(&answer, status);
    put_string(&answer, status == HH_OK ? hh_string_from_cstr("") : take_error());
    if (status == HH_OK) {
        put_u32(&answer, count);
        for (uint32_t i = 0; i < count; i++) {
            hh_string_t reason = answers[i].reason;
            if (!reason.data) {
                reason.length = 0;
            } else if (reason.length > 4096) {
                reason.length = 4096; /* as the host cuts a reason in process */
            }
            put_i32(&answer, answers[i].outcome);
            put_string(&answer, reason);
        }
    }
    free(events);
    free(answers);
    return true;
}

HH_WASM_EXPORTED(hh_wasm_call) int64_t hh_wasm_call(uint32_t index, int32_t op, uint32_t length) {
    if (index >= slot_count || !slots[index].created || length > request_capacity) {
        return -1;
    }
    slot_t *slot = &slots[index];
    reader_t reader = {request_buffer, length, 0, false};
    answer.length = 0;
    answer.failed = false;
    hh_plugin_kind_t kind = slot->descriptor->kind;
    bool served = true;
    if (kind == HH_KIND_AUGMENTATION && op == HH_WIRE_OP_AUGMENT) {
        served = serve_augment(slot, &reader);
    } else if (kind == HH_KIND_AUGMENTATION && op == HH_WIRE_OP_PROCESS_SYNCHRONOUSLY) {
        put_u8(&answer, ((const hh_augmentation_v1_t *)slot->descriptor->kind_api)
                            ->process_synchronously(slot->instance));
    } else if (kind == HH_KIND_AUGMENTATION && op == HH_WIRE_OP_IS_SUPPLEMENTAL_DATA_READY) {
        put_u8(&answer, ((const hh_augmentation_v1_t *)slot->descriptor->kind_api)
                            ->is_supplemental_data_ready(slot->instance));
    } else if (kind == HH_KIND_TRIGGER_OPERATOR && op == HH_WIRE_OP_OPERATOR_INFO) {
        const hh_trigger_operator_v1_t *api = slot->descriptor->kind_api;
        put_cstring(&answer, api->operator_name ? api->operator_name : slot->descriptor->id);
        put_i32(&answer, api->wire_code);
    } else if (kind == HH_KIND_TRIGGER_OPERATOR && op == HH_WIRE_OP_COMPARE) {
        served = serve_compare(slot, &reader);
    } else if (kind == HH_KIND_LOGGING && op == HH_WIRE_OP_LOG) {
        served = serve_log(slot, &reader);
    } else if (kind == HH_KIND_LOGGING && op == HH_WIRE_OP_FLUSH) {
        const hh_logging_v1_t *api = slot->descriptor->kind_api;
        if (api->flush) {
            api->flush(slot->instance);
        }
    } else if (kind == HH_KIND_ADVERTISER_ID && op == HH_WIRE_OP_ADVERTISER_ID) {
        serve_advertiser_id(slot);
    } else if (kind == HH_KIND_LOCATION && op == HH_WIRE_OP_LOCATION) {
        serve_location(slot);
    } else if (kind == HH_KIND_USER_ID_GENERATOR && op == HH_WIRE_OP_USER_ID) {
        serve_user_id(slot);
    } else if (kind == HH_KIND_EVENT_SINK && op == HH_WIRE_OP_DELIVER) {
        served = serve_deliver(slot, &reader);
    } else {
        served = false;
    }
    return served ? answer_result() : -1;
}
