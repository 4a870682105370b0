/*
 * nats-sink: an event_sink (ABI 1.1) that publishes every event to NATS JetStream with libnats.
 *
 * - Subject: the `subject` pattern with "{type}" replaced by the event type code
 *   (default "hubhost.events.{type}": named events go to hubhost.events.17).
 * - Nats-Msg-Id is the event's idempotency key, so JetStream drops a repeat (a batch retried after
 *   a lost ack, a restart after a crash) inside the stream's duplicate window. The value is the
 *   collector JSON of the event; the header Hubhost-Event-Type holds the type code, and
 *   "traceparent" (W3C) the event's trace when it has one ("hubhost.event_trace.v1", ABI 1.2; none
 *   on an older host or under isolation: process).
 * - The stream is checked before the first publish (at create when the server is reachable, else
 *   on the first deliver): it must exist (or `create_stream` makes it, with the pattern's subjects)
 *   and every publish expects it, so an event captured by another stream is not counted delivered.
 * - Each event's answer is its publish ack: an ack (a duplicate included) is HH_SINK_DELIVERED;
 *   an error or no ack before the host's deadline is HH_SINK_RETRY. With no connection nothing is
 *   published and deliver answers HH_ERR_UNAVAILABLE: a wait, not an attempt, so a server restart
 *   does not spend the events' retries. The client reconnects by itself, forever, every 100 ms.
 *
 * Threads: deliver is [host-serialized]; acks are handled on libnats' own thread, so the slot table
 * is under a mutex. An ack that comes after deliver returned is matched by its message id against
 * the current batch only; an old one finds nothing and is dropped.
 *
 * Per event, deliver does no allocation and no formatting of its own (the keys go into one buffer
 * kept across calls, an ack finds its slot in a hash index, the default reason and the subject are
 * formatted once per call and per type): libnats' own work per message (a message, its headers, the
 * ack's JSON) is then most of the client's time, as it is for a client publishing directly.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <nats/nats.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NATS_SINK_REASON_MAX 256
/* Buckets of the ack lookup: a power of two over twice the largest batch, so probes stay short. */
#define NATS_SINK_INDEX_SIZE  2048
#define NATS_SINK_INDEX_EMPTY UINT16_MAX

typedef struct nats_slot {
    size_t key_offset; /* of the NUL-terminated copy of the idempotency key in `keys` */
    size_t key_length;
    hh_sink_outcome_t outcome;
    bool acked;
    bool failed; /* `reason` holds this event's own error; else the call's no-ack reason applies */
    char reason[NATS_SINK_REASON_MAX];
} nats_slot_t;

typedef struct nats_sink {
    const hh_host_t *host;
    /* "hubhost.event_trace.v1": each event's traceparent, sent as the message's `traceparent`
     * header; NULL on a host that does not offer it (older, or isolation: process). */
    const hh_host_event_trace_v1_t *trace;
    natsConnection *connection;
    jsCtx *js;
    char subject[512];
    char stream[256];
    bool create_stream;
    bool stream_checked;
    /* js_PublishAsyncGetPendingList crashes on a context that never published asynchronously. */
    bool published;
    pthread_mutex_t lock;
    /* The batch in progress: its slots, their keys one after the other (grown, never shrunk), and
     * the index of the slots by key hash (slot numbers, open addressing) for the ack handler. */
    nats_slot_t slots[HH_SINK_MAX_BATCH];
    char *keys;
    size_t keys_capacity;
    uint16_t index[NATS_SINK_INDEX_SIZE];
    size_t count;
    size_t waiting;
    /* The reason of an event without an ack at the deadline, formatted once per call. */
    char no_ack_reason[NATS_SINK_REASON_MAX];
    /* The subject and header value of the last type code published, reused while it repeats. */
    bool cached;
    int cached_type_code;
    bool cached_subject_fits;
    char cached_subject[640];
    char cached_type_text[16];
    char check_error[640];
} nats_sink_t;

/* FNV-1a: the keys are unique ids, so a plain spread is enough. */
static size_t key_hash(const char *key, size_t length) {
    uint32_t hash = 2166136261u;
    for (size_t i = 0; i < length; i++) {
        hash = (hash ^ (uint8_t)key[i]) * 16777619u;
    }
    return hash & (NATS_SINK_INDEX_SIZE - 1);
}

