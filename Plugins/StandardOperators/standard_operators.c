/*
 * standard-operators: the eight campaign trigger operators of Rakuten In-App Messaging, one
 * library, eight trigger_operator plugins (wire codes 1..8), with the In-App Messaging SDK's type rules:
 *
 *   EQUALS, IS_NOT_EQUAL      any type, both values of the same type (int and double compare as
 *                             numbers); time in ms with a tolerance of 1000 ms
 *   GREATER_THAN, LESS_THAN   arithmetic types only (int, double, time; time with the tolerance)
 *   IS_BLANK, IS_NOT_BLANK    strings only: blank is empty or only white space; the trigger value
 *                             is not used
 *   MATCHES_REGEX,            strings only; the trigger value is the pattern. As the reference SDK
 *   DOES_NOT_MATCH_REGEX      (iOS, NSRegularExpression): ICU syntax and rules, searched anywhere in
 *                             the value (anchor with ^ and $ for the whole value), case-sensitive
 *                             unless the pattern says (?i); a pattern ICU refuses (an empty one,
 *                             unbalanced brackets...) matches nothing: MATCHES_REGEX false,
 *                             DOES_NOT_MATCH_REGEX true, with a warning in the log. Matching is
 *                             bounded (bounded_regex.h): a valid pattern the engine cannot run in
 *                             linear time (backreferences, lookaround...) answers HH_ERR_UNSUPPORTED,
 *                             one that blows the step budget HH_ERR_TIMEOUT.
 *
 * A type mismatch answers HH_ERR_TYPE_MISMATCH with a message; the campaign engine treats every
 * failure as false (for both regex operators) and logs the message.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include "bounded_regex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIME_TOLERANCE_MS 1000

typedef enum {
    OP_EQUALS = 1,
    OP_NOT_EQUAL,
    OP_GREATER,
    OP_LESS,
    OP_BLANK,
    OP_NOT_BLANK,
    OP_MATCHES,
    OP_NOT_MATCHES
} op_t;

typedef struct operators {
    const hh_host_t *host;
    size_t step_budget;
    size_t max_program;
} operators_t;

static const char *type_name(hh_value_type_t type) {
    switch (type) {
    case HH_VALUE_NULL:
        return "null";
    case HH_VALUE_STRING:
        return "string";
    case HH_VALUE_INT64:
        return "int";
    case HH_VALUE_DOUBLE:
        return "double";
    case HH_VALUE_BOOL:
        return "bool";
    case HH_VALUE_TIME_MS:
        return "time";
    default:
        return "unknown";
    }
}

static hh_status_t mismatch(const operators_t *self, const char *operator_name, const char *rule,
                            const hh_value_t *event, const hh_value_t *trigger) {
    return hh_report(self->host, HH_ERR_TYPE_MISMATCH, "%s %s (event value %s, trigger value %s)",
                     operator_name, rule, type_name(event->type), type_name(trigger->type));
}

static bool is_number(const hh_value_t *v) {
    return v->type == HH_VALUE_INT64 || v->type == HH_VALUE_DOUBLE;
}

static bool blank(hh_string_t s) {
    for (size_t i = 0; i < s.length; i++) {
        char c = s.data[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v')
            return false;
    }
    return true;
}

/* -1, 0, 1 comparing two values of comparable types; false when they are not comparable. */
static bool order(const hh_value_t *a, const hh_value_t *b, int *out) {
    if (a->type == HH_VALUE_TIME_MS && b->type == HH_VALUE_TIME_MS) {
        int64_t d = a->of.time_ms - b->of.time_ms;
        *out = d > TIME_TOLERANCE_MS ? 1 : d < -TIME_TOLERANCE_MS ? -1 : 0;
        return true;
    }
    if (a->type == HH_VALUE_INT64 && b->type == HH_VALUE_INT64) {
        *out = a->of.int64 > b->of.int64 ? 1 : a->of.int64 < b->of.int64 ? -1 : 0;
        return true;
    }
    if (is_number(a) && is_number(b)) {
        double x = a->type == HH_VALUE_INT64 ? (double)a->of.int64 : a->of.real;
        double y = b->type == HH_VALUE_INT64 ? (double)b->of.int64 : b->of.real;
        if (x != x || y != y)
            return false; /* NaN orders with nothing */
        *out = x > y ? 1 : x < y ? -1 : 0;
        return true;
    }
    return false;
}

