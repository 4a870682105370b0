/*
 * kafka-sink: an event_sink (ABI 1.1) that produces every event to one Kafka topic with librdkafka.
 *
 * - The producer is idempotent (enable.idempotence=true, hence acks=all and in-order retries inside
 *   librdkafka): a broker failover does not reorder or duplicate what librdkafka itself retries.
 * - The message key is the event's mobile user id, else its anonymous id (else no key): the default
 *   partitioner hashes the key, so one user's events land in one partition, in tracked order.
 * - Headers: "idempotency-key" (the host's event id: a reader drops a repeat by it) and
 *   "event-type-code" (decimal), and "traceparent" (W3C) for an event that has one, read through
 *   the host extension "hubhost.event_trace.v1" (ABI 1.2; none on an older host or under
 *   isolation: process). The value is the collector JSON of the event, as the host gave it.
 * - The answer of each event is its delivery report: no error is HH_SINK_DELIVERED; a message too
 *   large or otherwise refused for good is HH_SINK_REJECTED; everything else, including a full
 *   producer queue and a report that did not come before the host's deadline, is HH_SINK_RETRY.
 *   An event is never dropped by the sink.
 * - When librdkafka has said that every broker is down, deliver first asks the cluster for the
 *   topic's metadata (at most 1 s): with no broker answering it produces nothing and answers
 *   HH_ERR_UNAVAILABLE, a wait and not an attempt (the events keep their retry count), so an outage
 *   longer than the retries costs no event; the first answer clears it. A call that produced
 *   before the outage was known is an attempt as before (its events answer "retry").
 *
 * Threads: deliver is [host-serialized]; librdkafka's delivery reports are served by rd_kafka_poll
 * on the calling thread, inside deliver, so the answers are written by that thread only. A report
 * that arrives after deliver returned (for a message answered "retry" at the deadline) belongs to
 * an older call: its generation number no longer matches and it is ignored.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <librdkafka/rdkafka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KAFKA_SINK_REASON_MAX 256

typedef struct kafka_slot {
    hh_sink_outcome_t outcome;
    bool reported;
    /* `reason` holds this event's own error; else the call's reason for an unreported event applies
     * (formatted once per call, not once per event: most events never need one). */
    bool failed;
    char reason[KAFKA_SINK_REASON_MAX];
} kafka_slot_t;

typedef struct kafka_sink {
    const hh_host_t *host;
    /* "hubhost.event_trace.v1": each event's traceparent, sent as the message's `traceparent`
     * header; NULL on a host that does not offer it (older, or isolation: process). */
    const hh_host_event_trace_v1_t *trace;
    rd_kafka_t *producer;
    /* The topic's handle, held from the start: holding it makes librdkafka fetch the topic's
     * metadata in the background at once. Without it the first produce found no metadata and
     * waited for the next refresh: the first deliver call took 0.7-1 s after an idle start. */
    rd_kafka_topic_t *topic_handle;
    /* A copy of the producer's settings, to start a new producer after a fatal error (an
     * idempotent producer that lost its guarantees stops producing until it is replaced). */
    rd_kafka_conf_t *conf;
    char topic[512];
    /* The call in progress: reports of another generation are ignored. */
    uint32_t generation;
    /* Set by librdkafka's "all brokers are down" error (served by rd_kafka_poll inside deliver),
     * with its text; cleared when the cluster answers a metadata request. */
    bool brokers_down;
    char brokers_down_reason[KAFKA_SINK_REASON_MAX];
    size_t pending;
    /* Why an event without a report at the deadline is a retry (set by each call). */
    char unreported_reason[KAFKA_SINK_REASON_MAX];
    /* The event-type-code header of the last type code produced, reused while it repeats. */
    bool type_cached;
    int32_t type_code;
    char type_text[16];
    size_t type_length;
    kafka_slot_t slots[HH_SINK_MAX_BATCH];
} kafka_sink_t;

/* The message opaque: the generation in the high 32 bits, the slot index in the low 16. */
static void *slot_opaque(uint32_t generation, size_t index) {
    return (void *)(uintptr_t)(((uint64_t)generation << 32) | (uint64_t)index);
}

