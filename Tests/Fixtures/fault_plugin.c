/*
 * A test-only plugin whose faults are chosen at compile time, so each loader failure can be
 * produced by a real shared object:
 *
 *   -DFAULT_ABI_MAJOR=N     claim ABI major version N
 *   -DFAULT_CREATE_FAILS    create() reports an error and fails
 *   -DFAULT_NO_ENTRY        export no hubhost_library_entry symbol
 *   -DFAULT_PLUGIN_ID=\"x\" export the plugin under another id (manifest mismatch)
 *
 * Without flags it is a well-behaved trigger operator "fault-fixture" that answers whether two
 * int64 values are equal.
 */
#include <hubhost/hubhost.h>

#ifndef FAULT_ABI_MAJOR
#define FAULT_ABI_MAJOR HH_ABI_VERSION_MAJOR
#endif

#ifndef FAULT_PLUGIN_ID
#define FAULT_PLUGIN_ID "fault-fixture"
#endif

static hh_status_t fixture_create(const hh_host_t *host, void **out_instance) {
#ifdef FAULT_CREATE_FAILS
    (void)out_instance;
    host->report_error(host, HH_ERR_CONFIG, hh_string_from_cstr("the fixture was built to fail in create"));
    return HH_ERR_CONFIG;
#else
    host->log(host, HH_SEVERITY_INFO, HH_VERBOSITY_DEBUG, hh_string_from_cstr("fixture created"));
    *out_instance = NULL;
    return HH_OK;
#endif
}

static void fixture_destroy(void *instance) {
    (void)instance;
}

static hh_status_t fixture_compare(void *instance, const hh_value_t *event_value,
                                   const hh_value_t *trigger_value, bool *out_result) {
    (void)instance;
    if (event_value->type != HH_VALUE_INT64 || trigger_value->type != HH_VALUE_INT64) {
        return HH_ERR_TYPE_MISMATCH;
    }
    *out_result = event_value->of.int64 == trigger_value->of.int64;
    return HH_OK;
}

static const hh_trigger_operator_v1_t fixture_api = {
    .operator_name = "FIXTURE_EQUALS",
    .wire_code = 0,
    .compare = fixture_compare,
};

static const hh_plugin_descriptor_t fixture_descriptor = {
    .id = FAULT_PLUGIN_ID,
    .name = "Fault fixture",
    .description = "A test-only plugin with faults chosen at compile time.",
    .version = "1.0.0",
    .kind = HH_KIND_TRIGGER_OPERATOR,
    .kind_api = &fixture_api,
    .create = fixture_create,
    .destroy = fixture_destroy,
    .get_extension = NULL,
};

static const hh_plugin_descriptor_t *fixture_get_plugin(uint32_t index) {
    return index == 0 ? &fixture_descriptor : NULL;
}

static const hh_library_t fixture_library = {
    .abi_version = {FAULT_ABI_MAJOR, 0, 0},
    .init = NULL,
    .deinit = NULL,
    .plugin_count = 1,
    .get_plugin = fixture_get_plugin,
};

#ifdef FAULT_NO_ENTRY
HH_EXPORT const hh_library_t *not_the_entry_point(void) {
    return &fixture_library;
}
#else
HH_EXPORT const hh_library_t *hubhost_library_entry(void) {
    return &fixture_library;
}
#endif
