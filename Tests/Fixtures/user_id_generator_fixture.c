/*
 * A user_id_generator fixture for the validator and loader tests, misbehaving on demand:
 *   -DFIXTURE_DUPLICATE   always answers the same id
 *   -DFIXTURE_NO_SET      answers HH_OK without calling the sink
 *   -DFIXTURE_ABI_1_0     the library claims ABI 1.0.0, which had no user_id_generator kind
 * Without a define it is a well-behaved counter ("id-1", "id-2", ...).
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdatomic.h>
#include <stdio.h>

static atomic_ulong counter;

static hh_status_t fixture_create(const hh_host_t *host, void **out_instance) {
    (void)host;
    *out_instance = &counter;
    return HH_OK;
}

static void fixture_destroy(void *instance) {
    (void)instance;
}

static hh_status_t fixture_generate(void *instance, const hh_string_sink_t *id_sink) {
    (void)instance;
#if defined(FIXTURE_NO_SET)
    (void)id_sink;
    return HH_OK;
#else
    char text[32];
#if defined(FIXTURE_DUPLICATE)
    int length = snprintf(text, sizeof text, "same");
#else
    int length = snprintf(text, sizeof text, "id-%lu", atomic_fetch_add(&counter, 1) + 1);
#endif
    hh_string_t id = {text, (size_t)length};
    id_sink->set(id_sink->sink_data, id);
    return HH_OK;
#endif
}

static const hh_user_id_generator_v1_t fixture_api = {.generate = fixture_generate};

#if defined(FIXTURE_ABI_1_0)
static const hh_plugin_descriptor_t fixture_descriptors[1] = {
    HH_PLUGIN_DESCRIPTOR("fixture-ids", "Fixture ids", "test-only", "1.0.0", HH_KIND_USER_ID_GENERATOR,
                         &fixture_api, fixture_create, fixture_destroy)};
static const hh_plugin_descriptor_t *fixture_get_plugin(uint32_t index) {
    return index == 0 ? &fixture_descriptors[0] : NULL;
}
static const hh_library_t fixture_library = {{1, 0, 0}, NULL, NULL, 1, fixture_get_plugin};
HH_EXPORT const hh_library_t *hubhost_library_entry(void) {
    return &fixture_library;
}
#else
HH_SINGLE_PLUGIN_LIBRARY("fixture-ids", "Fixture ids", "test-only", "1.0.0", HH_KIND_USER_ID_GENERATOR,
                         &fixture_api, fixture_create, fixture_destroy);
#endif
