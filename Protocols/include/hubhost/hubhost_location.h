/*
 * hubhost plugin ABI v1: the `location` kind (the location delegate).
 *
 * Answers where the device is: coordinates and/or a location id. The content hub's pilot
 * program and the location augmentation ask it; the host caches answers as configured, so a
 * location plugin need not cache.
 */
#ifndef HUBHOST_LOCATION_H
#define HUBHOST_LOCATION_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A location answer. The host zero-fills it before the call; the plugin fills what it knows.
 * String members are plugin-owned and stay valid until the host calls release_location on this
 * same struct (the host copies them first). */
typedef struct hh_location {
    bool has_coordinates;    /* latitude/longitude/accuracy_m are meaningful */
    double latitude;         /* degrees, WGS84, -90..90 */
    double longitude;        /* degrees, WGS84, -180..180 */
    double accuracy_m;       /* radius of uncertainty in meters; 0 when unknown */
    int64_t time_ms;         /* when the fix was taken, ms since epoch; 0 when unknown */
    hh_string_t location_id; /* an opaque id for the place (compared verbatim); length 0: none */
    hh_string_t name;        /* e.g. "Pike Place Market"; length 0: none */
    hh_string_t address;     /* a postal address on one line; length 0: none */
} hh_location_t;

typedef struct hh_location_v1 {
    /* Fill *out with the current location. `out` is host-owned, borrowed for the call.
     * HH_OK: *out is the answer (it may still have neither coordinates nor id).
     * HH_ERR_UNAVAILABLE: no location now (e.g. no fix yet); the host proceeds without one.
     * HH_ERR_TIMEOUT or others: a failure (report_error first). release_location is called
     * only after HH_OK. [thread-safe]
     * Deadline: the host waits for an in-process call at most what is left of the caller's
     * acquisition timeout (5 s when none is given). Past it the caller goes on without an answer,
     * the call keeps its thread until it returns, and until then the host reports the instance
     * stuck and does not call it again (it is skipped, and the next delegate is asked). */
    hh_status_t (*get_location)(void *instance, hh_location_t *out);

    /* Release what get_location put in *location (its strings). May be NULL when the plugin's
     * strings are static or live as long as the instance. [thread-safe] */
    void (*release_location)(void *instance, hh_location_t *location);
} hh_location_v1_t;

/* ---------------------------------------------------------------------------------------------
 * The host's location service extension, "hubhost.location.v1": how any plugin (for example the
 * location augmentation) asks for the device's location. The host asks its location delegates in
 * plugins.yaml order and caches the answer.
 *
 *     const hh_host_location_v1_t *loc = host->get_extension(host, HH_HOST_EXT_LOCATION);
 *
 * Handle NULL: a host without location delegates, or a plugin running with `isolation: process`,
 * does not offer it.
 * ------------------------------------------------------------------------------------------- */

#define HH_HOST_EXT_LOCATION "hubhost.location.v1"

typedef struct hh_host_location_v1 {
    /* Fill *out with the current location: a cached answer no older than `max_age_ms`, else a new
     * one asked of the delegates, waiting at most `timeout_ms`. The host zero-fills *out first;
     * its strings are host-owned and valid until release_location (a string of length 0 may
     * still point at bytes). HH_OK: *out is the answer; HH_ERR_UNAVAILABLE: no delegate has a
     * location; HH_ERR_TIMEOUT: none answered in time; HH_ERR_INVALID_ARGUMENT: `out` is NULL.
     * [thread-safe] */
    hh_status_t (*get_location)(const hh_host_t *host, int64_t max_age_ms, int64_t timeout_ms,
                                hh_location_t *out);

    /* Release the strings of a location obtained from get_location: once per HH_OK answer, with
     * *location as get_location filled it (the host finds its strings through it); the host
     * zero-fills it then. A zero-filled location is left as it is. [thread-safe] */
    void (*release_location)(const hh_host_t *host, hh_location_t *location);
} hh_host_location_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_LOCATION_H */
