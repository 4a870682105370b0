/*
 * uuid-generator: a user_id_generator that makes random (version 4) UUIDs from the kernel's
 * random source (getrandom), the Engage SDK's EngageDefaultUUIDGenerator. The reference for
 * writing a user_id_generator plugin. Written in C.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

typedef struct uuid_generator {
    bool uppercase;
    char prefix[65]; /* copied at create: config memory is not needed afterwards */
    size_t prefix_length;
} uuid_generator_t;

static hh_status_t uuid_create(const hh_host_t *host, void **out_instance) {
    uuid_generator_t *self = calloc(1, sizeof *self);
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->uppercase = true;
    hh_value_t value;
    if (host->config_get(host, "uppercase", &value) == HH_OK && value.type == HH_VALUE_BOOL) {
        self->uppercase = value.of.boolean;
    }
    if (host->config_get(host, "prefix", &value) == HH_OK && value.type == HH_VALUE_STRING) {
        if (value.of.string.length > 64) {
            free(self);
            return hh_report(host, HH_ERR_CONFIG, "'prefix' is %zu bytes; at most 64 are allowed",
                             (size_t)value.of.string.length);
        }
        memcpy(self->prefix, value.of.string.data, value.of.string.length);
        self->prefix_length = value.of.string.length;
    }
    *out_instance = self;
    return HH_OK;
}

static void uuid_destroy(void *instance) {
    free(instance);
}

/* Thread-safe: the instance is immutable after create, getrandom is thread-safe. */
static hh_status_t uuid_generate(void *instance, const hh_string_sink_t *id_sink) {
    const uuid_generator_t *self = instance;
    if (!id_sink || !id_sink->set) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    unsigned char bytes[16];
    size_t have = 0;
    for (int attempt = 0; have < sizeof bytes && attempt < 100; attempt++) { /* bounded: EINTR retries */
        ssize_t n = getrandom(bytes + have, sizeof bytes - have, 0);
        if (n > 0) {
            have += (size_t)n;
        } else if (n < 0 && errno != EINTR) {
            break;
        }
    }
    if (have < sizeof bytes) {
        return HH_ERR_IO;
    }
    bytes[6] = (unsigned char)((bytes[6] & 0x0f) | 0x40); /* version 4 */
    bytes[8] = (unsigned char)((bytes[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    const char *digits = self->uppercase ? "0123456789ABCDEF" : "0123456789abcdef";
    char text[64 + 36 + 1];
    size_t length = self->prefix_length;
    memcpy(text, self->prefix, length);
    for (size_t i = 0; i < sizeof bytes; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            text[length++] = '-';
        }
        text[length++] = digits[bytes[i] >> 4];
        text[length++] = digits[bytes[i] & 0x0f];
    }
    hh_string_t id = {text, length};
    id_sink->set(id_sink->sink_data, id);
    return HH_OK;
}

static const hh_user_id_generator_v1_t uuid_api = {
    .generate = uuid_generate,
};

HH_SINGLE_PLUGIN_LIBRARY("uuid-generator", "UUID generator",
                         "Makes random version 4 UUIDs: mobile user ids and audit record keys.", "1.0.0",
                         HH_KIND_USER_ID_GENERATOR, &uuid_api, uuid_create, uuid_destroy);