static bool is_permanent(rd_kafka_resp_err_t err) {
    switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        return true;
    default:
        return false;
    }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *message, void *instance) {
    kafka_sink_t *sink = instance;
    uint64_t opaque = (uint64_t)(uintptr_t)message->_private;
    uint32_t generation = (uint32_t)(opaque >> 32);
    size_t index = (size_t)(opaque & 0xFFFF);
    (void)rk;
    if (generation != sink->generation || index >= HH_SINK_MAX_BATCH || sink->slots[index].reported) {
        return; /* a late report of an earlier call: that event was answered "retry" already */
    }
    kafka_slot_t *slot = &sink->slots[index];
    slot->reported = true;
    sink->pending--;
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        slot->outcome = HH_SINK_DELIVERED;
        return;
    }
    slot->outcome = is_permanent(message->err) ? HH_SINK_REJECTED : HH_SINK_RETRY;
    slot->failed = true;
    snprintf(slot->reason, sizeof slot->reason, "kafka: %s", rd_kafka_err2str(message->err));
}

/* librdkafka's error events: "all brokers are down" is kept for deliver; every one is logged. */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *instance) {
    kafka_sink_t *sink = instance;
    char line[1024];
    (void)rk;
    if (!sink) {
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        sink->brokers_down = true;
        snprintf(sink->brokers_down_reason, sizeof sink->brokers_down_reason, "%s", reason ? reason : "");
    }
    snprintf(line, sizeof line, "librdkafka error: %s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err),
             reason ? reason : "");
    sink->host->log(sink->host, HH_SEVERITY_WARNING, HH_VERBOSITY_DEBUG, hh_string_from_cstr(line));
}

/* librdkafka's log lines go to the host's log (filtered there), not to stderr. Called from
 * librdkafka's threads: the host's log is [thread-safe]. */
static void on_log(const rd_kafka_t *rk, int level, const char *facility, const char *text) {
    const kafka_sink_t *sink = rd_kafka_opaque(rk);
    char line[1024];
    hh_severity_t severity = level <= 3   ? HH_SEVERITY_ERROR
                             : level == 4 ? HH_SEVERITY_WARNING
                                          : HH_SEVERITY_INFO;
    if (!sink || !sink->host) {
        return;
    }
    snprintf(line, sizeof line, "librdkafka %s: %s", facility, text);
    sink->host->log(sink->host, severity, level >= 7 ? HH_VERBOSITY_INFO : HH_VERBOSITY_DEBUG,
                    hh_string_from_cstr(line));
}

/* Sets one producer setting; on failure reports it and returns false. */
static bool set(const hh_host_t *host, rd_kafka_conf_t *conf, const char *name, const char *value) {
    char error[512];
    if (rd_kafka_conf_set(conf, name, value, error, sizeof error) != RD_KAFKA_CONF_OK) {
        hh_report(host, HH_ERR_CONFIG, "kafka setting %s=%s: %s", name, value, error);
        return false;
    }
    return true;
}

/* Applies "name=value" pairs separated by ';' or new lines. */
static bool apply_client_settings(const hh_host_t *host, rd_kafka_conf_t *conf, char *settings) {
    char *cursor = settings;
    while (*cursor) {
        char *end = cursor + strcspn(cursor, ";\n");
        char saved = *end;
        *end = '\0';
        char *pair = cursor;
        while (*pair == ' ' || *pair == '\t') {
            pair++;
        }
        if (*pair) {
            char *equals = strchr(pair, '=');
            if (!equals) {
                hh_report(host, HH_ERR_CONFIG, "client_settings: '%s' is not name=value", pair);
                return false;
            }
            *equals = '\0';
            char *name_end = equals;
            while (name_end > pair && (name_end[-1] == ' ' || name_end[-1] == '\t')) {
                *--name_end = '\0';
            }
            if (strcmp(pair, "enable.idempotence") == 0 || strcmp(pair, "acks") == 0 ||
                strcmp(pair, "request.required.acks") == 0) {
                hh_report(host, HH_ERR_CONFIG,
                          "client_settings: %s cannot be changed (the sink relies on an idempotent producer "
                          "with acks=all)",
                          pair);
                return false;
            }
            if (!set(host, conf, pair, equals + 1)) {
                return false;
            }
        }
        if (!saved) {
            break;
        }
        cursor = end + 1;
    }
    return true;
}

