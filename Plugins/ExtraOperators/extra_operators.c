/*
 * extra-operators: trigger operators the In-App Messaging seed lacks, named by string in
 * campaigns and plugins.yaml (no wire code), proving a new operator needs no host change:
 *
 *   STARTS_WITH  the event's string starts with the trigger's string
 *   IN_LIST      the event's value, as text, is one of the trigger's comma-separated items
 *                (items trimmed of spaces); strings, ints and bools
 */
#include <hubhost/hubhost.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static hh_status_t create(const hh_host_t *host, void **out_instance) {
    *out_instance = (void *)host; /* stateless: keep the host to report errors */
    return HH_OK;
}

static void destroy(void *instance) { (void)instance; }

static hh_status_t type_error(void *instance, const char *message) {
    const hh_host_t *host = instance;
    host->report_error(host, HH_ERR_TYPE_MISMATCH, hh_string_from_cstr(message));
    return HH_ERR_TYPE_MISMATCH;
}

static hh_status_t starts_with(void *instance, const hh_value_t *event, const hh_value_t *trigger, bool *out) {
    if (event->type != HH_VALUE_STRING || trigger->type != HH_VALUE_STRING) {
        return type_error(instance, "STARTS_WITH applies to strings only");
    }
    hh_string_t text = event->of.string, prefix = trigger->of.string;
    *out = prefix.length <= text.length && (prefix.length == 0 || memcmp(text.data, prefix.data, prefix.length) == 0);
    return HH_OK;
}

static hh_status_t in_list(void *instance, const hh_value_t *event, const hh_value_t *trigger, bool *out) {
    if (trigger->type != HH_VALUE_STRING) return type_error(instance, "IN_LIST needs a string trigger value: items separated by commas");
    char buffer[64];
    hh_string_t needle;
    switch (event->type) {
    case HH_VALUE_STRING: needle = event->of.string; break;
    case HH_VALUE_INT64:
        snprintf(buffer, sizeof buffer, "%" PRId64, event->of.int64);
        needle = hh_string_from_cstr(buffer);
        break;
    case HH_VALUE_BOOL: needle = hh_string_from_cstr(event->of.boolean ? "true" : "false"); break;
    default: return type_error(instance, "IN_LIST applies to strings, ints and bools");
    }
    const char *list = trigger->of.string.data ? trigger->of.string.data : "";
    size_t length = trigger->of.string.length, start = 0;
    *out = false;
    while (start <= length) {
        size_t end = start;
        while (end < length && list[end] != ',') end++;
        size_t a = start, b = end;
        while (a < b && list[a] == ' ') a++;
        while (b > a && list[b - 1] == ' ') b--;
        if (b - a == needle.length && (needle.length == 0 || memcmp(list + a, needle.data, needle.length) == 0)) {
            *out = true;
            return HH_OK;
        }
        start = end + 1;
    }
    return HH_OK;
}

static const hh_trigger_operator_v1_t starts_with_api = { "STARTS_WITH", 0, starts_with };
static const hh_trigger_operator_v1_t in_list_api = { "IN_LIST", 0, in_list };

static const hh_plugin_descriptor_t descriptors[] = {
    { .id = "starts-with", .name = "STARTS_WITH", .description = "The event's string starts with the trigger's string.",
      .version = "1.0.0", .kind = HH_KIND_TRIGGER_OPERATOR, .kind_api = &starts_with_api, .create = create, .destroy = destroy,
      .get_extension = NULL },
    { .id = "in-list", .name = "IN_LIST", .description = "The event's value is one of the trigger's comma-separated items.",
      .version = "1.0.0", .kind = HH_KIND_TRIGGER_OPERATOR, .kind_api = &in_list_api, .create = create, .destroy = destroy,
      .get_extension = NULL },
};

static const hh_plugin_descriptor_t *get_plugin(uint32_t index) { return index < 2 ? &descriptors[index] : NULL; }

static const hh_library_t library = {
    .abi_version = HH_ABI_VERSION_INIT, .init = NULL, .deinit = NULL, .plugin_count = 2, .get_plugin = get_plugin,
};

HH_EXPORT const hh_library_t *hubhost_library_entry(void) { return &library; }
