/*
 * hubhost plugin ABI v1.1: the `event_sink` kind (where tracked events leave hubhost).
 *
 * The event engine keeps every event in its durable store until a sink says it was delivered.
 * `events.sink: INSTANCE_ID` in plugins.yaml names the sink instance; without it, events go to the
 * built-in `http-collector` sink (a JSON POST to `events.collector_url`).
 *
 * What the host keeps (a sink does none of it): the durable store, batching (`cache_size`,
 * `flush_interval`), the statuses, retries with exponential backoff and jitter, FAILED_POST after
 * `max_num_retries` attempts, the idempotency key of each event. What a sink does: take one batch,
 * try to deliver each event, and answer for each one: delivered, retry later, or rejected.
 *
 * Delivery is at least once: the host may hand the same event to a sink again (after a crash
 * between the sink's answer and the store's update, or after a retry answer). Every event carries
 * its idempotency key, stable across attempts and restarts, so the sink (or the system behind it:
 * a Kafka header, a JetStream Nats-Msg-Id) can drop duplicates.
 *
 * Added in ABI 1.1 (HH_KIND_EVENT_SINK = 7). A host older than 1.1 does not know the kind and
 * refuses a library that exports one; an ABI 1.0 plugin of another kind loads unchanged.
 */
#ifndef HUBHOST_EVENT_SINK_H
#define HUBHOST_EVENT_SINK_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Per-event answers (hh_sink_answer_t.outcome)
 * ------------------------------------------------------------------------------------------- */

typedef int32_t hh_sink_outcome_t;

/* The event reached its destination (acknowledged: an HTTP 2xx, a Kafka delivery report without
 * error, a JetStream publish ack). The host marks it SUCCESSFULLY_POSTED and never hands it to a
 * sink again. */
#define HH_SINK_DELIVERED 0
/* Not delivered now, may succeed later (a broker down, a full queue, a timeout). The host counts
 * an attempt and retries after its backoff; after `max_num_retries` attempts it is FAILED_POST.
 * This is what the host assumes for every answer the sink leaves untouched. */
#define HH_SINK_RETRY 1
/* The destination refused this event for good (too large, invalid for it). The host marks it
 * FAILED_POST at once, with the reason as its last error. Never use it for a transient failure:
 * a rejected event is not retried. */
#define HH_SINK_REJECTED 2

/* ---------------------------------------------------------------------------------------------
 * A batch
 * ------------------------------------------------------------------------------------------- */

/* The most events the host passes to one deliver call (its `count` is 1 to HH_SINK_MAX_BATCH). */
#define HH_SINK_MAX_BATCH 1000

/* One event as the host hands it to a sink. Every member is host-owned and borrowed: valid only
 * until `deliver` returns. Copy what you keep (a producer that sends asynchronously copies the
 * bytes into its own queue, as librdkafka's RD_KAFKA_MSG_F_COPY does). Strings are UTF-8 with an
 * explicit length, not NUL-terminated. */
typedef struct hh_sink_event {
    /* The event's idempotency key (hubhost's event id): unique, stable across attempts and
     * restarts. Never empty. */
    hh_string_t idempotency_key;

    /* The event type code (the Engage SDK's eventTypeCode, e.g. 17 for a custom event). */
    int32_t type_code;

    /* When the event happened, ms since 1970-01-01T00:00:00Z. */
    int64_t time_ms;

    /* The event as the collector format's JSON object (one element of its "events" array):
     * {"attributes":[{"name":"Event Name","value":"PLAYER LOADED"},...],"eventTimestamp":"...Z",
     *  "eventTypeCode":"17","idempotencyKey":"..."}. Send it as it is: it is what every reader of
     * hubhost's events expects. */
    hh_string_t json;

    /* The "Mobile User Id" attribute, or length 0 when the event has none. */
    hh_string_t mobile_user_id;

    /* The anonymous id: the "Device Id" attribute, or length 0 when the event has none. A sink
     * that partitions by user uses mobile_user_id, else this, so that one user's (or one
     * device's) events stay in order. */
    hh_string_t anonymous_id;
} hh_sink_event_t;

/* The sink's answer for one event. Host-owned array, one per event, in the batch's order. The
 * host sets every outcome to HH_SINK_RETRY and every reason to length 0 before the call. */
typedef struct hh_sink_answer {
    /* One of HH_SINK_*. Any other value is a bug in the sink: the host treats it as
     * HH_SINK_RETRY and logs it (and `hubhost plugins test` fails the sink for it). */
    hh_sink_outcome_t outcome;

    /* Why, for HH_SINK_RETRY and HH_SINK_REJECTED (kept as the event's last error); ignored for
     * HH_SINK_DELIVERED. Plugin-owned: it must stay valid until the next `deliver` call on the
     * same instance returns or the instance is destroyed (a static string, or a buffer kept in
     * the instance). The host copies it as soon as `deliver` returns. */
    hh_string_t reason;
} hh_sink_answer_t;

