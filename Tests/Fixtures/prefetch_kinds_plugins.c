/*
 * A test-only library with one plugin of each ABI 1.1 prefetch kind, whose behaviour is chosen by
 * the instance's `mode` config, so the tests can make a plugin answer out-of-range values, break
 * the download_request limits, fail, or crash:
 *
 *   fixture-conditions (device_conditions), modes:
 *     good            wifi, metered false, battery 0.5, charging yes, 1000 free bytes
 *     network-7       network code 7
 *     battery-1.5     battery level 1.5
 *     battery-nan     battery level NaN
 *     charging-9      charging code 9
 *     unavailable     HH_ERR_UNAVAILABLE with a message
 *     crash           SIGSEGV
 *   fixture-request (download_request), modes:
 *     good            URL -> https://signed.example.com/<item>/<role>?sig=1, header X-Fixture: <role>, removes Cookie
 *     not-found       edits, then HH_ERR_NOT_FOUND (edits discarded)
 *     crlf-header     a header value with "\r\nX-Injected: 1"
 *     bad-name        a header name with a space
 *     ftp-url         URL ftp://example.com/file
 *     relative-url    URL /just/a/path
 *     bad-utf8        a header value that is not UTF-8
 *     huge-value      a 100000-byte header value
 *     edit-flood      2000 set_header calls
 *     fail            HH_ERR_IO with a message
 *     crash           SIGSEGV
 *
 *   -DFIXTURE_ABI_MINOR=0   claim ABI 1.0 (the loader must refuse these 1.1 kinds)
 */
#include <hubhost/hubhost.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURE_ABI_MINOR
#define FIXTURE_ABI_MINOR HH_ABI_VERSION_MINOR
#endif

typedef struct fixture {
    const hh_host_t *host;
    char mode[64];
} fixture_t;

static hh_status_t fixture_create(const hh_host_t *host, void **out_instance) {
    hh_value_t value;
    fixture_t *self = calloc(1, sizeof *self);
    if (!self) {
        return HH_ERR_INTERNAL;
    }
    self->host = host;
    strcpy(self->mode, "good");
    if (host->config_get(host, "mode", &value) == HH_OK && value.type == HH_VALUE_STRING &&
        value.of.string.length < sizeof self->mode) {
        memcpy(self->mode, value.of.string.data, value.of.string.length);
        self->mode[value.of.string.length] = '\0';
    }
    *out_instance = self;
    return HH_OK;
}

static void fixture_destroy(void *instance) {
    free(instance);
}

static bool is(const fixture_t *self, const char *mode) {
    return strcmp(self->mode, mode) == 0;
}

static hh_status_t fail(const fixture_t *self, hh_status_t status, const char *message) {
    self->host->report_error(self->host, status, hh_string_from_cstr(message));
    return status;
}

static hh_status_t conditions_read(void *instance, const char *data_directory, hh_device_conditions_t *out) {
    const fixture_t *self = instance;
    (void)data_directory;
    if (is(self, "crash")) {
        raise(SIGSEGV);
    }
    if (is(self, "unavailable")) {
        return fail(self, HH_ERR_UNAVAILABLE, "the fixture cannot tell now");
    }
    out->network = is(self, "network-7") ? 7 : HH_NETWORK_WIFI;
    out->has_battery = true;
    out->battery_level = is(self, "battery-1.5") ? 1.5 : is(self, "battery-nan") ? NAN : 0.5;
    out->charging = is(self, "charging-9") ? 9 : HH_CHARGING_YES;
    out->has_free_bytes = true;
    out->free_bytes = 1000;
    return HH_OK;
}

static void set(const hh_download_request_editor_t *editor, const char *name, const char *value) {
    editor->set_header(editor->editor_data, hh_string_from_cstr(name), hh_string_from_cstr(value));
}

static hh_status_t request_convert(void *instance, const hh_download_request_t *request,
                                   const hh_download_request_editor_t *editor) {
    const fixture_t *self = instance;
    char url[512];
    char role[64];
    int i;
    if (is(self, "crash")) {
        raise(SIGSEGV);
    }
    if (is(self, "fail")) {
        return fail(self, HH_ERR_IO, "the signing service did not answer");
    }
    snprintf(role, sizeof role, "%.*s", (int)request->file_role.length,
             request->file_role.data ? request->file_role.data : "");
    {
        /* The item id percent-encoded: it may hold any UTF-8, a URL may not. */
        char item[256];
        size_t i, n = 0;
        for (i = 0; i < request->item_id.length && n + 4 < sizeof item; i++) {
            unsigned char c = (unsigned char)request->item_id.data[i];
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                c == '_' || c == '.') {
                item[n++] = (char)c;
            } else {
                n += (size_t)snprintf(item + n, sizeof item - n, "%%%02X", c);
            }
        }
        item[n] = '\0';
        snprintf(url, sizeof url, "https://signed.example.com/%s/%s?sig=1", item, role);
    }
    if (is(self, "ftp-url")) {
        strcpy(url, "ftp://example.com/file");
    } else if (is(self, "relative-url")) {
        strcpy(url, "/just/a/path");
    }
    editor->set_url(editor->editor_data, hh_string_from_cstr(url));
    set(editor, "X-Fixture", role);
    editor->remove_header(editor->editor_data, hh_string_from_cstr("cookie"));
    if (is(self, "crlf-header")) {
        set(editor, "X-Evil", "a\r\nX-Injected: 1");
    } else if (is(self, "bad-name")) {
        set(editor, "Bad Name", "x");
    } else if (is(self, "bad-utf8")) {
        static const char bytes[] = {'o', 'k', (char)0xFF, (char)0xFE};
        hh_string_t value;
        value.data = bytes;
        value.length = sizeof bytes;
        editor->set_header(editor->editor_data, hh_string_from_cstr("X-Bytes"), value);
    } else if (is(self, "huge-value")) {
        char *big = malloc(100001);
        if (!big) {
            return HH_ERR_INTERNAL;
        }
        memset(big, 'v', 100000);
        big[100000] = '\0';
        set(editor, "X-Big", big);
        free(big);
    } else if (is(self, "edit-flood")) {
        for (i = 0; i < 2000; i++) {
            set(editor, "X-Flood", "again");
        }
    } else if (is(self, "not-found")) {
        return HH_ERR_NOT_FOUND;
    }
    return HH_OK;
}

static const hh_device_conditions_v1_t conditions_api = {conditions_read};
static const hh_download_request_v1_t request_api = {request_convert};

static const hh_plugin_descriptor_t fixture_plugins[] = {
    {"fixture-conditions", "Fixture conditions", "test-only", "1.0.0", HH_KIND_DEVICE_CONDITIONS,
     &conditions_api, fixture_create, fixture_destroy, NULL},
    {"fixture-request", "Fixture request", "test-only", "1.0.0", HH_KIND_DOWNLOAD_REQUEST, &request_api,
     fixture_create, fixture_destroy, NULL},
};

static const hh_plugin_descriptor_t *fixture_get_plugin(uint32_t index) {
    return index < 2 ? &fixture_plugins[index] : NULL;
}

static const hh_library_t fixture_library = {
    {HH_ABI_VERSION_MAJOR, FIXTURE_ABI_MINOR, 0}, NULL, NULL, 2, fixture_get_plugin,
};

HH_EXPORT const hh_library_t *hubhost_library_entry(void) {
    return &fixture_library;
}
