/*
 * http-content-provider: the bundled content_provider, in C. It fetches the Content Hub's resources
 * from a content service (the ZBiM SDK's dbServiceUrl):
 *
 *     settings  -> GET <db_service_url>/settings   (delivery settings document, JSON)
 *     metadata  -> GET <db_service_url>/metadata   (version, size, sha256, signature)
 *     bundle    -> GET <db_service_url>/bundle     (the SQLite bundle, in Range chunks)
 *
 * and the prefetch engine's catalog service (README, "Content prefetch"):
 *
 *     prefetch/register -> GET <db_service_url>/prefetch/register?license=...&device_id=...
 *     prefetch/catalog  -> GET <db_service_url>/prefetch/catalog?device_id=...&since=...
 *     prefetch/items    -> GET <db_service_url>/prefetch/items?source=...&content_id=...
 *
 * A resource name may carry a query string ("settings?location_id=pike-1"): it is appended to the
 * request URL. The bundle is fetched in chunks of `chunk_size` bytes with `Range: bytes=a-b`
 * requests, reporting progress after each chunk; a server that ignores Range and answers 200 with
 * the whole body is handled too. It only transports: the host verifies what it fetched.
 *
 * It reaches the network only through the host's HTTP service (hubhost.http.v1), so the host
 * enforces the instance's allow-list (`http_allow:`) and timeouts (`http_timeout:`).
 */
#define _POSIX_C_SOURCE 200809L
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define URL_MAX 2048

typedef struct http_provider {
    const hh_host_t *host;
    const hh_host_http_v1_t *http;
    char base[URL_MAX]; /* db_service_url without a trailing slash */
    uint64_t chunk_size;
    uint32_t timeout_ms;
} http_provider_t;

static hh_status_t http_provider_create(const hh_host_t *host, void **out_instance) {
    const hh_host_http_v1_t *http = host->get_extension(host, HH_HOST_EXT_HTTP);
    if (!http) {
        return hh_report(host, HH_ERR_UNSUPPORTED, "this host offers no HTTP service (%s)", HH_HOST_EXT_HTTP);
    }
    hh_value_t value;
    char base[URL_MAX] = "";
    if (host->config_get(host, "db_service_url", &value) == HH_OK && value.type == HH_VALUE_STRING) {
        if (value.of.string.length >= sizeof base) {
            return hh_report(host, HH_ERR_CONFIG, "'db_service_url' is too long (%zu bytes, at most %zu)",
                             value.of.string.length, sizeof base - 1);
        }
        memcpy(base, value.of.string.data, value.of.string.length);
        base[value.of.string.length] = '\0';
    }
    if (base[0] == '\0') {
        return hh_report(host, HH_ERR_CONFIG,
                         "'db_service_url' is empty: set it in the instance config or set hub.db_service_url "
                         "in plugins.yaml");
    }
    if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0) {
        return hh_report(host, HH_ERR_CONFIG, "'db_service_url' must be an http:// or https:// URL, not '%s'",
                         base);
    }
    size_t length = strlen(base);
    while (length > 0 && base[length - 1] == '/')
        base[--length] = '\0';

    int64_t chunk = 256 * 1024;
    if (host->config_get(host, "chunk_size", &value) == HH_OK) {
        if (value.type != HH_VALUE_INT64 || value.of.int64 < 1 || value.of.int64 > (int64_t)1 << 30) {
            return hh_report(host, HH_ERR_CONFIG,
                             "'chunk_size' must be a whole number of bytes from 1 to 1073741824");
        }
        chunk = value.of.int64;
    }
    double timeout = 30;
    if (host->config_get(host, "request_timeout", &value) == HH_OK) {
        if (value.type == HH_VALUE_DOUBLE)
            timeout = value.of.real;
        else if (value.type == HH_VALUE_INT64)
            timeout = (double)value.of.int64;
        else
            timeout = -1;
        if (timeout <= 0) {
            return hh_report(host, HH_ERR_CONFIG, "'request_timeout' must be a positive duration");
        }
    }
    http_provider_t *self = calloc(1, sizeof *self);
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->host = host;
    self->http = http;
    memcpy(self->base, base, length + 1);
    self->chunk_size = (uint64_t)chunk;
    self->timeout_ms = (uint32_t)(timeout * 1000);
    *out_instance = self;
    return HH_OK;
}

static void http_provider_destroy(void *instance) {
    free(instance);
}

/* The value of header `name` (case-insensitive) copied into out; false when absent. */
static bool header_value(const hh_http_response_t *response, const char *name, char *out, size_t size) {
    size_t name_length = strlen(name);
    for (size_t i = 0; i < response->header_count; i++) {
        const hh_http_header_t *header = &response->headers[i];
        if (header->name.length == name_length && strncasecmp(header->name.data, name, name_length) == 0) {
            size_t n = header->value.length < size - 1 ? header->value.length : size - 1;
            memcpy(out, header->value.data, n);
            out[n] = '\0';
            return true;
        }
    }
    return false;
}