/* The first slot of the current batch with `key` that has no answer yet, or NULL (a key that is
 * twice in a batch has an ack for each publish). Called under the lock. */
static nats_slot_t *find_slot(nats_sink_t *sink, const char *key) {
    size_t length = strlen(key);
    size_t bucket = key_hash(key, length);
    for (size_t probes = 0; probes < NATS_SINK_INDEX_SIZE; probes++) {
        uint16_t number = sink->index[bucket];
        if (number == NATS_SINK_INDEX_EMPTY || number >= sink->count) {
            return NULL;
        }
        nats_slot_t *slot = &sink->slots[number];
        if (!slot->acked && slot->key_length == length &&
            memcmp(sink->keys + slot->key_offset, key, length) == 0) {
            return slot;
        }
        bucket = (bucket + 1) & (NATS_SINK_INDEX_SIZE - 1);
    }
    return NULL;
}

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *ack, jsPubAckErr *error, void *closure) {
    nats_sink_t *sink = closure;
    const char *key = NULL;
    (void)js;
    if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &key) == NATS_OK && key) {
        pthread_mutex_lock(&sink->lock);
        nats_slot_t *slot = find_slot(sink, key);
        if (slot) {
            slot->acked = true;
            sink->waiting--;
            if (ack) {
                slot->outcome = HH_SINK_DELIVERED;
            } else {
                slot->outcome = HH_SINK_RETRY;
                slot->failed = true;
                snprintf(slot->reason, sizeof slot->reason, "nats: %s",
                         error && error->ErrText ? error->ErrText
                         : error                 ? natsStatus_GetText(error->Err)
                                                 : "no ack");
            }
        }
        pthread_mutex_unlock(&sink->lock);
    }
    natsMsg_Destroy(msg);
}

/* Given to natsOptions_SetRetryOnFailedConnect: with a callback, the first connection is tried in
 * the background (without one, Connect would block until a server answers). */
static void on_connected(natsConnection *connection, void *closure) {
    (void)connection;
    (void)closure;
}

/* The subject of an event of `type_code`: the pattern with each "{type}" replaced. */
static bool subject_for(const nats_sink_t *sink, int type_code, char *out, size_t capacity) {
    const char *pattern = sink->subject;
    size_t used = 0;
    while (*pattern) {
        if (strncmp(pattern, "{type}", 6) == 0) {
            int written = snprintf(out + used, capacity - used, "%d", type_code);
            if (written < 0 || (size_t)written >= capacity - used) {
                return false;
            }
            used += (size_t)written;
            pattern += 6;
        } else {
            if (used + 1 >= capacity) {
                return false;
            }
            out[used++] = *pattern++;
        }
    }
    out[used] = '\0';
    return true;
}

/* Checks (or creates) the stream once the server answers. Returns HH_OK, or a status with
 * check_error set. */
static hh_status_t check_stream(nats_sink_t *sink) {
    jsStreamInfo *info = NULL;
    jsErrCode code = 0;
    natsStatus status;
    if (sink->stream_checked) {
        return HH_OK;
    }
    status = js_GetStreamInfo(&info, sink->js, sink->stream, NULL, &code);
    if (status == NATS_OK) {
        jsStreamInfo_Destroy(info);
        sink->stream_checked = true;
        return HH_OK;
    }
    if (status == NATS_NOT_FOUND && sink->create_stream) {
        char subjects[512];
        const char *list[1];
        jsStreamConfig config;
        /* Every type: the pattern with "{type}" as the '*' wildcard (it fits: never longer). */
        {
            const char *pattern = sink->subject;
            size_t used = 0;
            while (*pattern && used + 1 < sizeof subjects) {
                if (strncmp(pattern, "{type}", 6) == 0) {
                    subjects[used++] = '*';
                    pattern += 6;
                } else {
                    subjects[used++] = *pattern++;
                }
            }
            subjects[used] = '\0';
        }
        list[0] = subjects;
        jsStreamConfig_Init(&config);
        config.Name = sink->stream;
        config.Subjects = list;
        config.SubjectsLen = 1;
        config.Storage = js_FileStorage;
        status = js_AddStream(&info, sink->js, &config, NULL, &code);
        if (status == NATS_OK) {
            jsStreamInfo_Destroy(info);
            sink->stream_checked = true;
            return HH_OK;
        }
    }
    if (status == NATS_NOT_FOUND) {
        snprintf(sink->check_error, sizeof sink->check_error,
                 "nats: stream '%s' does not exist (create it, or set create_stream: true)", sink->stream);
        return HH_ERR_CONFIG;
    }
    snprintf(sink->check_error, sizeof sink->check_error,
             "nats: cannot check stream '%s': %s (JetStream error %d)", sink->stream,
             natsStatus_GetText(status), (int)code);
    return HH_ERR_UNAVAILABLE;
}

