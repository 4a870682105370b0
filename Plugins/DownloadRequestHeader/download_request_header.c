/*
 * download-request-header: a download_request plugin that adds configured headers to every file
 * request of the prefetch engine (e.g. an Authorization token for a CDN) and optionally moves
 * URLs from one prefix to another (e.g. from the catalog's origin to a mirror). It can be limited
 * to some file roles. Written in C; the reference for writing a download_request plugin.
 *
 * Everything it needs is parsed and checked at create, so convert only reads constant data and is
 * [thread-safe] without locks.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdlib.h>
#include <string.h>

#define DRH_MAX_HEADERS 100 /* the host accepts at most 100 headers per request */
#define DRH_MAX_ROLES   16

typedef struct download_request_header {
    const hh_host_t *host;
    size_t header_count;
    hh_http_header_t headers[DRH_MAX_HEADERS]; /* point into `text`, below */
    char *text;                                /* a copy of the `headers` config, cut into names and values */
    hh_string_t prefix_from;                   /* config memory: valid for the instance's life */
    hh_string_t prefix_to;
    size_t role_count;
    hh_string_t roles[DRH_MAX_ROLES]; /* point into `roles_text` */
    char *roles_text;
} download_request_header_t;

static bool is_token_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static bool starts_with(hh_string_t s, const char *prefix) {
    size_t n = strlen(prefix);
    return s.length >= n && memcmp(s.data, prefix, n) == 0;
}

static bool equal(hh_string_t a, hh_string_t b) {
    return a.length == b.length && (a.length == 0 || memcmp(a.data, b.data, a.length) == 0);
}

static char *copy_of(hh_string_t s) {
    char *copy = malloc(s.length + 1);
    if (copy) {
        if (s.length > 0) {
            memcpy(copy, s.data, s.length);
        }
        copy[s.length] = '\0';
    }
    return copy;
}

static void release(download_request_header_t *self) {
    if (self) {
        free(self->text);
        free(self->roles_text);
        free(self);
    }
}

static hh_string_t trimmed(char *start, char *end) {
    hh_string_t s;
    while (start < end && (*start == ' ' || *start == '\t')) {
        start++;
    }
    while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) {
        end--;
    }
    s.data = start;
    s.length = (size_t)(end - start);
    return s;
}

/* "Name: value" lines into self->headers; a failure is reported and returned. */
static hh_status_t parse_headers(const hh_host_t *host, download_request_header_t *self) {
    hh_string_t config = hh_config_string(host, "headers");
    char *line;
    int line_number = 0;
    if (memchr(config.data ? config.data : "", '\0', config.length)) {
        return hh_report(host, HH_ERR_CONFIG, "'headers' holds a NUL byte");
    }
    self->text = copy_of(config);
    if (!self->text) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    line = self->text;
    while (line && *line) {
        char *next = strchr(line, '\n');
        char *end = next ? next : line + strlen(line);
        char *colon;
        hh_string_t name, value;
        size_t i;
        line_number++;
        if (next) {
            next++;
        }
        name = trimmed(line, end);
        if (name.length == 0 || name.data[0] == '#') {
            line = next;
            continue;
        }
        colon = memchr(line, ':', (size_t)(end - line));
        if (!colon) {
            return hh_report(host, HH_ERR_CONFIG, "'headers' line %d: expected 'Name: value'", line_number);
        }
        name = trimmed(line, colon);
        value = trimmed(colon + 1, end);
        if (name.length == 0 || name.length > 256) {
            return hh_report(host, HH_ERR_CONFIG,
                             "'headers' line %d: a header name of 1 to 256 characters is needed",
                             line_number);
        }
        for (i = 0; i < name.length; i++) {
            if (!is_token_char(name.data[i])) {
                return hh_report(
                    host, HH_ERR_CONFIG,
                    "'headers' line %d: '%.*s' is not a header name (letters, digits and !#$%%&'*+-.^_`|~)",
                    line_number, (int)name.length, name.data);
            }
        }
        if (memchr(value.data, '\r', value.length) || value.length > 8192) {
            return hh_report(host, HH_ERR_CONFIG,
                             "'headers' line %d: the value holds a carriage return or is over 8192 bytes",
                             line_number);
        }
        if (self->header_count == DRH_MAX_HEADERS) {
            return hh_report(host, HH_ERR_CONFIG, "'headers' has more than %d headers", DRH_MAX_HEADERS);
        }
        self->headers[self->header_count].name = name;
        self->headers[self->header_count].value = value;
        self->header_count++;
        line = next;
    }
    return HH_OK;
}

