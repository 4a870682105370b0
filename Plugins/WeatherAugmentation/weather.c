/*
 * weather: an augmentation plugin, in C, that adds the temperature (Celsius and Fahrenheit) and a
 * conditions text for the event's location. It reads the coordinates the location augmentation
 * added (so it runs after it: that one answers process_synchronously = true) and asks an endpoint
 * that answers like Open-Meteo's forecast API:
 *
 *     GET <endpoint>?latitude=47.6097&longitude=-122.3422&current=temperature_2m,weather_code
 *     {"current": {"temperature_2m": 11.3, "weather_code": 3, ...}, ...}
 *
 * It reaches the network only through the host's HTTP service (hubhost.http.v1), so the host
 * enforces the instance's allow-list (`http_allow:`) and timeouts. Answers are cached per place
 * (coordinates rounded to 0.01 degree) for `cache_lifespan`.
 */
#define _POSIX_C_SOURCE 200809L
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SLOTS 64
#define TEXT_MAX    128

typedef struct cached_weather {
    bool used;
    long lat_key, lon_key; /* coordinates x 100, rounded */
    uint64_t fetched_ns;
    double celsius;
    int code;
} cached_weather_t;

typedef struct weather {
    const hh_host_t *host;
    const hh_host_http_v1_t *http;
    char endpoint[512];
    uint32_t timeout_ms;
    uint64_t cache_lifespan_ns;
    char latitude_field[TEXT_MAX], longitude_field[TEXT_MAX];
    char celsius_field[TEXT_MAX], fahrenheit_field[TEXT_MAX], conditions_field[TEXT_MAX];
    pthread_mutex_t lock; /* guards cache and next_slot: augment is [thread-safe] */
    cached_weather_t cache[CACHE_SLOTS];
    unsigned next_slot;
} weather_t;

static void config_text(const hh_host_t *host, const char *key, char *out, size_t size,
                        const char *fallback) {
    hh_value_t value;
    if (host->config_get(host, key, &value) == HH_OK && value.type == HH_VALUE_STRING &&
        value.of.string.length < size) {
        memcpy(out, value.of.string.data, value.of.string.length);
        out[value.of.string.length] = '\0';
    } else {
        snprintf(out, size, "%s", fallback);
    }
}

static double config_seconds(const hh_host_t *host, const char *key, double fallback) {
    hh_value_t value;
    if (host->config_get(host, key, &value) == HH_OK) {
        if (value.type == HH_VALUE_DOUBLE)
            return value.of.real;
        if (value.type == HH_VALUE_INT64)
            return (double)value.of.int64;
    }
    return fallback;
}

static hh_status_t weather_create(const hh_host_t *host, void **out_instance) {
    const hh_host_http_v1_t *http = host->get_extension(host, HH_HOST_EXT_HTTP);
    if (!http) {
        return hh_report(host, HH_ERR_UNSUPPORTED, "this host offers no HTTP service (%s)", HH_HOST_EXT_HTTP);
    }
    weather_t *self = calloc(1, sizeof *self);
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->host = host;
    self->http = http;
    config_text(host, "endpoint", self->endpoint, sizeof self->endpoint,
                "https://api.open-meteo.com/v1/forecast");
    if (strncmp(self->endpoint, "http://", 7) != 0 && strncmp(self->endpoint, "https://", 8) != 0) {
        free(self);
        return hh_report(host, HH_ERR_CONFIG, "'endpoint' must be an http:// or https:// URL");
    }
    double timeout = config_seconds(host, "timeout", 5);
    double lifespan = config_seconds(host, "cache_lifespan", 600);
    if (timeout <= 0 || lifespan < 0) {
        free(self);
        return hh_report(host, HH_ERR_CONFIG, "'timeout' must be positive and 'cache_lifespan' not negative");
    }
    self->timeout_ms = (uint32_t)(timeout * 1000);
    self->cache_lifespan_ns = (uint64_t)(lifespan * 1e9);
    config_text(host, "latitude_field", self->latitude_field, TEXT_MAX, "Latitude");
    config_text(host, "longitude_field", self->longitude_field, TEXT_MAX, "Longitude");
    config_text(host, "temperature_c_field", self->celsius_field, TEXT_MAX, "Temperature C");
    config_text(host, "temperature_f_field", self->fahrenheit_field, TEXT_MAX, "Temperature F");
    config_text(host, "conditions_field", self->conditions_field, TEXT_MAX, "Weather Conditions");
    pthread_mutex_init(&self->lock, NULL);
    *out_instance = self;
    return HH_OK;
}

static void weather_destroy(void *instance) {
    weather_t *self = instance;
    pthread_mutex_destroy(&self->lock);
    free(self);
}

/* WMO weather interpretation codes, as Open-Meteo documents them. */
static const char *conditions(int code) {
    switch (code) {
    case 0:
        return "Clear sky";
    case 1:
        return "Mainly clear";
    case 2:
        return "Partly cloudy";
    case 3:
        return "Overcast";
    case 45:
    case 48:
        return "Fog";
    case 51:
    case 53:
    case 55:
        return "Drizzle";
    case 56:
    case 57:
        return "Freezing drizzle";
    case 61:
    case 63:
    case 65:
        return "Rain";
    case 66:
    case 67:
        return "Freezing rain";
    case 71:
    case 73:
    case 75:
        return "Snow fall";
    case 77:
        return "Snow grains";
    case 80:
    case 81:
    case 82:
        return "Rain showers";
    case 85:
    case 86:
        return "Snow showers";
    case 95:
        return "Thunderstorm";
    case 96:
    case 99:
        return "Thunderstorm with hail";
    default:
        return "Unknown";
    }
}

