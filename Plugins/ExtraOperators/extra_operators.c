/*
 * extra-operators: trigger operators the In-App Messaging SDK lacks, named by string in
 * campaigns and plugins.yaml (no wire code), proving a new operator needs no host change:
 *
 *   STARTS_WITH  the event's string starts with the trigger's string
 *   IN_LIST      the event's value, as text, is one of the trigger's comma-separated items
 *                (items trimmed of spaces); strings, ints and bools
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static hh_status_t create(const hh_host_t *host, void **out_instance) {
    *out_instance = (void *)host; /* stateless: keep the host to report errors */
    return HH_OK;
}

static void destroy(void *instance) {
    (void)instance;
}

static hh_status_t type_error(void *instance, const char *message) {
    return hh_report((const hh_host_t *)instance, HH_ERR_TYPE_MISMATCH, "%s", message);
}

static hh_status_t starts_with(void *instance, const hh_value_t *event, const hh_value_t *trigger,
                               bool *out) {
    if (event->type != HH_VALUE_STRING || trigger->type != HH_VALUE_STRING) {
        return type_error(instance, "STARTS_WITH applies to strings only");
    }
    hh_string_t text = event->of.string, prefix = trigger->of.string;
    *out = prefix.length <= text.length &&
           (prefix.length == 0 || memcmp(text.data, prefix.data, prefix.length) == 0);
    return HH_OK;
}

static hh_status_t in_list(void *instance, const hh_value_t *event, const hh_value_t *trigger, bool *out) {
    if (trigger->type != HH_VALUE_STRING)
        return type_error(instance, "IN_LIST needs a string trigger value: items separated by commas");
    char buffer[64];
    hh_string_t needle;
    switch (event->type) {
    case HH_VALUE_STRING:
        needle = event->of.string;
        break;
    case HH_VALUE_INT64:
        snprintf(buffer, sizeof buffer, "%" PRId64, event->of.int64);
        needle = hh_string_from_cstr(buffer);
        break;
    case HH_VALUE_BOOL:
        needle = hh_string_from_cstr(event->of.boolean ? "true" : "false");
        break;
    default:
        return type_error(instance, "IN_LIST applies to strings, ints and bools");
    }
    const char *list = trigger->of.string.data ? trigger->of.string.data : "";
    size_t length = trigger->of.string.length, start = 0;
    *out = false;
    while (start <= length) {
        size_t end = start;
        while (end < length && list[end] != ',')
            end++;
        size_t a = start, b = end;
        while (a < b && list[a] == ' ')
            a++;
        while (b > a && list[b - 1] == ' ')
            b--;
        if (b - a == needle.length &&
            (needle.length == 0 || memcmp(list + a, needle.data, needle.length) == 0)) {
            *out = true;
            return HH_OK;
        }
        start = end + 1;
    }
    return HH_OK;
}

static const hh_trigger_operator_v1_t starts_with_api = {"STARTS_WITH", 0, starts_with};
static const hh_trigger_operator_v1_t in_list_api = {"IN_LIST", 0, in_list};

static const hh_plugin_descriptor_t descriptors[] = {
    HH_PLUGIN_DESCRIPTOR("starts-with", "STARTS_WITH", "The event's string starts with the trigger's string.",
                         "1.0.0", HH_KIND_TRIGGER_OPERATOR, &starts_with_api, create, destroy),
    HH_PLUGIN_DESCRIPTOR("in-list", "IN_LIST",
                         "The event's value is one of the trigger's comma-separated items.", "1.0.0",
                         HH_KIND_TRIGGER_OPERATOR, &in_list_api, create, destroy),
};

HH_PLUGIN_LIBRARY(descriptors);