static hh_status_t kafka_create(const hh_host_t *host, void **out_instance) {
    char servers[2048];
    char compression[32] = "lz4";
    char settings[8192] = "";
    char timeout_text[32];
    char error[512];
    hh_value_t timeout;
    kafka_sink_t *sink;
    rd_kafka_conf_t *conf;

    if (!hh_config_string_copy(host, "bootstrap_servers", servers, sizeof servers) || servers[0] == '\0') {
        return hh_report(host, HH_ERR_CONFIG, "bootstrap_servers (host:port[,host:port...]) is required");
    }
    sink = calloc(1, sizeof *sink);
    if (!sink) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    sink->host = host;
    sink->trace = host->get_extension(host, HH_HOST_EXT_EVENT_TRACE);
    if (!hh_config_string_copy(host, "topic", sink->topic, sizeof sink->topic) || sink->topic[0] == '\0') {
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "topic is required");
    }
    if (host->config_get(host, "compression", &timeout) == HH_OK &&
        !hh_config_string_copy(host, "compression", compression, sizeof compression)) {
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "compression must be one of none, gzip, snappy, lz4, zstd");
    }
    if (host->config_get(host, "client_settings", &timeout) == HH_OK &&
        !hh_config_string_copy(host, "client_settings", settings, sizeof settings)) {
        free(sink);
        return hh_report(host, HH_ERR_CONFIG,
                         "client_settings must be a string of name=value pairs under 8 KiB");
    }
    snprintf(timeout_text, sizeof timeout_text, "30000");
    if (host->config_get(host, "message_timeout", &timeout) == HH_OK) {
        /* A number from outside: only a positive duration under a day is taken. */
        if (timeout.type != HH_VALUE_DOUBLE || !(timeout.of.real > 0 && timeout.of.real <= 86400)) {
            free(sink);
            return hh_report(host, HH_ERR_CONFIG,
                             "message_timeout must be a duration between 1 ms and 1 day");
        }
        snprintf(timeout_text, sizeof timeout_text, "%ld",
                 (long)(timeout.of.real * 1000 < 1 ? 1 : timeout.of.real * 1000));
    }

    conf = rd_kafka_conf_new();
    if (!set(host, conf, "bootstrap.servers", servers) || !set(host, conf, "enable.idempotence", "true") ||
        !set(host, conf, "acks", "all") || !set(host, conf, "compression.type", compression) ||
        !set(host, conf, "message.timeout.ms", timeout_text) ||
        !set(host, conf, "client.id", host->instance_id) ||
        /* Each deliver call waits for its batch's reports (the ABI answers per call), so nothing is
         * gained by several requests in flight per broker, and it cost: with 5 in flight (the
         * default) a call of 1,000 events took 42-50 ms against the mock cluster, with 1 2-3.5 ms (a
         * responses-held-back stall on connections with more than one request in flight). The
         * linger lets a batch gather while deliver produces it; deliver then sends it at once
         * (rd_kafka_flush), so a batch goes out in one request per broker instead of a first one
         * with the first few messages and the rest after its response. client_settings may
         * override both. */
        !set(host, conf, "linger.ms", "5") ||
        !set(host, conf, "max.in.flight.requests.per.connection", "1") ||
        !apply_client_settings(host, conf, settings)) {
        rd_kafka_conf_destroy(conf);
        free(sink);
        return HH_ERR_CONFIG; /* set() reported why */
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, sink);
    sink->conf = rd_kafka_conf_dup(conf);
    sink->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
    if (!sink->producer) {
        rd_kafka_conf_destroy(conf);
        rd_kafka_conf_destroy(sink->conf);
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "cannot create the Kafka producer: %s", error);
    }
    /* Every message is produced to this handle: librdkafka then looks the topic up once, not per message. */
    sink->topic_handle = rd_kafka_topic_new(sink->producer, sink->topic, NULL);
    if (!sink->topic_handle) {
        rd_kafka_resp_err_t err = rd_kafka_last_error();
        rd_kafka_destroy(sink->producer);
        rd_kafka_conf_destroy(sink->conf);
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "cannot open the Kafka topic: %s", rd_kafka_err2str(err));
    }
    *out_instance = sink;
    return HH_OK;
}

static void kafka_destroy(void *instance) {
    kafka_sink_t *sink = instance;
    if (!sink) {
        return;
    }
    /* What is still queued was answered "retry" (or never handed over): drop it here, the host
     * still holds those events and sends them again. Then wait briefly for what is in flight. */
    sink->generation++;
    rd_kafka_purge(sink->producer, RD_KAFKA_PURGE_F_QUEUE);
    rd_kafka_flush(sink->producer, 2000);
    if (sink->topic_handle) {
        rd_kafka_topic_destroy(sink->topic_handle);
    }
    rd_kafka_destroy(sink->producer);
    rd_kafka_conf_destroy(sink->conf);
    free(sink);
}