static bool read_double(const hh_event_view_t *event, const char *field, double *out) {
    hh_value_t value;
    if (event->get_attribute(event, hh_string_from_cstr(field), &value) != HH_OK)
        return false;
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

/* Asks the endpoint; on HH_OK fills celsius and code. */
static hh_status_t fetch_weather(weather_t *self, double latitude, double longitude, double *celsius,
                                 int *code) {
    char url[768];
    snprintf(url, sizeof url, "%s%slatitude=%.4f&longitude=%.4f&current=temperature_2m,weather_code",
             self->endpoint, strchr(self->endpoint, '?') ? "&" : "?", latitude, longitude);
    hh_http_request_t request;
    memset(&request, 0, sizeof request);
    request.method = hh_string_from_cstr("GET");
    request.url = hh_string_from_cstr(url);
    request.timeout_ms = self->timeout_ms;
    hh_http_response_t response;
    memset(&response, 0, sizeof response);
    hh_status_t status = self->http->fetch(self->host, &request, &response);
    if (status != HH_OK) {
        /* No response to release after a failure. */
        const char *why = status == HH_ERR_UNSUPPORTED
                              ? "the weather endpoint's host is not in this instance's http_allow"
                          : status == HH_ERR_TIMEOUT ? "the weather endpoint did not answer in time"
                                                     : "the weather endpoint could not be reached";
        return hh_report(self->host, status, "%s", why);
    }
    hh_status_t result = HH_OK;
    char *text = malloc(response.body_length + 1);
    if (!text) {
        self->http->release(self->host, &response);
        return hh_report(self->host, HH_ERR_INTERNAL, "out of memory");
    }
    memcpy(text, response.body, response.body_length);
    text[response.body_length] = '\0';
    const char *current = strstr(text, "\"current\"");
    double code_value = 0;
    if (response.status_code != 200) {
        result = hh_report(self->host, HH_ERR_IO, "the weather endpoint answered HTTP %d",
                           (int)response.status_code);
    } else if (!current || !hh_json_number(current, "temperature_2m", celsius) ||
               !hh_json_number(current, "weather_code", &code_value)) {
        result = hh_report(self->host, HH_ERR_IO,
                           "the weather answer has no current.temperature_2m and current.weather_code");
    } else {
        *code = (int)code_value;
    }
    free(text);
    self->http->release(self->host, &response);
    return result;
}

static hh_status_t weather_augment(void *instance, const hh_event_view_t *event,
                                   const hh_event_editor_t *editor) {
    weather_t *self = instance;
    double latitude, longitude;
    if (!read_double(event, self->latitude_field, &latitude) ||
        !read_double(event, self->longitude_field, &longitude)) {
        return HH_OK; /* no location on this event: nothing to add */
    }
    long lat_key = (long)(latitude * 100 + (latitude < 0 ? -0.5 : 0.5));
    long lon_key = (long)(longitude * 100 + (longitude < 0 ? -0.5 : 0.5));
    uint64_t now = self->host->monotonic_ns(self->host);
    double celsius = 0;
    int code = 0;
    bool hit = false;
    pthread_mutex_lock(&self->lock);
    for (unsigned i = 0; i < CACHE_SLOTS; i++) {
        cached_weather_t *slot = &self->cache[i];
        if (slot->used && slot->lat_key == lat_key && slot->lon_key == lon_key &&
            now - slot->fetched_ns <= self->cache_lifespan_ns) {
            celsius = slot->celsius;
            code = slot->code;
            hit = true;
            break;
        }
    }
    pthread_mutex_unlock(&self->lock);
    if (!hit) {
        hh_status_t status = fetch_weather(self, latitude, longitude, &celsius, &code);
        if (status != HH_OK)
            return status;
        pthread_mutex_lock(&self->lock);
        cached_weather_t *slot = &self->cache[self->next_slot++ % CACHE_SLOTS];
        slot->used = true;
        slot->lat_key = lat_key;
        slot->lon_key = lon_key;
        slot->fetched_ns = now;
        slot->celsius = celsius;
        slot->code = code;
        pthread_mutex_unlock(&self->lock);
    }
    hh_value_t value;
    value.type = HH_VALUE_DOUBLE;
    value.of.real = celsius;
    hh_status_t status = editor->set_attribute(editor, hh_string_from_cstr(self->celsius_field), &value);
    value.of.real = celsius * 9.0 / 5.0 + 32.0;
    if (status == HH_OK)
        status = editor->set_attribute(editor, hh_string_from_cstr(self->fahrenheit_field), &value);
    value.type = HH_VALUE_STRING;
    value.of.string = hh_string_from_cstr(conditions(code));
    if (status == HH_OK)
        status = editor->set_attribute(editor, hh_string_from_cstr(self->conditions_field), &value);
    return status;
}

static bool weather_after_location(void *instance) {
    (void)instance;
    return false; /* nothing later depends on the weather */
}

static bool weather_ready(void *instance) {
    (void)instance;
    return true;
}

static const hh_augmentation_v1_t weather_api = {
    .process_synchronously = weather_after_location,
    .is_supplemental_data_ready = weather_ready,
    .augment = weather_augment,
};

HH_SINGLE_PLUGIN_LIBRARY(
    "weather", "Weather augmentation",
    "Adds temperature and conditions for the event's coordinates from an Open-Meteo-like endpoint.", "1.0.0",
    HH_KIND_AUGMENTATION, &weather_api, weather_create, weather_destroy);
