/*
 * A test-only event_sink (ABI 1.1) whose behaviour is its `mode` config value:
 *
 *   deliver   every event HH_SINK_DELIVERED, except: an event whose JSON holds "reject-me" is
 *             HH_SINK_REJECTED ("refused: reject-me"), one holding "retry-me" HH_SINK_RETRY
 *   garbage   every outcome 12345 (no HH_SINK_* value)
 *   fail      the call returns HH_ERR_UNAVAILABLE after report_error("not connected") (nothing sent)
 *   broken    the call returns HH_ERR_IO after report_error("connection broken")
 *   crash     write through a NULL pointer
 *   hang      loop forever
 *   token     ask the host for the OAuth token ("hubhost.event_auth.v1") and answer every event
 *             HH_SINK_RETRY with the reason "token: <token>" (HH_ERR_UNAVAILABLE when there is none)
 *   trace     answer every event HH_SINK_RETRY with the reason "trace: <its traceparent>" from
 *             "hubhost.event_trace.v1" ("trace: none" for an event without one; HH_ERR_UNAVAILABLE
 *             when the host does not offer the extension)
 *
 * `record_file` (optional): every delivered event's idempotency key is appended to it, one a line,
 * so a test can compare what arrived with what was tracked.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct test_sink {
    const hh_host_t *host; /* this instance's: reports go to the instance that failed */
    char mode[32];
    char record_file[1024];
} test_sink_t;

static void copy_config(const hh_host_t *host, const char *key, char *out, size_t capacity) {
    hh_value_t value;
    out[0] = '\0';
    if (host->config_get(host, key, &value) == HH_OK && value.type == HH_VALUE_STRING &&
        value.of.string.length < capacity) {
        memcpy(out, value.of.string.data, value.of.string.length);
        out[value.of.string.length] = '\0';
    }
}

static hh_status_t sink_create(const hh_host_t *host, void **out_instance) {
    test_sink_t *sink = calloc(1, sizeof *sink);
    if (!sink) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    copy_config(host, "mode", sink->mode, sizeof sink->mode);
    copy_config(host, "record_file", sink->record_file, sizeof sink->record_file);
    if (sink->mode[0] == '\0') {
        strcpy(sink->mode, "deliver");
    }
    sink->host = host;
    *out_instance = sink;
    return HH_OK;
}

static void sink_destroy(void *instance) {
    free(instance);
}

static bool json_contains(const hh_sink_event_t *event, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= event->json.length; i++) {
        if (memcmp(event->json.data + i, needle, n) == 0) {
            return true;
        }
    }
    return false;
}

static hh_status_t sink_deliver(void *instance, const hh_sink_event_t *events, size_t count,
                                hh_sink_answer_t *answers, uint32_t timeout_ms) {
    test_sink_t *sink = instance;
    (void)timeout_ms;
    if (strcmp(sink->mode, "crash") == 0) {
        volatile int *nowhere = NULL;
        *nowhere = 42;
    }
    if (strcmp(sink->mode, "hang") == 0) {
        volatile unsigned long spin = 0;
        for (;;) {
            spin++;
        }
    }
    if (strcmp(sink->mode, "fail") == 0) {
        return hh_report(sink->host, HH_ERR_UNAVAILABLE, "not connected");
    }
    if (strcmp(sink->mode, "broken") == 0) {
        return hh_report(sink->host, HH_ERR_IO, "connection broken");
    }
    if (strcmp(sink->mode, "token") == 0) {
        static char reason[600];
        char token[512];
        const hh_host_event_auth_v1_t *auth = sink->host->get_extension(sink->host, HH_HOST_EXT_EVENT_AUTH);
        if (!auth) {
            return hh_report(sink->host, HH_ERR_UNAVAILABLE, "no event_auth extension");
        }
        hh_status_t status = auth->get_token(sink->host, false, token, sizeof token, NULL);
        if (status != HH_OK) {
            return status; /* the host recorded why */
        }
        snprintf(reason, sizeof reason, "token: %s", token);
        for (size_t i = 0; i < count; i++) {
            answers[i].reason = hh_string_from_cstr(reason);
        }
        return HH_OK;
    }
    if (strcmp(sink->mode, "trace") == 0) {
        static char reasons[HH_SINK_MAX_BATCH][80];
        const hh_host_event_trace_v1_t *trace =
            sink->host->get_extension(sink->host, HH_HOST_EXT_EVENT_TRACE);
        if (!trace) {
            return hh_report(sink->host, HH_ERR_UNAVAILABLE, "no event_trace extension");
        }
        for (size_t i = 0; i < count && i < HH_SINK_MAX_BATCH; i++) {
            hh_string_t traceparent = trace->traceparent(sink->host, i);
            snprintf(reasons[i], sizeof reasons[i], "trace: %.*s",
                     traceparent.data ? (int)traceparent.length : 4,
                     traceparent.data ? traceparent.data : "none");
            answers[i].reason = hh_string_from_cstr(reasons[i]);
        }
        return HH_OK;
    }
    FILE *record = sink->record_file[0] ? fopen(sink->record_file, "a") : NULL;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(sink->mode, "garbage") == 0) {
            answers[i].outcome = 12345;
        } else if (json_contains(&events[i], "reject-me")) {
            answers[i].outcome = HH_SINK_REJECTED;
            answers[i].reason = hh_string_from_cstr("refused: reject-me");
        } else if (json_contains(&events[i], "retry-me")) {
            answers[i].outcome = HH_SINK_RETRY;
            answers[i].reason = hh_string_from_cstr("asked to retry: retry-me");
        } else {
            answers[i].outcome = HH_SINK_DELIVERED;
            if (record) {
                fprintf(record, "%.*s\n", (int)events[i].idempotency_key.length,
                        events[i].idempotency_key.data);
            }
        }
    }
    if (record) {
        fclose(record);
    }
    return HH_OK;
}

static const hh_event_sink_v1_t sink_api = {sink_deliver};

HH_SINGLE_PLUGIN_LIBRARY("test-sink", "Test sink", "Answers as its mode says.", "1.0.0", HH_KIND_EVENT_SINK,
                         &sink_api, sink_create, sink_destroy);
