/*
 * fixed-location: a location delegate that answers with the coordinates and/or location id
 * from its configuration. Useful on servers and kiosks (a fixed place), in tests, and as the
 * reference for writing a location plugin. Written in C.
 */
#include <hubhost/hubhost.h>

#include <stdlib.h>
#include <string.h>

typedef struct fixed_location {
    hh_location_t answer;  /* strings point into config memory, valid for the instance's life */
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

static hh_string_t config_string(const hh_host_t *host, const char *key) {
    hh_value_t value;
    if (host->config_get(host, key, &value) == HH_OK && value.type == HH_VALUE_STRING) {
        return value.of.string;
    }
    return hh_string_from_cstr(NULL);
}

static hh_status_t fixed_create(const hh_host_t *host, void **out_instance) {
    hh_location_t answer;
    memset(&answer, 0, sizeof answer);
    bool has_latitude = config_double(host, "latitude", &answer.latitude);
    bool has_longitude = config_double(host, "longitude", &answer.longitude);
    if (has_latitude != has_longitude) {
        host->report_error(host, HH_ERR_CONFIG,
                           hh_string_from_cstr("set both 'latitude' and 'longitude', or neither"));
        return HH_ERR_CONFIG;
    }
    if (has_latitude && (answer.latitude < -90.0 || answer.latitude > 90.0 ||
                         answer.longitude < -180.0 || answer.longitude > 180.0)) {
        host->report_error(host, HH_ERR_CONFIG,
                           hh_string_from_cstr("'latitude' must be within -90..90 and 'longitude' within -180..180"));
        return HH_ERR_CONFIG;
    }
    answer.has_coordinates = has_latitude;
    config_double(host, "accuracy_m", &answer.accuracy_m);
    answer.location_id = config_string(host, "location_id");
    answer.name = config_string(host, "name");
    answer.address = config_string(host, "address");
    if (!answer.has_coordinates && answer.location_id.length == 0) {
        host->report_error(host, HH_ERR_CONFIG,
                           hh_string_from_cstr("configure 'latitude' and 'longitude', or 'location_id'"));
        return HH_ERR_CONFIG;
    }
    fixed_location_t *self = malloc(sizeof *self);
    if (!self) {
        host->report_error(host, HH_ERR_INTERNAL, hh_string_from_cstr("out of memory"));
        return HH_ERR_INTERNAL;
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
    .get_location = fixed_get_location,
    .release_location = NULL, /* strings live as long as the instance */
};

static const hh_plugin_descriptor_t fixed_descriptor = {
    .id = "fixed-location",
    .name = "Fixed location",
    .description = "Answers with the coordinates and/or location id from its configuration.",
    .version = "1.0.0",
    .kind = HH_KIND_LOCATION,
    .kind_api = &fixed_api,
    .create = fixed_create,
    .destroy = fixed_destroy,
    .get_extension = NULL,
};

static const hh_plugin_descriptor_t *fixed_get_plugin(uint32_t index) {
    return index == 0 ? &fixed_descriptor : NULL;
}

static const hh_library_t fixed_library = {
    .abi_version = HH_ABI_VERSION_INIT,
    .init = NULL,
    .deinit = NULL,
    .plugin_count = 1,
    .get_plugin = fixed_get_plugin,
};

HH_EXPORT const hh_library_t *hubhost_library_entry(void) {
    return &fixed_library;
}