static hh_status_t compare_with(op_t op, const char *name, void *instance, const hh_value_t *event,
                                const hh_value_t *trigger, bool *out) {
    const operators_t *self = instance;
    if (!event || !trigger || !out)
        return HH_ERR_INVALID_ARGUMENT;
    int ordering = 0;
    switch (op) {
    case OP_EQUALS:
    case OP_NOT_EQUAL: {
        bool equal;
        if (event->type == HH_VALUE_STRING && trigger->type == HH_VALUE_STRING) {
            equal = event->of.string.length == trigger->of.string.length &&
                    (event->of.string.length == 0 ||
                     memcmp(event->of.string.data, trigger->of.string.data, event->of.string.length) == 0);
        } else if (event->type == HH_VALUE_BOOL && trigger->type == HH_VALUE_BOOL) {
            equal = event->of.boolean == trigger->of.boolean;
        } else if (order(event, trigger, &ordering)) {
            equal = ordering == 0;
        } else {
            return mismatch(self, name, "needs two values of the same type", event, trigger);
        }
        *out = op == OP_EQUALS ? equal : !equal;
        return HH_OK;
    }
    case OP_GREATER:
    case OP_LESS:
        if (!order(event, trigger, &ordering) || event->type == HH_VALUE_BOOL) {
            return mismatch(self, name, "applies to arithmetic types only (int, double, time)", event,
                            trigger);
        }
        *out = op == OP_GREATER ? ordering > 0 : ordering < 0;
        return HH_OK;
    case OP_BLANK:
    case OP_NOT_BLANK:
        if (event->type != HH_VALUE_STRING)
            return mismatch(self, name, "applies to strings only", event, trigger);
        *out = op == OP_BLANK ? blank(event->of.string) : !blank(event->of.string);
        return HH_OK;
    case OP_MATCHES:
    case OP_NOT_MATCHES: {
        if (event->type != HH_VALUE_STRING || trigger->type != HH_VALUE_STRING) {
            return mismatch(self, name, "applies to strings only (the trigger value is the pattern)", event,
                            trigger);
        }
        char error[160];
        brx_error_t why = BRX_COMPILED;
        bounded_regex_t *re =
            brx_compile(trigger->of.string.data ? trigger->of.string.data : "", trigger->of.string.length,
                        self->max_program, &why, error, sizeof error);
        if (!re && why == BRX_INVALID) {
            /* As the reference SDK: a pattern the regex library refuses matches nothing, so
             * MATCHES_REGEX is false and DOES_NOT_MATCH_REGEX true. Say why in the log. */
            char message[240];
            int written = snprintf(message, sizeof message, "%s: invalid pattern, which matches nothing: %s",
                                   name, error);
            hh_string_t text = {message, written < 0                        ? 0
                                         : (size_t)written < sizeof message ? (size_t)written
                                                                            : sizeof message - 1};
            self->host->log(self->host, HH_SEVERITY_WARNING, HH_VERBOSITY_DEBUG, text);
            *out = op == OP_NOT_MATCHES;
            return HH_OK;
        }
        if (!re && why == BRX_UNSUPPORTED) {
            return hh_report(self->host, HH_ERR_UNSUPPORTED,
                             "%s: %s (a valid pattern the bounded engine cannot run); answering false", name,
                             error);
        }
        if (!re)
            return hh_report(self->host, HH_ERR_INTERNAL, "%s: %s", name, error);
        brx_result_t found = brx_search(re, event->of.string.data ? event->of.string.data : "",
                                        event->of.string.length, self->step_budget);
        brx_free(re);
        if (found == BRX_BUDGET_EXCEEDED) {
            return hh_report(self->host, HH_ERR_TIMEOUT,
                             "%s: matching took more than %zu steps; answering false", name,
                             self->step_budget);
        }
        *out = op == OP_MATCHES ? found == BRX_MATCH : found == BRX_NO_MATCH;
        return HH_OK;
    }
    }
    return HH_ERR_INTERNAL;
}

static hh_status_t operators_create(const hh_host_t *host, void **out_instance) {
    operators_t *self = calloc(1, sizeof *self);
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->host = host;
    self->step_budget = 1000000;
    self->max_program = 20000;
    hh_value_t value;
    if (host->config_get(host, "regex_step_budget", &value) == HH_OK && value.type == HH_VALUE_INT64) {
        if (value.of.int64 < 1000) {
            free(self);
            return hh_report(host, HH_ERR_CONFIG, "'regex_step_budget' must be at least 1000, not %lld",
                             (long long)value.of.int64);
        }
        self->step_budget = (size_t)value.of.int64;
    }
    *out_instance = self;
    return HH_OK;
}

static void operators_destroy(void *instance) {
    free(instance);
}

#define OPERATOR(fn, op, upper)                                                                              \
    static hh_status_t fn(void *instance, const hh_value_t *event, const hh_value_t *trigger, bool *out) {   \
        return compare_with(op, upper, instance, event, trigger, out);                                       \
    }                                                                                                        \
    static const hh_trigger_operator_v1_t fn##_api = {upper, op, fn};

OPERATOR(equals, OP_EQUALS, "EQUALS")
OPERATOR(not_equal, OP_NOT_EQUAL, "IS_NOT_EQUAL")
OPERATOR(greater, OP_GREATER, "GREATER_THAN")
OPERATOR(less, OP_LESS, "LESS_THAN")
OPERATOR(is_blank, OP_BLANK, "IS_BLANK")
OPERATOR(not_blank, OP_NOT_BLANK, "IS_NOT_BLANK")
OPERATOR(matches, OP_MATCHES, "MATCHES_REGEX")
OPERATOR(not_matches, OP_NOT_MATCHES, "DOES_NOT_MATCH_REGEX")

#define DESCRIPTOR(id_text, fn, text)                                                                        \
    HH_PLUGIN_DESCRIPTOR(id_text, text, text, "1.0.0", HH_KIND_TRIGGER_OPERATOR, &fn##_api,                  \
                         operators_create, operators_destroy)

static const hh_plugin_descriptor_t descriptors[] = {
    DESCRIPTOR("equals", equals, "EQUALS: the values are equal (time within 1000 ms)"),
    DESCRIPTOR("is-not-equal", not_equal, "IS_NOT_EQUAL: the values differ (time by more than 1000 ms)"),
    DESCRIPTOR("greater-than", greater, "GREATER_THAN: the event value is greater (arithmetic types)"),
    DESCRIPTOR("less-than", less, "LESS_THAN: the event value is less (arithmetic types)"),
    DESCRIPTOR("is-blank", is_blank, "IS_BLANK: the string is empty or white space"),
    DESCRIPTOR("is-not-blank", not_blank, "IS_NOT_BLANK: the string has a visible character"),
    DESCRIPTOR("matches-regex", matches, "MATCHES_REGEX: the string matches the pattern (bounded)"),
    DESCRIPTOR("does-not-match-regex", not_matches,
               "DOES_NOT_MATCH_REGEX: the string does not match the pattern (bounded)"),
};

HH_PLUGIN_LIBRARY(descriptors);