static hh_status_t nats_create(const hh_host_t *host, void **out_instance) {
    char url[1024] = "nats://127.0.0.1:4222";
    hh_value_t value;
    natsOptions *options = NULL;
    jsOptions js_options;
    natsStatus status;
    nats_sink_t *sink = calloc(1, sizeof *sink);
    if (!sink) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    sink->host = host;
    sink->trace = host->get_extension(host, HH_HOST_EXT_EVENT_TRACE);
    strcpy(sink->subject, "hubhost.events.{type}");
    strcpy(sink->stream, "HUBHOST_EVENTS");
    if ((host->config_get(host, "url", &value) == HH_OK &&
         !hh_config_string_copy(host, "url", url, sizeof url)) ||
        (host->config_get(host, "subject", &value) == HH_OK &&
         !hh_config_string_copy(host, "subject", sink->subject, sizeof sink->subject)) ||
        (host->config_get(host, "stream", &value) == HH_OK &&
         !hh_config_string_copy(host, "stream", sink->stream, sizeof sink->stream))) {
        free(sink);
        return hh_report(host, HH_ERR_CONFIG,
                         "url, subject and stream must be strings (under 1 KiB, 512 and 256 bytes)");
    }
    if (sink->subject[0] == '\0' || sink->stream[0] == '\0') {
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "subject and stream must not be empty");
    }
    if (host->config_get(host, "create_stream", &value) == HH_OK) {
        if (value.type != HH_VALUE_BOOL) {
            free(sink);
            return hh_report(host, HH_ERR_CONFIG, "create_stream must be true or false");
        }
        sink->create_stream = value.of.boolean;
    }
    pthread_mutex_init(&sink->lock, NULL);
    if ((status = natsOptions_Create(&options)) != NATS_OK ||
        (status = natsOptions_SetURL(options, url)) != NATS_OK ||
        (status = natsOptions_SetAllowReconnect(options, true)) != NATS_OK ||
        (status = natsOptions_SetMaxReconnect(options, -1)) != NATS_OK ||
        (status = natsOptions_SetReconnectWait(options, 100)) != NATS_OK ||
        (status = natsOptions_SetTimeout(options, 2000)) != NATS_OK ||
        (status = natsOptions_SetRetryOnFailedConnect(options, true, on_connected, NULL)) != NATS_OK) {
        natsOptions_Destroy(options);
        pthread_mutex_destroy(&sink->lock);
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "nats options: %s", natsStatus_GetText(status));
    }
    /* With retry-on-failed-connect, a server that is not up yet is no error: the client keeps
     * trying, and the events wait as retries meanwhile. */
    status = natsConnection_Connect(&sink->connection, options);
    natsOptions_Destroy(options);
    if (status != NATS_OK && status != NATS_NOT_YET_CONNECTED) {
        pthread_mutex_destroy(&sink->lock);
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "cannot connect to %s: %s", url, natsStatus_GetText(status));
    }
    jsOptions_Init(&js_options);
    js_options.PublishAsync.AckHandler = on_ack;
    js_options.PublishAsync.AckHandlerClosure = sink;
    js_options.PublishAsync.MaxPending = 4 * HH_SINK_MAX_BATCH;
    if ((status = natsConnection_JetStream(&sink->js, sink->connection, &js_options)) != NATS_OK) {
        natsConnection_Destroy(sink->connection);
        pthread_mutex_destroy(&sink->lock);
        free(sink);
        return hh_report(host, HH_ERR_CONFIG, "cannot open JetStream: %s", natsStatus_GetText(status));
    }
    if (natsConnection_Status(sink->connection) == NATS_CONN_STATUS_CONNECTED &&
        check_stream(sink) == HH_ERR_CONFIG) {
        /* The server answered and the stream is wrong: say so now rather than retry forever. */
        hh_status_t failed = hh_report(host, HH_ERR_CONFIG, "%s", sink->check_error);
        jsCtx_Destroy(sink->js);
        natsConnection_Destroy(sink->connection);
        pthread_mutex_destroy(&sink->lock);
        free(sink);
        return failed;
    }
    *out_instance = sink;
    return HH_OK;
}

