/*
 * noop: plugins that do nothing, as fast as possible. `hubhost bench abi` measures the cost of
 * one call through the ABI with them, and they are the smallest complete example of a library
 * exporting several plugins of different kinds.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stddef.h>

static hh_status_t noop_create(const hh_host_t *host, void **out_instance) {
    (void)host;
    *out_instance = NULL; /* stateless */
    return HH_OK;
}

static void noop_destroy(void *instance) {
    (void)instance;
}

/* Answers true for every pair of values. [thread-safe] */
static hh_status_t noop_compare(void *instance, const hh_value_t *event_value,
                                const hh_value_t *trigger_value, bool *out_result) {
    (void)instance;
    (void)event_value;
    (void)trigger_value;
    *out_result = true;
    return HH_OK;
}

static const hh_trigger_operator_v1_t noop_operator_api = {
    .operator_name = "NOOP",
    .wire_code = 0,
    .compare = noop_compare,
};

static bool noop_false(void *instance) {
    (void)instance;
    return false;
}

static bool noop_true(void *instance) {
    (void)instance;
    return true;
}

/* Leaves the event as it is. [thread-safe] */
static hh_status_t noop_augment(void *instance, const hh_event_view_t *event,
                                const hh_event_editor_t *editor) {
    (void)instance;
    (void)event;
    (void)editor;
    return HH_OK;
}

static const hh_augmentation_v1_t noop_augmentation_api = {
    .process_synchronously = noop_false,
    .is_supplemental_data_ready = noop_true,
    .augment = noop_augment,
};

static const hh_plugin_descriptor_t noop_descriptors[] = {
    {
        .id = "noop-operator",
        .name = "No-op operator",
        .description = "A trigger operator that answers true for any values.",
        .version = "1.0.0",
        .kind = HH_KIND_TRIGGER_OPERATOR,
        .kind_api = &noop_operator_api,
        .create = noop_create,
        .destroy = noop_destroy,
        .get_extension = NULL,
    },
    {
        .id = "noop-augmentation",
        .name = "No-op augmentation",
        .description = "An augmentation that leaves every event unchanged.",
        .version = "1.0.0",
        .kind = HH_KIND_AUGMENTATION,
        .kind_api = &noop_augmentation_api,
        .create = noop_create,
        .destroy = noop_destroy,
        .get_extension = NULL,
    },
};

HH_PLUGIN_LIBRARY(noop_descriptors);