static uint64_t now_ms(const kafka_sink_t *sink) {
    return sink->host->monotonic_ns(sink->host) / 1000000u;
}

/* Produces event `index`; RD_KAFKA_RESP_ERR__QUEUE_FULL is handed back for the caller to wait on. */
static rd_kafka_resp_err_t produce(kafka_sink_t *sink, const hh_sink_event_t *event, size_t index) {
    const hh_string_t *key = event->mobile_user_id.length > 0 ? &event->mobile_user_id
                             : event->anonymous_id.length > 0 ? &event->anonymous_id
                                                              : NULL;
    if (!sink->type_cached || sink->type_code != event->type_code) {
        int written = snprintf(sink->type_text, sizeof sink->type_text, "%d", (int)event->type_code);
        sink->type_cached = true;
        sink->type_code = event->type_code;
        sink->type_length = written > 0 ? (size_t)written : 0;
    }
    /* The event's traceparent (host-owned for this deliver call; librdkafka copies headers). */
    hh_string_t traceparent = {NULL, 0};
    if (sink->trace) {
        traceparent = sink->trace->traceparent(sink->host, index);
    }
    /* One header list, handed to librdkafka (which copies the values) when the message is
       queued, and destroyed here when it is not. */
    rd_kafka_headers_t *headers = rd_kafka_headers_new(3);
    rd_kafka_header_add(headers, "idempotency-key", -1, event->idempotency_key.data,
                        (ssize_t)event->idempotency_key.length);
    rd_kafka_header_add(headers, "event-type-code", -1, sink->type_text, (ssize_t)sink->type_length);
    if (traceparent.data && traceparent.length > 0) {
        rd_kafka_header_add(headers, "traceparent", -1, traceparent.data, (ssize_t)traceparent.length);
    }
    rd_kafka_resp_err_t error = rd_kafka_producev(
        sink->producer, RD_KAFKA_V_RKT(sink->topic_handle), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(key ? (void *)key->data : NULL, key ? key->length : 0),
        RD_KAFKA_V_VALUE((void *)event->json.data, event->json.length), RD_KAFKA_V_HEADERS(headers),
        RD_KAFKA_V_OPAQUE(slot_opaque(sink->generation, index)), RD_KAFKA_V_END);
    if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_headers_destroy(headers);
    }
    return error;
}