/* Parses "bytes START-END/TOTAL" (TOTAL may be "*": then *total is 0). */
static bool parse_content_range(const char *text, uint64_t *start, uint64_t *end, uint64_t *total) {
    while (*text == ' ')
        text++;
    if (strncasecmp(text, "bytes", 5) != 0)
        return false;
    text += 5;
    while (*text == ' ')
        text++;
    char *after = NULL;
    unsigned long long a = strtoull(text, &after, 10);
    if (after == text || *after != '-')
        return false;
    text = after + 1;
    unsigned long long b = strtoull(text, &after, 10);
    if (after == text || *after != '/' || b < a)
        return false;
    text = after + 1;
    *start = a;
    *end = b;
    if (*text == '*') {
        *total = 0;
        return true;
    }
    unsigned long long t = strtoull(text, &after, 10);
    if (after == text || t <= b)
        return false;
    *total = t;
    return true;
}

/* One request; on HH_OK *response is filled and must be released (after a failure there is nothing
 * to release). Transport failures are reported. */
static hh_status_t request(http_provider_t *self, const char *url, const char *range,
                           hh_http_response_t *response) {
    hh_http_header_t header;
    hh_http_request_t req;
    memset(&req, 0, sizeof req);
    req.method = hh_string_from_cstr("GET");
    req.url = hh_string_from_cstr(url);
    req.timeout_ms = self->timeout_ms;
    if (range) {
        header.name = hh_string_from_cstr("Range");
        header.value = hh_string_from_cstr(range);
        req.headers = &header;
        req.header_count = 1;
    }
    memset(response, 0, sizeof *response);
    hh_status_t status = self->http->fetch(self->host, &req, response);
    if (status == HH_OK)
        return HH_OK;
    if (status == HH_ERR_UNSUPPORTED) {
        return hh_report(self->host, HH_ERR_IO,
                         "%s: the content service's host is not in this instance's http_allow", url);
    }
    if (status == HH_ERR_TIMEOUT) {
        return hh_report(self->host, HH_ERR_TIMEOUT, "%s: the content service did not answer in time", url);
    }
    /* The host follows this with why (no connection, an answer cut short, too large...). */
    return hh_report(self->host, HH_ERR_IO, "%s: the request to the content service failed", url);
}

/* Maps a non-2xx answer to a status, reporting the URL and the HTTP status. */
static hh_status_t refuse(http_provider_t *self, const char *url, int32_t code) {
    return hh_report(self->host, code == 404 ? HH_ERR_NOT_FOUND : HH_ERR_IO, "%s answered HTTP %d", url,
                     (int)code);
}

/* The bundle's size from the metadata document (0 when unknown). */
static uint64_t metadata_size(http_provider_t *self, const char *query) {
    char url[URL_MAX + 16];
    snprintf(url, sizeof url, "%s/metadata%s%s", self->base, query ? "?" : "", query ? query : "");
    hh_http_response_t response;
    if (request(self, url, NULL, &response) != HH_OK)
        return 0;
    uint64_t size = 0;
    if (response.status_code >= 200 && response.status_code < 300) {
        char *text = malloc(response.body_length + 1);
        if (text) {
            memcpy(text, response.body, response.body_length);
            text[response.body_length] = '\0';
            double value = 0;
            if (hh_json_number(text, "size", &value) && value > 0)
                size = (uint64_t)value;
            free(text);
        }
    }
    self->http->release(self->host, &response);
    return size;
}

/* A small document in one GET. */
static hh_status_t fetch_whole(http_provider_t *self, const char *url, const hh_content_sink_t *sink) {
    hh_http_response_t response;
    hh_status_t status = request(self, url, NULL, &response);
    if (status != HH_OK)
        return status;
    if (response.status_code < 200 || response.status_code > 299) {
        status = refuse(self, url, response.status_code);
    } else {
        status = sink->write(sink, response.body, response.body_length);
        if (status != HH_OK) {
            status = hh_report(self->host, status, "%s: the host refused the answer of %zu bytes", url,
                               response.body_length);
        } else if (sink->progress) {
            sink->progress(sink, response.body_length, response.body_length);
        }
    }
    self->http->release(self->host, &response);
    return status;
}

