/*
 * fixed-location: a location delegate that answers with the coordinates and/or location id
 * from its configuration. Useful on servers and kiosks (a fixed place), in tests, and as the
 * reference for writing a location plugin. Written in C.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdlib.h>
#include <string.h>

typedef struct fixed_location {
    hh_location_t answer; /* strings point into config memory, valid for the instance's life */
} fixed_location_t;

static bool config_double(const hh_host_t *host, const char *key, double *out) {
    hh_value_t value;
    if (host->config_get(host, key, &value) != HH_OK) {
        return false;
    }
    if (value.type == HH_VALUE_DOUBLE) {
        *out = value.of.real;
        return true;
    }
    if (value.type == HH_VALUE_INT64) {
        *out = (double)value.of.int64;
        return true;
    }
    return false;
}

static hh_status_t fixed_create(const hh_host_t *host, void **out_instance) {
    hh_location_t answer;
    memset(&answer, 0, sizeof answer);
    bool has_latitude = config_double(host, "latitude", &answer.latitude);
    bool has_longitude = config_double(host, "longitude", &answer.longitude);
    if (has_latitude != has_longitude) {
        return hh_report(host, HH_ERR_CONFIG, "set both 'latitude' and 'longitude', or neither");
    }
    if (has_latitude && (answer.latitude < -90.0 || answer.latitude > 90.0 || answer.longitude < -180.0 ||
                         answer.longitude > 180.0)) {
        return hh_report(host, HH_ERR_CONFIG,
                         "'latitude' must be within -90..90 and 'longitude' within -180..180 (not %g, %g)",
                         answer.latitude, answer.longitude);
    }
    answer.has_coordinates = has_latitude;
    config_double(host, "accuracy_m", &answer.accuracy_m);
    answer.location_id = hh_config_string(host, "location_id");
    answer.name = hh_config_string(host, "name");
    answer.address = hh_config_string(host, "address");
    if (!answer.has_coordinates && answer.location_id.length == 0) {
        return hh_report(host, HH_ERR_CONFIG, "configure 'latitude' and 'longitude', or 'location_id'");
    }
    fixed_location_t *self = malloc(sizeof *self);
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->answer = answer;
    *out_instance = self;
    return HH_OK;
}

static void fixed_destroy(void *instance) {
    free(instance);
}

/* Thread-safe: the answer is immutable after create. */
static hh_status_t fixed_get_location(void *instance, hh_location_t *out) {
    const fixed_location_t *self = instance;
    if (!out) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    *out = self->answer;
    return HH_OK;
}

static const hh_location_v1_t fixed_api = {
    .get_location = fixed_get_location, .release_location = NULL, /* strings live as long as the instance */
};

HH_SINGLE_PLUGIN_LIBRARY("fixed-location", "Fixed location",
                         "Answers with the coordinates and/or location id from its configuration.", "1.0.0",
                         HH_KIND_LOCATION, &fixed_api, fixed_create, fixed_destroy);
