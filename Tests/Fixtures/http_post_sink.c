/*
 * A test-only event_sink (ABI 1.1) that delivers through the host HTTP service
 * ("hubhost.http.v1"), so one source shows the service both built as a .so and as a .wasm: each
 * batch is POSTed to the `url` config value as {"events":[...]} with the header
 * "X-Batch-Size: <count>". A 2xx answer delivers every event, a 4xx rejects every event with the
 * reason "HTTP <code>", anything else is a retry with that reason. A request that gets no answer
 * returns the service's status; the host's report (a refused host, a refused redirect) stays the
 * call's message unless the sink reports its own, which it does only for a timeout.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct http_post_sink {
    const hh_host_t *host;
    char url[1024];
    char reason[32];
} http_post_sink_t;

static hh_status_t sink_create(const hh_host_t *host, void **out_instance) {
    http_post_sink_t *sink = calloc(1, sizeof *sink);
    if (!sink) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    hh_value_t value;
    if (host->config_get(host, "url", &value) != HH_OK || value.type != HH_VALUE_STRING ||
        value.of.string.length >= sizeof sink->url) {
        free(sink);
        return hh_report(host, HH_ERR_INVALID_ARGUMENT, "config 'url' must be a string URL");
    }
    memcpy(sink->url, value.of.string.data, value.of.string.length);
    sink->host = host;
    *out_instance = sink;
    return HH_OK;
}

static void sink_destroy(void *instance) {
    free(instance);
}

static hh_status_t sink_deliver(void *instance, const hh_sink_event_t *events, size_t count,
                                hh_sink_answer_t *answers, uint32_t timeout_ms) {
    http_post_sink_t *sink = instance;
    const hh_host_t *host = sink->host;
    const hh_host_http_v1_t *http = host->get_extension(host, HH_HOST_EXT_HTTP);
    if (!http) {
        return hh_report(host, HH_ERR_UNAVAILABLE, "this host offers no HTTP service");
    }
    size_t size = 16;
    for (size_t i = 0; i < count; i++) {
        size += events[i].json.length + 1;
    }
    char *body = malloc(size);
    if (!body) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    size_t length = 0;
    memcpy(body, "{\"events\":[", 11);
    length = 11;
    for (size_t i = 0; i < count; i++) {
        if (i) {
            body[length++] = ',';
        }
        memcpy(body + length, events[i].json.data, events[i].json.length);
        length += events[i].json.length;
    }
    memcpy(body + length, "]}", 2);
    length += 2;
    char batch_size[16];
    snprintf(batch_size, sizeof batch_size, "%u", (unsigned)count);
    hh_http_header_t headers[2] = {
        {hh_string_from_cstr("Content-Type"), hh_string_from_cstr("application/json")},
        {hh_string_from_cstr("X-Batch-Size"), hh_string_from_cstr(batch_size)}};
    hh_http_request_t request = {
        hh_string_from_cstr("POST"), hh_string_from_cstr(sink->url), headers, 2, body, length, timeout_ms};
    hh_http_response_t response;
    memset(&response, 0, sizeof response);
    hh_status_t status = http->fetch(host, &request, &response);
    free(body);
    if (status == HH_ERR_TIMEOUT) {
        return hh_report(host, status, "no answer from %s within %u ms", sink->url, (unsigned)timeout_ms);
    }
    if (status != HH_OK) {
        return status;
    }
    int code = response.status_code;
    http->release(host, &response);
    snprintf(sink->reason, sizeof sink->reason, "HTTP %d", code);
    for (size_t i = 0; i < count; i++) {
        answers[i].outcome = code >= 200 && code < 300   ? HH_SINK_DELIVERED
                             : code >= 400 && code < 500 ? HH_SINK_REJECTED
                                                         : HH_SINK_RETRY;
        answers[i].reason = hh_string_from_cstr(sink->reason);
    }
    return HH_OK;
}

static const hh_event_sink_v1_t sink_api = {sink_deliver};

HH_SINGLE_PLUGIN_LIBRARY("http-post-sink", "HTTP POST sink", "POSTs batches through the host HTTP service.",
                         "1.0.0", HH_KIND_EVENT_SINK, &sink_api, sink_create, sink_destroy);
