/*
 * Test-only plugins whose calls take too long, in process, for the host's call deadlines:
 *
 *   slow-location (location)              sleeps `delay_ms`, then answers latitude 1, longitude 2
 *   slow-content (content_provider)       sleeps `delay_ms`, then writes "late" and answers HH_OK
 *
 * `delay_ms` (config, default 0) is the sleep; a negative value sleeps forever. `create_delay_ms`
 * (default 0) is a sleep in create, the same way. They sleep instead of spinning, so a stuck call
 * costs no CPU while the tests go on beside it.
 */
#define _POSIX_C_SOURCE 200809L
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdlib.h>
#include <time.h>

typedef struct slow {
    long long delay_ms;
} slow_t;

static void sleep_ms(long long delay_ms) {
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (long long waited = 0; delay_ms < 0 || waited < delay_ms; waited += 10) {
        nanosleep(&tick, NULL);
    }
}

static long long config_ms(const hh_host_t *host, const char *key) {
    hh_value_t value;
    if (host->config_get(host, key, &value) == HH_OK && value.type == HH_VALUE_INT64) {
        return value.of.int64;
    }
    return 0;
}

static hh_status_t slow_create(const hh_host_t *host, void **out_instance) {
    sleep_ms(config_ms(host, "create_delay_ms"));
    slow_t *self = calloc(1, sizeof *self);
    if (!self) {
        return HH_ERR_INTERNAL;
    }
    self->delay_ms = config_ms(host, "delay_ms");
    *out_instance = self;
    return HH_OK;
}

static void slow_destroy(void *instance) {
    free(instance);
}

static hh_status_t slow_get_location(void *instance, hh_location_t *out) {
    sleep_ms(((const slow_t *)instance)->delay_ms);
    out->has_coordinates = true;
    out->latitude = 1;
    out->longitude = 2;
    return HH_OK;
}

static hh_status_t slow_fetch(void *instance, const char *resource, const hh_content_sink_t *sink) {
    (void)resource;
    sleep_ms(((const slow_t *)instance)->delay_ms);
    static const char late[] = "late";
    hh_status_t status = sink->write(sink, late, sizeof late - 1);
    return status;
}

static const hh_location_v1_t location_api = {.get_location = slow_get_location, .release_location = NULL};
static const hh_content_provider_v1_t content_api = {.fetch = slow_fetch};

static const hh_plugin_descriptor_t slow_plugins[] = {
    HH_PLUGIN_DESCRIPTOR("slow-location", "Slow location", "test-only", "1.0.0", HH_KIND_LOCATION,
                         &location_api, slow_create, slow_destroy),
    HH_PLUGIN_DESCRIPTOR("slow-content", "Slow content", "test-only", "1.0.0", HH_KIND_CONTENT_PROVIDER,
                         &content_api, slow_create, slow_destroy),
};

HH_PLUGIN_LIBRARY(slow_plugins);
