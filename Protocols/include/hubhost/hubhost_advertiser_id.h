/*
 * hubhost plugin ABI v1: the `advertiser_id` kind (the ZBiM advertiser-ID delegate).
 *
 * The delegate decides which advertiser ID the host uses in metrics, if any. When the user limits
 * ad tracking, no advertiser ID is used at all. The host asks the configured advertiser_id
 * instances in plugins.yaml order; the first one that answers HH_OK decides.
 */
#ifndef HUBHOST_ADVERTISER_ID_H
#define HUBHOST_ADVERTISER_ID_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A place for the plugin to put a string result. The host owns it; `set` copies the bytes at once,
 * so the plugin may pass a stack buffer. Calling `set` more than once keeps the last value. */
typedef struct hh_string_sink {
    void *sink_data;                                 /* host-owned, opaque */
    void (*set)(void *sink_data, hh_string_t value); /* [thread-safe] within the call */
} hh_string_sink_t;

typedef struct hh_advertiser_id_v1 {
    /* Decide the advertiser ID.
     * - HH_OK with *out_limit_ad_tracking = true: tracking is limited; no advertiser ID is used,
     *   whatever the sink holds.
     * - HH_OK with *out_limit_ad_tracking = false: the ID is the string given to `id_sink->set`
     *   (an HH_OK without a `set` call means "no ID available", and none is used).
     * - HH_ERR_NOT_FOUND: this delegate has no opinion; the host asks the next one.
     * - any other status: a failure (report_error first); the host logs it and asks the next one.
     * `out_limit_ad_tracking` and `id_sink` are host-owned, borrowed for the call. [thread-safe] */
    hh_status_t (*advertiser_id)(void *instance, bool *out_limit_ad_tracking,
                                 const hh_string_sink_t *id_sink);
} hh_advertiser_id_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_ADVERTISER_ID_H */