/* The bundle in Range chunks, with progress after each. */
static hh_status_t fetch_chunked(http_provider_t *self, const char *url, const char *query,
                                 const hh_content_sink_t *sink) {
    uint64_t done = 0, total = 0;
    bool asked_metadata = false;
    /* Bounded: each round either finishes or moves `done` forward by at least one byte, and
     * `total` (once known) caps it; an unknown total is bounded by this round count. */
    for (uint64_t round = 0; round < ((uint64_t)1 << 32); round++) {
        if (sink->is_cancelled && sink->is_cancelled(sink)) {
            return hh_report(self->host, HH_ERR_UNAVAILABLE, "the host cancelled the download");
        }
        char range[64];
        snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)done,
                 (unsigned long long)(done + self->chunk_size - 1));
        hh_http_response_t response;
        hh_status_t status = request(self, url, range, &response);
        if (status != HH_OK)
            return status;
        int32_t code = response.status_code;
        if (code == 416 && done > 0 && total == 0) {
            /* Asked past the end of a body of unknown size: that was all of it. */
            self->http->release(self->host, &response);
            if (sink->progress)
                sink->progress(sink, done, done);
            return HH_OK;
        }
        if (code == 200) {
            /* The server ignored Range: the body is the whole resource. */
            if (done > 0) {
                self->http->release(self->host, &response);
                return hh_report(self->host, HH_ERR_IO, "%s answered 200 to a Range request after %llu bytes",
                                 url, (unsigned long long)done);
            }
            status = sink->write(sink, response.body, response.body_length);
            if (status == HH_OK && sink->progress)
                sink->progress(sink, response.body_length, response.body_length);
            self->http->release(self->host, &response);
            return status;
        }
        if (code != 206) {
            status = refuse(self, url, code);
            self->http->release(self->host, &response);
            return status;
        }
        char text[128];
        uint64_t start = 0, end = 0, whole = 0;
        if (!header_value(&response, "Content-Range", text, sizeof text) ||
            !parse_content_range(text, &start, &end, &whole) || start != done ||
            end - start + 1 != response.body_length || response.body_length == 0) {
            self->http->release(self->host, &response);
            return hh_report(self->host, HH_ERR_IO,
                             "%s answered 206 without a Content-Range matching bytes %llu- and its body", url,
                             (unsigned long long)done);
        }
        if (whole > 0)
            total = whole;
        if (total == 0 && !asked_metadata) {
            asked_metadata = true;
            total = metadata_size(self, query);
        }
        status = sink->write(sink, response.body, response.body_length);
        self->http->release(self->host, &response);
        if (status != HH_OK)
            return status;
        done += end - start + 1;
        if (sink->progress)
            sink->progress(sink, done, total);
        if (total > 0 && done >= total)
            return HH_OK;
        if (total == 0 && end - start + 1 < self->chunk_size)
            return HH_OK; /* a short chunk: the end */
    }
    return hh_report(self->host, HH_ERR_IO, "the download did not end");
}

static hh_status_t http_provider_fetch(void *instance, const char *resource, const hh_content_sink_t *sink) {
    http_provider_t *self = instance;
    if (!resource || !sink || !sink->write)
        return HH_ERR_INVALID_ARGUMENT;
    const char *mark = strchr(resource, '?');
    size_t name_length = mark ? (size_t)(mark - resource) : strlen(resource);
    const char *query = mark && mark[1] ? mark + 1 : NULL;
    static const char *const names[] = {HH_CONTENT_RESOURCE_SETTINGS, HH_CONTENT_RESOURCE_METADATA,
                                        HH_CONTENT_RESOURCE_BUNDLE,   "prefetch/register",
                                        "prefetch/catalog",           "prefetch/items"};
    const char *name = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i]) == name_length && strncmp(resource, names[i], name_length) == 0)
            name = names[i];
    }
    if (!name) {
        return hh_report(self->host, HH_ERR_NOT_FOUND,
                         "unknown resource '%.*s': expected settings, metadata, bundle, prefetch/register, "
                         "prefetch/catalog or prefetch/items",
                         (int)(name_length > 64 ? 64 : name_length), resource);
    }
    if (query && strlen(query) > URL_MAX / 2) {
        return hh_report(self->host, HH_ERR_INVALID_ARGUMENT, "the resource's query string is too long");
    }
    if (sink->is_cancelled && sink->is_cancelled(sink)) {
        return hh_report(self->host, HH_ERR_UNAVAILABLE, "the host cancelled the download");
    }
    char url[URL_MAX * 2];
    snprintf(url, sizeof url, "%s/%s%s%s", self->base, name, query ? "?" : "", query ? query : "");
    if (name == names[2])
        return fetch_chunked(self, url, query, sink);
    return fetch_whole(self, url, sink);
}

static const hh_content_provider_v1_t http_provider_api = {
    .fetch = http_provider_fetch,
};

HH_SINGLE_PLUGIN_LIBRARY("http-content-provider", "HTTP content provider",
                         "Fetches the Content Hub's settings, metadata and bundle from a content service "
                         "over HTTP(S), in Range chunks.",
                         "1.0.0", HH_KIND_CONTENT_PROVIDER, &http_provider_api, http_provider_create,
                         http_provider_destroy);
