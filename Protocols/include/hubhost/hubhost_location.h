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
    bool has_coordinates;     /* latitude/longitude/accuracy_m are meaningful */
    double latitude;          /* degrees, WGS84, -90..90 */
    double longitude;         /* degrees, WGS84, -180..180 */
    double accuracy_m;        /* radius of uncertainty in meters; 0 when unknown */
    int64_t time_ms;          /* when the fix was taken, ms since epoch; 0 when unknown */
    hh_string_t location_id;  /* an opaque id for the place (compared verbatim); length 0: none */
    hh_string_t name;         /* e.g. "Pike Place Market"; length 0: none */
    hh_string_t address;      /* a postal address on one line; length 0: none */
} hh_location_t;

typedef struct hh_location_v1 {
    /* Fill *out with the current location. `out` is host-owned, borrowed for the call.
     * HH_OK: *out is the answer (it may still have neither coordinates nor id).
     * HH_ERR_UNAVAILABLE: no location now (e.g. no fix yet); the host proceeds without one.
     * HH_ERR_TIMEOUT or others: a failure (report_error first). release_location is called
     * only after HH_OK. [thread-safe] */
    hh_status_t (*get_location)(void *instance, hh_location_t *out);

    /* Release what get_location put in *location (its strings). May be NULL when the plugin's
     * strings are static or live as long as the instance. [thread-safe] */
    void (*release_location)(void *instance, hh_location_t *location);
} hh_location_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_LOCATION_H */