/* "main, thumbnail" into self->roles; none: every role. */
static hh_status_t parse_roles(const hh_host_t *host, download_request_header_t *self) {
    hh_string_t config = hh_config_string(host, "roles");
    char *item;
    self->roles_text = copy_of(config);
    if (!self->roles_text) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    item = self->roles_text;
    while (item && *item) {
        char *comma = strchr(item, ',');
        char *end = comma ? comma : item + strlen(item);
        hh_string_t role = trimmed(item, end);
        if (role.length > 0) {
            if (self->role_count == DRH_MAX_ROLES) {
                return hh_report(host, HH_ERR_CONFIG, "'roles' lists more than %d roles", DRH_MAX_ROLES);
            }
            self->roles[self->role_count++] = role;
        }
        item = comma ? comma + 1 : NULL;
    }
    return HH_OK;
}

static hh_status_t header_create(const hh_host_t *host, void **out_instance) {
    download_request_header_t *self = calloc(1, sizeof *self);
    hh_status_t status;
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->host = host;
    self->prefix_from = hh_config_string(host, "url_prefix_from");
    self->prefix_to = hh_config_string(host, "url_prefix_to");
    if ((self->prefix_from.length == 0) != (self->prefix_to.length == 0)) {
        release(self);
        return hh_report(host, HH_ERR_CONFIG, "set both 'url_prefix_from' and 'url_prefix_to', or neither");
    }
    if (self->prefix_to.length > 0 && !starts_with(self->prefix_to, "http://") &&
        !starts_with(self->prefix_to, "https://")) {
        release(self);
        return hh_report(host, HH_ERR_CONFIG, "'url_prefix_to' must start with http:// or https://");
    }
    status = parse_headers(host, self);
    if (status == HH_OK) {
        status = parse_roles(host, self);
    }
    if (status != HH_OK) {
        release(self);
        return status;
    }
    *out_instance = self;
    return HH_OK;
}

static void header_destroy(void *instance) {
    release(instance);
}

static bool applies_to(const download_request_header_t *self, hh_string_t role) {
    size_t i;
    if (self->role_count == 0) {
        return true;
    }
    for (i = 0; i < self->role_count; i++) {
        if (equal(self->roles[i], role)) {
            return true;
        }
    }
    return false;
}

/* [thread-safe]: reads only what create built. */
static hh_status_t header_convert(void *instance, const hh_download_request_t *request,
                                  const hh_download_request_editor_t *editor) {
    const download_request_header_t *self = instance;
    size_t i;
    if (!self || !request || !editor) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    if (!applies_to(self, request->file_role)) {
        return HH_ERR_NOT_FOUND; /* not this role: the request goes on unchanged */
    }
    if (self->prefix_from.length > 0 && request->url.length >= self->prefix_from.length &&
        memcmp(request->url.data, self->prefix_from.data, self->prefix_from.length) == 0) {
        /* The new URL on the stack when small, else on the heap; the editor copies it at once. */
        size_t rest = request->url.length - self->prefix_from.length;
        size_t length = self->prefix_to.length + rest;
        char small[1024];
        char *url = length <= sizeof small ? small : malloc(length);
        hh_string_t converted;
        if (!url) {
            return hh_report(self->host, HH_ERR_INTERNAL, "out of memory for a %zu-byte URL", length);
        }
        memcpy(url, self->prefix_to.data, self->prefix_to.length);
        if (rest > 0) {
            memcpy(url + self->prefix_to.length, request->url.data + self->prefix_from.length, rest);
        }
        converted.data = url;
        converted.length = length;
        editor->set_url(editor->editor_data, converted);
        if (url != small) {
            free(url);
        }
    }
    for (i = 0; i < self->header_count; i++) {
        editor->set_header(editor->editor_data, self->headers[i].name, self->headers[i].value);
    }
    return HH_OK;
}

static const hh_download_request_v1_t header_api = {
    .convert = header_convert,
};

HH_SINGLE_PLUGIN_LIBRARY(
    "download-request-header", "Download request header",
    "Adds configured headers to the prefetch engine's file requests and optionally rewrites a URL prefix.",
    "1.0.0", HH_KIND_DOWNLOAD_REQUEST, &header_api, header_create, header_destroy);