static hh_status_t kafka_deliver(void *instance, const hh_sink_event_t *events, size_t count,
                                 hh_sink_answer_t *answers, uint32_t timeout_ms) {
    kafka_sink_t *sink = instance;
    uint64_t deadline;
    size_t produced = 0;
    if (!sink || !events || !answers || count == 0 || count > HH_SINK_MAX_BATCH) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    deadline = now_ms(sink) + (timeout_ms ? timeout_ms : 1);
    if (rd_kafka_fatal_error(sink->producer, NULL, 0) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        /* The events it held were answered "retry" already: start over with a new producer. */
        char error[512];
        rd_kafka_conf_t *copy = rd_kafka_conf_dup(sink->conf);
        rd_kafka_t *fresh =
            rd_kafka_new(RD_KAFKA_PRODUCER, copy, error, sizeof error); /* takes `copy` on success */
        if (!fresh) {
            rd_kafka_conf_destroy(copy);
            return hh_report(sink->host, HH_ERR_UNAVAILABLE,
                             "kafka: the producer failed and cannot be replaced: %s", error);
        }
        sink->host->log(sink->host, HH_SEVERITY_WARNING, HH_VERBOSITY_DEBUG,
                        hh_string_from_cstr("kafka: the producer hit a fatal error; a new one takes over"));
        sink->generation++;
        rd_kafka_purge(sink->producer, RD_KAFKA_PURGE_F_QUEUE);
        if (sink->topic_handle) {
            rd_kafka_topic_destroy(sink->topic_handle);
        }
        rd_kafka_destroy(sink->producer);
        sink->producer = fresh;
        sink->topic_handle = NULL;
    }
    if (!sink->topic_handle) {
        /* A new producer needs its own handle; until one can be made nothing is sent. */
        sink->topic_handle = rd_kafka_topic_new(sink->producer, sink->topic, NULL);
        if (!sink->topic_handle) {
            return hh_report(sink->host, HH_ERR_UNAVAILABLE, "kafka: cannot open the topic: %s",
                             rd_kafka_err2str(rd_kafka_last_error()));
        }
    }
    if (sink->brokers_down) {
        /* Every broker was down at the last word from librdkafka: produce only if one answers now. */
        const struct rd_kafka_metadata *metadata = NULL;
        int wait_ms = timeout_ms > 0 && timeout_ms < 1000 ? (int)timeout_ms : 1000;
        rd_kafka_resp_err_t err =
            rd_kafka_metadata(sink->producer, 0, sink->topic_handle, &metadata, wait_ms);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            return hh_report(sink->host, HH_ERR_UNAVAILABLE, "kafka: all brokers are down (%s); %s",
                             sink->brokers_down_reason, rd_kafka_err2str(err));
        }
        rd_kafka_metadata_destroy(metadata);
        sink->brokers_down = false;
    }
    sink->generation++;
    sink->pending = 0;
    /* Nothing in the producer (no message of an earlier call still waiting for its report): then
     * all it holds after producing is this call's, and rd_kafka_flush waits for just those. */
    bool flush = rd_kafka_outq_len(sink->producer) == 0;
    snprintf(sink->unreported_reason, sizeof sink->unreported_reason, "kafka: not acknowledged within %u ms",
             (unsigned)timeout_ms);
    for (size_t i = 0; i < count; i++) {
        sink->slots[i].outcome = HH_SINK_RETRY;
        sink->slots[i].reported = false;
        sink->slots[i].failed = false;
    }
    /* Hand every event to the producer in order (the order within a key is the order produced).
     * A full queue is waited out by serving reports, until the deadline: then the rest stays a retry. */
    for (; produced < count; produced++) {
        rd_kafka_resp_err_t err = produce(sink, &events[produced], produced);
        while (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && now_ms(sink) < deadline) {
            rd_kafka_poll(sink->producer, 10);
            err = produce(sink, &events[produced], produced);
        }
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            sink->pending++;
            continue;
        }
        kafka_slot_t *slot = &sink->slots[produced];
        slot->reported = true;
        slot->outcome = is_permanent(err) ? HH_SINK_REJECTED : HH_SINK_RETRY;
        slot->failed = true;
        snprintf(slot->reason, sizeof slot->reason, "kafka: %s", rd_kafka_err2str(err));
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            break; /* the deadline passed with the queue still full: the rest waits for the next batch */
        }
    }
    for (size_t i = produced; i < count; i++) {
        if (!sink->slots[i].reported) {
            sink->slots[i].failed = true;
            snprintf(sink->slots[i].reason, KAFKA_SINK_REASON_MAX, "kafka: producer queue full");
        }
    }
    /* Serve delivery reports until each produced event has one, or the deadline. rd_kafka_flush
     * also sends what lingers at once (it serves the reports as rd_kafka_poll does); with messages
     * of an earlier call still out it would wait for them too, so then the batch goes out when
     * its linger ends. */
    if (flush && sink->pending > 0) {
        uint64_t now = now_ms(sink);
        if (now < deadline) {
            rd_kafka_flush(sink->producer, (int)(deadline - now));
        }
    }
    while (sink->pending > 0) {
        uint64_t now = now_ms(sink);
        if (now >= deadline) {
            break;
        }
        rd_kafka_poll(sink->producer, (int)(deadline - now < 50 ? deadline - now : 50));
    }
    if (sink->pending > 0) {
        /* Not acknowledged in time: those answer "retry". What has not left the producer yet is
         * dropped now, so fewer of them reach the topic a second time. */
        rd_kafka_purge(sink->producer, RD_KAFKA_PURGE_F_QUEUE);
        rd_kafka_poll(sink->producer, 0);
    }
    for (size_t i = 0; i < count; i++) {
        const kafka_slot_t *slot = &sink->slots[i];
        answers[i].outcome = slot->outcome;
        answers[i].reason = hh_string_from_cstr(slot->outcome == HH_SINK_DELIVERED ? ""
                                                : slot->failed                     ? slot->reason
                                                                                   : sink->unreported_reason);
    }
    /* Reports still to come belong to this call's generation; the next call starts a new one. */
    return HH_OK;
}

static const hh_event_sink_v1_t kafka_api = {kafka_deliver};

HH_SINGLE_PLUGIN_LIBRARY("kafka-sink", "Kafka sink", "Produces every event to a Kafka topic with librdkafka.",
                         "1.0.0", HH_KIND_EVENT_SINK, &kafka_api, kafka_create, kafka_destroy);