typedef struct hh_event_sink_v1 {
    /* Deliver `count` events (1 <= count <= HH_SINK_MAX_BATCH) and fill answers[i] for events[i].
     *
     * `events` and `answers` are host-owned, borrowed for the call; the sink writes only into
     * `answers` (and only within [0, count)). The call may block while the sink waits for its
     * acknowledgements, but it must return within the deadline the host gives in `timeout_ms`
     * (the instance's `events.post_timeout`, in ms, at least 1): whatever is not acknowledged by
     * then is answered HH_SINK_RETRY. Events of one batch are in the order they were tracked: a
     * sink that keeps order per key sends them in that order.
     *
     * HH_OK: `answers` hold the outcome of every event.
     * HH_ERR_UNAVAILABLE (report_error first): nothing was sent, because the sink cannot send now
     * (not connected, reconnecting). Not an attempt: the host counts no retry, keeps the events
     * waiting (NOT_POSTED) with the reported message as the flush's last error, and offers them
     * again at its next flush. Use it only when no event of the batch left the sink.
     * Any other status (report_error first): the whole batch failed before any event could be
     * judged (not configured, a broken connection); the host treats every event as
     * HH_SINK_RETRY with the reported message, whatever `answers` hold.
     *
     * Under `isolation: process` the batch crosses to the worker and the answers come back; a
     * sink that crashes or outlives its `call_timeout` counts as HH_SINK_RETRY for the whole
     * batch, the worker is restarted and no event is lost. [host-serialized] */
    hh_status_t (*deliver)(void *instance, const hh_sink_event_t *events, size_t count,
                           hh_sink_answer_t *answers, uint32_t timeout_ms);
} hh_event_sink_v1_t;

/* ---------------------------------------------------------------------------------------------
 * The host's event-auth extension, "hubhost.event_auth.v1": the OAuth 2 access token of event
 * delivery, for a sink whose destination wants one. The host owns the OAuth: the refresh-token
 * grant against `events.auth_token_url` (with auth_client_id, auth_client_secret,
 * auth_refresh_token), the token cached until it expires. Obtain the table with
 *
 *     const hh_host_event_auth_v1_t *auth = host->get_extension(host, HH_HOST_EXT_EVENT_AUTH);
 *
 * and handle NULL: it is offered only when `events.auth_token_url` is set, and never under
 * `isolation: process`.
 * ------------------------------------------------------------------------------------------- */

#define HH_HOST_EXT_EVENT_AUTH "hubhost.event_auth.v1"

typedef struct hh_host_event_auth_v1 {
    /* Write the current access token, NUL-terminated, into `out` (plugin-owned, `capacity` bytes
     * including the NUL); *out_length (may be NULL) gets its length without the NUL. With
     * `force_refresh` (after the destination refused the token, e.g. HTTP 401) the host fetches a
     * new one instead of the cached one. May block for the token endpoint (up to
     * events.post_timeout): call it from deliver, not from create.
     * HH_OK: the token is in `out`. HH_ERR_UNAVAILABLE: no token can be had now (the token
     * endpoint failed): the host has recorded why as if the sink had called report_error, so
     * returning HH_ERR_UNAVAILABLE from deliver retries the batch with that message.
     * HH_ERR_INVALID_ARGUMENT: `out` is NULL or too small (*out_length then says how long the token
     * is). HH_ERR_NOT_FOUND: no OAuth is configured. [thread-safe] */
    hh_status_t (*get_token)(const hh_host_t *host, bool force_refresh, char *out, size_t capacity,
                             size_t *out_length);
} hh_host_event_auth_v1_t;

/* ---------------------------------------------------------------------------------------------
 * The host's event-trace extension, "hubhost.event_trace.v1" (added in ABI 1.2): the W3C
 * traceparent each event of the batch was tracked under (the `traceparent` header of its
 * POST /v1/events, or the span hubhost made for that request when `tracing.endpoint` is set), for
 * a sink that sends it on with the message (e.g. a Kafka or NATS message header `traceparent`) so
 * the consumer joins the trace. hh_sink_event_t is unchanged: the traceparent is looked up by the
 * event's index in the batch instead. Obtain the table with
 *
 *     const hh_host_event_trace_v1_t *trace = host->get_extension(host, HH_HOST_EXT_EVENT_TRACE);
 *
 * once (in create, or at the first deliver; the table is host-owned and valid for the instance's
 * life), and handle NULL: an older host (ABI 1.0, 1.1) does not offer it. Under
 * `isolation: process` the worker offers it, and a `.wasm` sink's guest adapter does (one built
 * with this header or later): the traceparents are sent along with the batch.
 * ------------------------------------------------------------------------------------------- */

#define HH_HOST_EXT_EVENT_TRACE "hubhost.event_trace.v1"

typedef struct hh_host_event_trace_v1 {
    /* The traceparent of events[index] of the batch the instance's `deliver` call in progress was
     * given: "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>" (55 bytes, lowercase, valid
     * per W3C Trace Context; NUL-terminated as well). {NULL, 0} when that event has none (most
     * events: only those posted with a traceparent, or while tracing is on, carry one), when
     * `index` is not below the call's `count`, or when no deliver call of this instance is running.
     *
     * Host-owned: valid only until the `deliver` call returns; copy the bytes (e.g. into the
     * message's header) to keep them. Call it only while `deliver` runs, from the thread of that
     * call or any thread the sink waits on inside it (the host reads its own state under a lock);
     * never after `deliver` returned, e.g. from a delivery-report callback. [thread-safe] */
    hh_string_t (*traceparent)(const hh_host_t *host, size_t index);
} hh_host_event_trace_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_EVENT_SINK_H */