/* Drops the publishes still waiting for an ack: they were answered "retry", and the host sends
 * them again (JetStream then drops the repeat by its message id). */
static void drop_pending(nats_sink_t *sink) {
    natsMsgList pending;
    if (sink->published && js_PublishAsyncGetPendingList(&pending, sink->js) == NATS_OK) {
        natsMsgList_Destroy(&pending);
    }
}

static void nats_destroy(void *instance) {
    nats_sink_t *sink = instance;
    if (!sink) {
        return;
    }
    drop_pending(sink);
    jsCtx_Destroy(sink->js);
    natsConnection_Close(sink->connection);
    natsConnection_Destroy(sink->connection);
    pthread_mutex_destroy(&sink->lock);
    free(sink->keys);
    free(sink);
}

static hh_status_t nats_deliver(void *instance, const hh_sink_event_t *events, size_t count,
                                hh_sink_answer_t *answers, uint32_t timeout_ms) {
    nats_sink_t *sink = instance;
    int64_t deadline;
    jsPubOptions options;
    hh_status_t checked;
    if (!sink || !events || !answers || count == 0 || count > HH_SINK_MAX_BATCH) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    deadline = nats_Now() + (timeout_ms ? (int64_t)timeout_ms : 1);
    if (natsConnection_Status(sink->connection) != NATS_CONN_STATUS_CONNECTED) {
        /* Nothing is buffered for a server that is away: nothing is sent, the whole batch waits. */
        return hh_report(sink->host, HH_ERR_UNAVAILABLE, "nats: not connected (reconnecting)");
    }
    if ((checked = check_stream(sink)) != HH_OK) {
        return hh_report(sink->host, checked, "%s", sink->check_error);
    }
    /* The keys, each NUL-terminated for Nats-Msg-Id, in one buffer. No ack handler reads it now:
     * the previous call detached its batch (count 0) before it returned. */
    size_t keys_size = 0;
    for (size_t i = 0; i < count; i++) {
        keys_size += events[i].idempotency_key.length + 1;
    }
    if (keys_size > sink->keys_capacity) {
        char *grown = realloc(sink->keys, keys_size);
        if (!grown) {
            return hh_report(sink->host, HH_ERR_INTERNAL, "out of memory");
        }
        sink->keys = grown;
        sink->keys_capacity = keys_size;
    }
    snprintf(sink->no_ack_reason, sizeof sink->no_ack_reason, "nats: no publish ack within %u ms",
             (unsigned)timeout_ms);
    pthread_mutex_lock(&sink->lock);
    memset(sink->index, 0xFF, sizeof sink->index); /* every bucket NATS_SINK_INDEX_EMPTY */
    keys_size = 0;
    for (size_t i = 0; i < count; i++) {
        nats_slot_t *slot = &sink->slots[i];
        size_t length = events[i].idempotency_key.length;
        size_t bucket = key_hash(events[i].idempotency_key.data, length);
        memcpy(sink->keys + keys_size, events[i].idempotency_key.data, length);
        sink->keys[keys_size + length] = '\0';
        slot->key_offset = keys_size;
        slot->key_length = length;
        keys_size += length + 1;
        slot->outcome = HH_SINK_RETRY;
        slot->acked = false;
        slot->failed = false;
        /* At most HH_SINK_MAX_BATCH of NATS_SINK_INDEX_SIZE buckets are taken: a free one is near. */
        for (size_t probes = 0; sink->index[bucket] != NATS_SINK_INDEX_EMPTY && probes < NATS_SINK_INDEX_SIZE;
             probes++) {
            bucket = (bucket + 1) & (NATS_SINK_INDEX_SIZE - 1);
        }
        sink->index[bucket] = (uint16_t)i;
    }
    sink->count = count;
    sink->waiting = count;
    pthread_mutex_unlock(&sink->lock);

    /* No MaxWait: libnats would keep a timer entry per message until that wait ends, acked or not
     * (a steady stream holds post_timeout's worth of them), and then queue a timeout for each. The
     * deadline is this call's own: the wait below, then drop_pending. */
    jsPubOptions_Init(&options);
    options.ExpectStream = sink->stream;
    for (size_t i = 0; i < count; i++) {
        natsMsg *msg = NULL;
        natsStatus status;
        nats_slot_t *slot = &sink->slots[i];
        if (!sink->cached || sink->cached_type_code != (int)events[i].type_code) {
            sink->cached = true;
            sink->cached_type_code = (int)events[i].type_code;
            sink->cached_subject_fits =
                subject_for(sink, sink->cached_type_code, sink->cached_subject, sizeof sink->cached_subject);
            snprintf(sink->cached_type_text, sizeof sink->cached_type_text, "%d", sink->cached_type_code);
        }
        if (!sink->cached_subject_fits) {
            pthread_mutex_lock(&sink->lock);
            slot->acked = true;
            sink->waiting--;
            slot->outcome = HH_SINK_REJECTED;
            slot->failed = true;
            snprintf(slot->reason, sizeof slot->reason, "nats: the subject for type %d is too long",
                     (int)events[i].type_code);
            pthread_mutex_unlock(&sink->lock);
            continue;
        }
        options.MsgId = sink->keys + slot->key_offset;
        status =
            natsMsg_Create(&msg, sink->cached_subject, NULL, events[i].json.data, (int)events[i].json.length);
        if (status == NATS_OK) {
            status = natsMsgHeader_Set(msg, "Hubhost-Event-Type", sink->cached_type_text);
        }
        if (status == NATS_OK && sink->trace) {
            /* Host-owned for this call: copied, NUL-terminated, into the header (the message copies it). */
            hh_string_t traceparent = sink->trace->traceparent(sink->host, i);
            char value[128];
            if (traceparent.data && traceparent.length > 0 && traceparent.length < sizeof value) {
                memcpy(value, traceparent.data, traceparent.length);
                value[traceparent.length] = '\0';
                status = natsMsgHeader_Set(msg, "traceparent", value);
            }
        }
        if (status == NATS_OK) {
            status = js_PublishMsgAsync(sink->js, &msg, &options); /* takes msg on success */
            sink->published = true;
        }
        if (status != NATS_OK) {
            natsMsg_Destroy(msg);
            pthread_mutex_lock(&sink->lock);
            if (!slot->acked) {
                slot->acked = true;
                sink->waiting--;
                slot->failed = true;
                snprintf(slot->reason, sizeof slot->reason, "nats: %s", natsStatus_GetText(status));
            }
            pthread_mutex_unlock(&sink->lock);
        }
    }
    /* Wait for the acks, up to the deadline. */
    for (;;) {
        int64_t now = nats_Now();
        size_t waiting;
        pthread_mutex_lock(&sink->lock);
        waiting = sink->waiting;
        pthread_mutex_unlock(&sink->lock);
        if (waiting == 0 || now >= deadline) {
            break;
        }
        jsPubOptions wait;
        jsPubOptions_Init(&wait);
        wait.MaxWait = deadline - now < 50 ? deadline - now : 50;
        js_PublishAsyncComplete(sink->js, &wait);
    }
    pthread_mutex_lock(&sink->lock);
    if (sink->waiting > 0) {
        pthread_mutex_unlock(&sink->lock);
        drop_pending(sink);
        pthread_mutex_lock(&sink->lock);
    }
    for (size_t i = 0; i < count; i++) {
        const nats_slot_t *slot = &sink->slots[i];
        answers[i].outcome = slot->outcome;
        answers[i].reason = hh_string_from_cstr(slot->outcome == HH_SINK_DELIVERED ? ""
                                                : slot->failed                     ? slot->reason
                                                                                   : sink->no_ack_reason);
    }
    /* Late acks must not touch the reasons the host is about to copy: detach the lookup table. */
    sink->count = 0;
    pthread_mutex_unlock(&sink->lock);
    return HH_OK;
}

static const hh_event_sink_v1_t nats_api = {nats_deliver};

HH_SINGLE_PLUGIN_LIBRARY("nats-sink", "NATS JetStream sink",
                         "Publishes every event to a JetStream stream with libnats.", "1.0.0",
                         HH_KIND_EVENT_SINK, &nats_api, nats_create, nats_destroy);
